"""One typed settings object: paper defaults < `sparseeval.toml` < `SPARSEEVAL_*` env vars."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sparseeval.method.registry import PREDICTOR_CHOICES
from sparseeval.pipeline import config

ENV_PREFIX = "SPARSEEVAL_"
TARGETS = ("auto", "reported", "items")  # store.build.TARGETS
FIND_CONFIG = "<find the settings file>"  # Settings.load: see pipeline.config
# The sections of the settings, each field in one (its `section` metadata).
SECTIONS = ("paths", "sources", "selection", "predictor", "splits", "matrix", "drift", "runner")


def _in(section: str, default: Any) -> Any:
    """A settings field of `section`, with its default."""
    assert section in SECTIONS, section
    return field(default=default, metadata={"section": section})


_PATHS = {"section": "paths"}


@dataclass(frozen=True)
class Settings:
    """Every knob of the pipeline, with the paper's defaults where the paper has one."""

    # where state lives
    home: Path = field(default=Path(".sparseeval"), metadata=_PATHS)
    store_path: Path | None = field(default=None, metadata=_PATHS)
    artifacts_dir: Path | None = field(default=None, metadata=_PATHS)
    published_dir: Path | None = field(default=None, metadata=_PATHS)
    reports_dir: Path | None = field(default=None, metadata=_PATHS)
    # what the nightly job pulls when no sources are passed (specs: pipeline.sources)
    sources: tuple[str, ...] = _in("sources", ())
    # new Hub details repos read per run; the rest wait for the next
    hub_max_repos: int = _in("sources", 200)
    # mirror each published version to this Hub dataset repo
    hub_repo: str | None = _in("sources", None)
    # anchor selection
    # one budget, or several (each published on its own)
    n_anchors: int | tuple[int, ...] = _in("selection", 100)
    init: str = _in("selection", "adaptive")
    # at most; refinement stops at the first rejected swap
    refine_steps: int = _in("selection", 40)
    acceptance: str = _in("selection", "validated")
    swap_candidates: int = _in("selection", 3)
    proxy: str = _in("selection", "ridge")
    judge: str = _in("selection", "loo")
    # predictor
    predictor: str = _in("predictor", "auto")
    refit: bool = _in("predictor", True)
    ensemble: int = _in("predictor", 3)
    lr: float = _in("predictor", 3e-3)
    epochs: int = _in("predictor", 2000)
    patience: int = _in("predictor", 50)
    weight_decay: float = _in("predictor", 0.0)
    dropout: float = _in("predictor", 0.1)
    # splits
    n_test: float = _in("splits", 200)
    n_valid: float = _in("splits", 200)
    # taken from training models; only calibrates the intervals
    n_calib: float = _in("splits", 200)
    # "split": intervals from the n_calib held-out models; "cross": from 5 cross-fits of the
    # whole procedure over every training and validation model (5 extra fits; no models set
    # aside; single-run coverage closer to nominal)
    calibration: str = _in("splits", "split")
    stable_split: bool = _in("splits", True)
    seed: int = _in("splits", 0)
    # matrices
    max_missing_model_frac: float = _in("matrix", 0.0)
    # what a set estimates: "reported" (the score the source reports, e.g. the leaderboard's),
    # "items" (the mean over the stored items), "auto" (reported when at most 5% of the
    # models lack one, and those are left out: `store.build.AUTO_MAX_UNSCORED`)
    target: str = _in("matrix", "auto")
    # drift and publishing
    drift_mae_points: float = _in("drift", 3.0)
    drift_mae_ratio: float = _in("drift", 1.5)
    drift_out_of_range_frac: float = _in("drift", 0.2)
    min_new_models: int = _in("drift", 20)
    # drift is judged on a window of the newest arrivals: the thresholds above on the newest
    # `drift_window` new models, and a paired test (live set vs the night's candidate) on the
    # newest `drift_paired_models` held-out models, whenever they arrived (0: no paired test)
    drift_window: int = _in("drift", 150)
    drift_paired_models: int = _in("drift", 30)
    interval_level: float = _in("drift", 0.9)
    # the quality gate: "paired" refuses only a candidate worse beyond noise (`gate.py`),
    # "strict" any candidate with a higher MAE on the held-out (or fresh held-out) models
    gate: str = _in("drift", "paired")
    # checks in a row in drift after which `sparseeval.drift.persistent` is emitted
    drift_alert_nights: int = _in("drift", 3)
    # also publish the suite (every benchmark read jointly, `published/suite`)
    suite: bool = _in("drift", True)
    # orchestration
    task_runner: str = _in("runner", "thread")
    dask_address: str | None = _in("runner", None)
    lease_wait_seconds: float = _in("runner", 300.0)  # a second run on the home waits, then refuses
    workers: int = _in("runner", 2)  # benchmarks fitted at once: threads, or local Dask workers

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", Path(self.home))
        for name, sub in (
            ("store_path", "store.duckdb"),
            ("artifacts_dir", "artifacts"),
            ("published_dir", "published"),
            ("reports_dir", "reports"),
        ):
            value = getattr(self, name)
            object.__setattr__(self, name, Path(value) if value else self.home / sub)
        self.check()

    def check(self) -> None:
        """Refuse settings no run could use, in one line naming the setting (before any work)."""
        problems = [f"{f.name} must be a finite number, got {getattr(self, f.name)!r}"
                    for f in fields(self) if _not_finite(getattr(self, f.name))]  # fmt: skip
        problems += [f"{name} must be {rule}, got {getattr(self, name)!r}"
                     for name, rule, ok in self._rules() if not ok]  # fmt: skip
        if problems:
            raise ValueError("; ".join(problems))

    def _rules(self) -> list[tuple[str, str, bool]]:
        return [
            ("n_anchors", "at least 1 (or a list of such budgets)", min(self.budgets) >= 1),
            ("n_test", "above 0", self.n_test > 0),
            ("n_valid", "above 0", self.n_valid > 0),
            ("n_calib", "0 or more", self.n_calib >= 0),
            ("refine_steps", "0 or more", self.refine_steps >= 0),
            ("swap_candidates", "at least 1", self.swap_candidates >= 1),
            ("ensemble", "at least 1", self.ensemble >= 1),
            ("epochs", "at least 1", self.epochs >= 1),
            ("patience", "at least 1", self.patience >= 1),
            ("lr", "above 0", self.lr > 0),
            ("dropout", "in [0, 1)", 0 <= self.dropout < 1),
            ("weight_decay", "0 or more", self.weight_decay >= 0),
            ("interval_level", "in (0, 1), e.g. 0.9", 0 < self.interval_level < 1),
            ("max_missing_model_frac", "in [0, 1]", 0 <= self.max_missing_model_frac <= 1),
            ("target", "one of auto, reported, items", self.target in TARGETS),
            ("min_new_models", "at least 1", self.min_new_models >= 1),
            ("drift_window", "at least 1", self.drift_window >= 1),
            ("drift_paired_models", "0 or at least 3",
             self.drift_paired_models == 0 or self.drift_paired_models >= 3),
            ("gate", "'paired' or 'strict'", self.gate in {"paired", "strict"}),
            ("drift_alert_nights", "at least 1", self.drift_alert_nights >= 1),
            ("hub_max_repos", "at least 1", self.hub_max_repos >= 1),
            ("workers", "at least 1", self.workers >= 1),
            ("lease_wait_seconds", "0 or more", self.lease_wait_seconds >= 0),
            ("task_runner", "'thread' or 'dask'", self.task_runner in {"thread", "dask"}),
            ("judge", "'loo' or 'validation'", self.judge in {"loo", "validation"}),
            ("calibration", "'split' or 'cross'", self.calibration in {"split", "cross"}),
            ("predictor", "one of " + ", ".join(PREDICTOR_CHOICES),
             self.predictor in PREDICTOR_CHOICES),
        ]  # fmt: skip

    @classmethod
    def load(
        cls,
        path: str | Path | None = FIND_CONFIG,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Defaults, then the settings file, then environment, then `overrides`.

        path: a TOML file; FIND_CONFIG (the default): `pipeline.config.config_path`
        (SPARSEEVAL_CONFIG, else the home's sparseeval.toml, else ./sparseeval.toml);
        None: no file.
        """
        return cls._resolve(path, env, overrides)[0]

    @classmethod
    def explain(
        cls, path: str | Path | None = FIND_CONFIG, env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> tuple[Settings, list[tuple[str, Any, str]], Path | None]:  # fmt: skip
        """The settings, (name, value, origin) rows, and the file read (`sparseeval config`)."""
        settings, origin, file = cls._resolve(path, env, overrides)
        return settings, config.explain(settings, origin), file

    @classmethod
    def _resolve(cls, path, env, overrides) -> tuple[Settings, dict[str, str], Path | None]:
        env = os.environ if env is None else env
        if path == FIND_CONFIG:
            path = config.config_path(env, overrides.get("home"))
        file = Path(path) if path and Path(path).is_file() else None
        from_file = read_toml(file) if file else {}
        values: dict[str, Any] = dict(from_file)
        for f in fields(cls):
            key = ENV_PREFIX + f.name.upper()
            if env.get(key, "").strip():  # an empty variable (an unset job variable) is unset
                values[f.name] = env[key]
        values.update({k: v for k, v in overrides.items() if v is not None})
        origin = config.origins(cls, file, env, overrides, from_file)
        return cls(**_coerce(values)), origin, file

    @classmethod
    def fields_of(cls, *sections: str) -> tuple[str, ...]:
        """The names of the fields in the given sections, in definition order."""
        unknown = set(sections) - set(SECTIONS)
        if unknown:
            raise ValueError(f"unknown settings section(s): {', '.join(sorted(unknown))}")
        return tuple(f.name for f in fields(cls) if f.metadata["section"] in sections)

    def section(self, name: str) -> dict[str, Any]:
        """One section's fields and their values (JSON-ready, as in `to_dict`)."""
        full = self.to_dict()
        return {n: full[n] for n in self.fields_of(name)}

    def calibration_args(self) -> dict[str, Any]:
        """`method.splits.calibration_split`'s settings: n_calib, calibration, seed, stable."""
        return {"n_calib": self.n_calib, "calibration": self.calibration, "seed": self.seed,
                "stable": self.stable_split}  # fmt: skip

    @property
    def budgets(self) -> tuple[int, ...]:
        """The anchor budgets, ascending (`n_anchors` as a tuple)."""
        n = self.n_anchors
        return tuple(sorted({int(k) for k in n})) if isinstance(n, tuple | list) else (int(n),)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **_coerce(changes))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (paths as strings), written into every artifact."""
        return {
            k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(self).items()
        }


def read_toml(path: Path) -> dict[str, Any]:
    """A settings file's table; ValueError naming the file (and line) when it is not UTF-8
    text or not valid TOML (a UTF-8 BOM at the start is dropped)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line});"
            " save the file as UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"^(.*?)\s*\(at line (\d+), column (\d+)\)\s*$", str(exc))
        if found:
            what, line, col = found.groups()
            raise ValueError(
                f"{path}: line {line}, column {col}: not valid TOML ({what})"
            ) from None
        raise ValueError(f"{path}: not valid TOML ({exc})") from None


