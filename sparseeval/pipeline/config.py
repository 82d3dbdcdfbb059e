"""Where settings come from, in one documented order, whatever the working directory.

    defaults < settings file < SPARSEEVAL_* environment < explicit overrides (flow, CLI)

The settings file is the first of: `SPARSEEVAL_CONFIG` (a TOML path; it must exist), the
home's own `{SPARSEEVAL_HOME}/sparseeval.toml`, then `./sparseeval.toml` (a first run in a
folder). A deployment sets SPARSEEVAL_HOME and SPARSEEVAL_CONFIG as job variables, so
the worker's working directory never decides. `explain` says where each value came from
(`sparseeval config`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

CONFIG_ENV = "SPARSEEVAL_CONFIG"
HOME_ENV = "SPARSEEVAL_HOME"
FILE_NAME = "sparseeval.toml"
DEFAULT_HOME = Path(".sparseeval")


def config_path(
    env: Mapping[str, str] | None = None, home: str | Path | None = None
) -> Path | None:
    """The settings file this run reads, or None (see the module docstring).

    home: an explicit home (a flow parameter, `--home`); else SPARSEEVAL_HOME.
    """
    env = os.environ if env is None else env
    if named := env.get(CONFIG_ENV, "").strip():
        path = Path(named).expanduser()
        if not path.is_file():
            raise ValueError(f"{CONFIG_ENV} names {path}, which is not a file")
        return path
    home = Path(home or env.get(HOME_ENV, "").strip() or DEFAULT_HOME)
    for candidate in (home / FILE_NAME, Path(FILE_NAME)):
        if candidate.is_file():
            return candidate
    return None


def origins(
    cls: type, path: Path | None, env: Mapping[str, str], overrides: Mapping[str, Any],
    file_values: Mapping[str, Any],
) -> dict[str, str]:  # fmt: skip
    """{setting: where its value came from}: default, the file, an env var, or an override."""
    out = {}
    for f in fields(cls):
        key = "SPARSEEVAL_" + f.name.upper()
        if overrides.get(f.name) is not None:
            out[f.name] = "override"
        elif env.get(key, "").strip():
            out[f.name] = f"env {key}"
        elif f.name in file_values:
            out[f.name] = f"file {path}"
        else:
            out[f.name] = "default"
    return out


def explain(settings, origin: Mapping[str, str]) -> list[tuple[str, Any, str]]:
    """(setting, effective value, origin) rows, in the settings' own order."""
    values = settings.to_dict()
    return [(name, values[name], origin.get(name, "default")) for name in values]
