"""Where settings come from, in one documented order, whatever the working directory.

    defaults < settings file < SPARSEEVAL_* environment < explicit overrides (flow, CLI)

The settings file is the first of: `SPARSEEVAL_CONFIG` (a TOML path; it must exist), the
home's own `{SPARSEEVAL_HOME}/sparseeval.toml`, then `./sparseeval.toml` (a first run in a
folder). A deployment sets SPARSEEVAL_HOME and SPARSEEVAL_CONFIG as job variables, so
the worker's working directory never decides. `explain` says where each value came from
(`sparseeval config`).

Each setting belongs to one section. It may be given flat or in its section, never both:

    file      n_anchors = 50                or  [selection] n_anchors = 50
    env       SPARSEEVAL_N_ANCHORS=50       or  SPARSEEVAL_SELECTION__N_ANCHORS=50
    override  n_anchors=50 (--set)          or  selection.n_anchors=50

An unknown setting, one in the wrong section or one given twice is a `SettingsError`
naming it. (Other `SPARSEEVAL_*` variables without `__`, e.g. SPARSEEVAL_CONFIG, are not
settings and are left alone, unless the name is a near miss of a setting's, e.g.
SPARSEEVAL_N_ANCHOR: that is an error naming the closest setting.)
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparseeval.consume.errors import SettingsError

CONFIG_ENV = "SPARSEEVAL_CONFIG"
HOME_ENV = "SPARSEEVAL_HOME"
ENV_PREFIX = "SPARSEEVAL_"
ENV_SECTION_SEP = "__"  # SPARSEEVAL_{SECTION}__{NAME}
FILE_NAME = "sparseeval.toml"
DEFAULT_HOME = Path(".sparseeval")

# (value, where it came from), per setting name
Layer = dict[str, tuple[Any, str]]


def env_home(env: Mapping[str, str]) -> str:
    """The home the environment names (SPARSEEVAL_HOME or SPARSEEVAL_PATHS__HOME), or ''."""
    return env.get(HOME_ENV, "").strip() or env.get("SPARSEEVAL_PATHS__HOME", "").strip()


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
            raise SettingsError(f"{CONFIG_ENV} names {path}, which is not a file")
        return path
    home = Path(home or env_home(env) or DEFAULT_HOME)
    for candidate in (home / FILE_NAME, Path(FILE_NAME)):
        if candidate.is_file():
            return candidate
        if candidate.exists():  # a folder (or a pipe) where the settings file goes
            raise SettingsError(f"{candidate} is not a file: the settings file must be one")
    return None


def layers(
    section_of: Mapping[str, str], file: Path | None, table: Mapping[str, Any],
    env: Mapping[str, str], overrides: Mapping[str, Any],
) -> Layer:  # fmt: skip
    """Every given setting with its value and origin: the file, then env, then overrides."""
    out = file_layer(section_of, table, file)
    out.update(env_layer(section_of, env))
    out.update(override_layer(section_of, overrides))
    return out


def file_layer(section_of: Mapping[str, str], table: Mapping[str, Any], path: Path | None) -> Layer:
    """A settings file's values: flat keys and `[section]` tables."""
    out: Layer = {}
    where = f"{path}: "
    for key, value in table.items():
        section = key if isinstance(value, dict) else None  # no setting takes a table
        if section is not None:
            _check_section(section_of, section, where)
        for sub, v in value.items() if section else [(key, value)]:
            name = setting_name(section_of, sub, section, where)
            _put(out, name, v, f"file {path}", f"{where}{name} is set both flat and in its section")
    return out


def env_layer(section_of: Mapping[str, str], env: Mapping[str, str]) -> Layer:
    """`SPARSEEVAL_{NAME}` and `SPARSEEVAL_{SECTION}__{NAME}` values (an empty one is unset)."""
    out: Layer = {}
    for key in sorted(env):
        if not key.startswith(ENV_PREFIX) or not env[key].strip():
            continue
        rest = key[len(ENV_PREFIX):].lower()  # fmt: skip
        section, sep, name = rest.partition(ENV_SECTION_SEP)
        if sep:
            _check_section(section_of, section, f"{key}: ")
            name = setting_name(section_of, name, section, f"{key}: ")
        elif rest in section_of:
            name = rest
        else:
            _mistyped(section_of, key, rest)
            continue  # SPARSEEVAL_CONFIG, SPARSEEVAL_CRON, ...: not a setting
        other = out.get(name, (None, ""))[1].removeprefix("env ")
        _put(out, name, env[key], f"env {key}", f"{other} and {key} both set {name}")
    return out


# `SPARSEEVAL_*` variables that are not settings (read elsewhere): never taken for a typo
NOT_SETTINGS = frozenset({"config", "cron", "light_python", "faults_tag", "console_one_line"})
# how close a variable's name must be to a setting's to be taken for a mistyped one
TYPO_CUTOFF = 0.85


def _mistyped(section_of: Mapping[str, str], key: str, rest: str) -> None:
    """A SettingsError when `SPARSEEVAL_{rest}` reads as a mistyped setting (`N_ANCHOR`):
    a variable that sets nothing must not pass for one that does."""
    if rest in NOT_SETTINGS:
        return
    close = difflib.get_close_matches(rest, list(section_of), n=1, cutoff=TYPO_CUTOFF)
    if close:
        raise SettingsError(
            f"{key}: unknown setting {rest!r} (did you mean {ENV_PREFIX}{close[0].upper()}?)"
        )


def override_layer(section_of: Mapping[str, str], overrides: Mapping[str, Any]) -> Layer:
    """Explicit values (flow parameters, `--set`): `name` or `section.name`; None is unset."""
    out: Layer = {}
    for key, value in overrides.items():
        if value is None:
            continue
        section, sep, name = key.strip().rpartition(".")
        if sep:
            _check_section(section_of, section, "")
        name = setting_name(section_of, name, section or None, "")
        _put(out, name, value, "override", f"{name} is given twice")
    return out


def setting_name(section_of: Mapping[str, str], key: str, section: str | None, where: str) -> str:
    """`key` when it is a setting (of `section`, when given), else a SettingsError naming it."""
    if key not in section_of:
        inside = f" in [{section}]" if section else ""
        close = difflib.get_close_matches(key, list(section_of), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise SettingsError(f"{where}unknown setting {key!r}{inside}{hint}")
    if section is not None and section_of[key] != section:
        raise SettingsError(f"{where}{key} belongs in [{section_of[key]}], not [{section}]")
    return key


def _check_section(section_of: Mapping[str, str], section: str, where: str) -> None:
    sections = list(dict.fromkeys(section_of.values()))
    if section not in sections:
        raise SettingsError(
            f"{where}unknown settings section [{section}] (sections: {', '.join(sections)})"
        )


def _put(out: Layer, name: str, value: Any, origin: str, twice: str) -> None:
    if name in out:
        raise SettingsError(f"{twice}: keep one")
    out[name] = (value, origin)


def explain(settings, origin: Mapping[str, str]) -> list[tuple[str, Any, str]]:
    """(setting, effective value, origin) rows, in the settings' own order."""
    values = settings.to_dict()
    return [(name, values[name], origin.get(name, "default")) for name in values]


__all__ = [
    "CONFIG_ENV",
    "DEFAULT_HOME",
    "ENV_PREFIX",
    "ENV_SECTION_SEP",
    "FILE_NAME",
    "HOME_ENV",
    "NOT_SETTINGS",
    "TYPO_CUTOFF",
    "Layer",
    "SettingsError",
    "config_path",
    "env_home",
    "env_layer",
    "explain",
    "file_layer",
    "layers",
    "override_layer",
    "setting_name",
]
