"""Reading settings values: the TOML file, strings from the environment, type checks.

What `pipeline.settings` uses to turn a file, env vars or CLI overrides into typed fields;
each failure is a `SettingsError` naming the setting (or the file and line).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from sparseeval.pipeline.config import SettingsError


def read_toml(path: Path) -> dict[str, Any]:
    """A settings file's table; SettingsError naming the file (and line) when it is not UTF-8
    text or not valid TOML (a UTF-8 BOM at the start is dropped)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SettingsError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line});"
            " save the file as UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"^(.*?)\s*\(at line (\d+), column (\d+)\)\s*$", str(exc))
        if found:
            what, line, col = found.groups()
            raise SettingsError(
                f"{path}: line {line}, column {col}: not valid TOML ({what})"
            ) from None
        raise SettingsError(f"{path}: not valid TOML ({exc})") from None


def not_finite(value: Any) -> bool:
    """A float setting (or one in a list) that is inf or NaN: no run can use it."""
    values = value if isinstance(value, tuple | list) else (value,)
    return any(isinstance(v, float) and not math.isfinite(v) for v in values)


# The most a setting may be: beyond these a night never ends (a billion epochs) or a host
# drowns (a hundred thousand workers). Generous for any real run; `Settings.check` refuses more.
MAXIMA: dict[str, int | float] = {
    "epochs": 100_000, "patience": 100_000, "ensemble": 100, "refine_steps": 10_000,
    "swap_candidates": 1_000, "n_anchors": 100_000, "workers": 256, "hub_max_repos": 100_000,
    "lease_wait_seconds": 86_400.0, "min_new_models": 1_000_000, "drift_window": 1_000_000,
    "drift_paired_models": 1_000_000, "drift_alert_nights": 366, "seed": 2**32 - 1,
}  # fmt: skip


def too_big(values: dict[str, Any]) -> list[str]:
    """`NAME must be at most MAX, got VALUE` for each setting above its maximum (`MAXIMA`)."""
    out = []
    for name, most in MAXIMA.items():
        value = values.get(name)
        given = value if isinstance(value, tuple | list) else (value,)
        if any(isinstance(v, int | float) and v > most for v in given):
            out.append(f"{name} must be at most {most:,}, got {shown(value)}")
    return out


_BOOLS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}  # fmt: skip
# (what a setting of this annotation must be, in words; whether a value is one)
_KINDS: dict[str, tuple[str, Any]] = {
    "Path": ("a path", lambda v: isinstance(v, str | Path)),
    "Path | None": ("a path", lambda v: v is None or isinstance(v, str | Path)),
    "str": ("text", lambda v: isinstance(v, str)),
    "str | None": ("text", lambda v: v is None or isinstance(v, str)),
    "bool": ("true or false", lambda v: isinstance(v, bool)),
    "bool | str": ('true, false or "auto"', lambda v: isinstance(v, bool) or v == "auto"),
    "int": ("a whole number", lambda v: _whole(v)),
    "float": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "tuple[str, ...]": ("a list of text", lambda v: _list_of(v, str)),
    "int | tuple[int, ...]": ("a whole number or a list of them",
                              lambda v: _whole(v) or _list_of(v, int)),
}  # fmt: skip


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list_of(value: Any, kind: type) -> bool:
    ok = _whole if kind is int else (lambda v: isinstance(v, kind))
    return isinstance(value, list | tuple) and all(ok(v) for v in value)


def type_problem(name: str, kind: str, value: Any) -> str | None:
    """`name must be KIND, got VALUE` when `value` is not of the annotation `kind`."""
    what, ok = _KINDS[kind]
    return None if ok(value) else f"{name} must be {what}, got {shown(value)}"


def shown(value: Any) -> str:
    """A value as the settings file would spell it (`true`, not `True`)."""
    return json.dumps(value, default=str) if isinstance(value, bool | None) else repr(value)


def converted(name: str, kind: str, value: Any) -> Any:
    """A string from the environment or the CLI as a value of the annotation `kind`."""
    if "tuple" in kind:
        return _as_tuple(name, value, int if "int" in kind else str)
    if not isinstance(value, str) or "Path" in kind or kind in ("str", "str | None"):
        return value
    text = value.strip()
    if kind == "bool | str" and text.lower() == "auto":
        return "auto"
    if kind.startswith("bool"):
        if text.lower() not in _BOOLS:
            raise SettingsError(
                f"{name} must be {_KINDS[kind][0]} (or 1/0, yes/no, on/off), got {value!r}"
            )
        return _BOOLS[text.lower()]
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        raise SettingsError(f"{name} must be {_KINDS[kind][0]}, got {value!r}") from None


def _as_tuple(name: str, value: Any, kind: type) -> Any:
    """A list setting from a list, a JSON list or a `;`-separated (for numbers also `,`) string.

    A single number stays a number (`n_anchors = 100`).
    """
    what = _KINDS[f"{'int | ' if kind is int else ''}tuple[{kind.__name__}, ...]"][0]
    if isinstance(value, str):
        text, given = value.strip(), value
        try:
            if text.startswith("["):
                value = json.loads(text)
            else:
                seps = ";," if kind is int else ";"
                value = [p.strip() for p in re.split(f"[{seps}]", text) if p.strip()]
                if kind is int:
                    value = [int(p) for p in value]
                    return value[0] if len(value) == 1 else tuple(value)
        except ValueError:
            raise SettingsError(f"{name} must be {what}, got {given!r}") from None
    if isinstance(value, list):
        return tuple(value)
    return value  # a number, a tuple, or a wrong type: `Settings` names it


__all__ = [
    "MAXIMA",
    "converted",
    "not_finite",
    "read_toml",
    "shown",
    "too_big",
    "type_problem",
]