def _not_finite(value: Any) -> bool:
    """A float setting (or one in a list) that is inf or NaN: no run can use it."""
    values = value if isinstance(value, tuple | list) else (value,)
    return any(isinstance(v, float) and not math.isfinite(v) for v in values)


def _coerce(values: dict[str, Any]) -> dict[str, Any]:
    """Convert strings (from env or CLI) to each field's type; reject unknown keys."""
    types = {f.name: f for f in fields(Settings)}
    unknown = set(values) - set(types)
    if unknown:
        raise ValueError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {}
    for name, value in values.items():
        kind = str(types[name].type)
        if "tuple" in kind:
            value = _as_tuple(name, value, int if "int" in kind else str)
        elif isinstance(value, str) and "Path" not in kind and "str" not in kind:
            if "bool" in kind:
                value = value.strip().lower() in {"1", "true", "yes", "on"}
            elif "int" in kind:
                value = int(value)
            elif "float" in kind:
                value = float(value)
        out[name] = value
    return out


def _as_tuple(name: str, value: Any, kind: type) -> Any:
    """A list setting from a list, a JSON list or a `;`-separated (for numbers also `,`) string.

    A single number stays a number (`n_anchors = 100`).
    """
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = json.loads(text)
        else:
            seps = ";," if kind is int else ";"
            value = [p.strip() for p in re.split(f"[{seps}]", text) if p.strip()]
            if kind is int and len(value) == 1:
                return int(value[0])
    if isinstance(value, int | float) and kind is int:
        return int(value)
    if not isinstance(value, list | tuple):
        raise ValueError(f"setting {name} must be a list, got {value!r}")
    return tuple(kind(v) for v in value)


__all__ = ["Settings"]
