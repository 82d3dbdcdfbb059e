"""One typed settings object: paper defaults < `sparseeval.toml` < `SPARSEEVAL_*` env vars.

Each setting belongs to one section (`SECTIONS`); a file may use `[section]` tables and the
environment `SPARSEEVAL_{SECTION}__{NAME}` (`pipeline.config`). `Settings.section(name)`
is one section's values as a small frozen object: what a task that needs only it receives.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any

from sparseeval.method.registry import PREDICTOR_CHOICES
from sparseeval.pipeline import config
from sparseeval.pipeline.config import SettingsError
from sparseeval.pipeline.setting_values import (
    converted,
    not_finite,
    read_toml,
    too_big,
    type_problem,
)

TARGETS = ("auto", "reported", "items")  # store.build.TARGETS
FIND_CONFIG = "<find the settings file>"  # Settings.load: see pipeline.config
# The sections of the settings, each field in one (its `section` metadata).
SECTIONS = ("paths", "sources", "selection", "predictor", "splits", "matrix", "drift", "runner")


def _in(section: str, default: Any) -> Any:
    """A settings field of `section`, with its default."""
    assert section in SECTIONS, section
    return field(default=default, metadata={"section": section})


_PATHS = {"section": "paths"}


class _Derived:
    """What both `Settings` and `Sections` derive from their fields."""

    def calibration_args(self) -> dict[str, Any]:
        """`method.splits.calibration_split`'s settings: n_calib, calibration, seed, stable."""
        return {"n_calib": self.n_calib, "calibration": self.calibration, "seed": self.seed,
                "stable": self.stable_split}  # fmt: skip

    @property
    def budgets(self) -> tuple[int, ...]:
        """The anchor budgets, ascending (`n_anchors` as a tuple)."""
        n = self.n_anchors
        return tuple(sorted({int(k) for k in n})) if isinstance(n, tuple | list) else (int(n),)


@dataclass(frozen=True)
class Settings(_Derived):
    """Every knob of the pipeline, with the paper's defaults where the paper has one."""

    # where state lives
    home: Path = field(default=Path(".sparseeval"), metadata=_PATHS)
    store_path: Path | None = field(default=None, metadata=_PATHS)
    artifacts_dir: Path | None = field(default=None, metadata=_PATHS)
    published_dir: Path | None = field(default=None, metadata=_PATHS)
    reports_dir: Path | None = field(default=None, metadata=_PATHS)
    # an Ed25519 private key (unencrypted PEM file) that signs every published set and its
    # `latest` pointer: consumers pass the public key (`--public-key`) and follow no rewrite
    signing_key: Path | None = field(default=None, metadata=_PATHS)
    # what the nightly job pulls when no sources are passed (specs: pipeline.sources)
    sources: tuple[str, ...] = _in("sources", ())
    # new Hub details repos read per run; the rest wait for the next
    hub_max_repos: int = _in("sources", 200)
    # mirror each published version to this Hub dataset repo
    hub_repo: str | None = _in("sources", None)
    # benchmark names (globs, e.g. "gpqa*", or "*" for any) registered when a source brings
    # one the store does not know; any other is quarantined until `ingest --new-benchmark`
    new_benchmarks: tuple[str, ...] = _in("sources", ())
    # a deployment may read the built-in synthetic demo (`sources = ["synthetic"]`) only so
    allow_demo: bool = _in("sources", False)
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
    # the anchors read at most this share of a benchmark's items (a budget over it is capped
    # and said): 100 anchors on a 100-item benchmark would save nothing; 1 lifts the cap
    max_anchor_share: float = _in("selection", 1 / 3)
    # predictor
    predictor: str = _in("predictor", "auto")
    # retrain the chosen predictor on training and validation models: true, false, or "auto"
    # (when the validation models are at least a tenth as many as the training models)
    refit: bool | str = _in("predictor", "auto")
    ensemble: int = _in("predictor", 3)
    lr: float = _in("predictor", 3e-3)
    epochs: int = _in("predictor", 2000)
    patience: int = _in("predictor", 20)
    # MLP training rows per Adam step (each epoch one shuffled pass); 0: all rows at each
    # step (the paper's full batch)
    batch_size: int = _in("predictor", 512)
    weight_decay: float = _in("predictor", 0.0)
    dropout: float = _in("predictor", 0.1)
    # the torch device the MLPs train on: "cpu", or "cuda" / "cuda:N" (a GPU: the same
    # results within the tolerance bench/gpu.py measures, not bit for bit)
    device: str = _in("predictor", "cpu")
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
    # a run outside a deployment (`sparseeval refresh`) that fails POSTs {subject, body} here;
    # deployed runs alert through the automations (`sparseeval automations install --webhook`)
    alert_webhook: str | None = _in("runner", None)

    def __post_init__(self) -> None:
        if problems := _type_problems(self):
            raise SettingsError("; ".join(problems))
        object.__setattr__(self, "home", Path(self.home).expanduser())  # '~/x' as DuckDB reads it
        for name, sub in (
            ("store_path", "store.duckdb"),
            ("artifacts_dir", "artifacts"),
            ("published_dir", "published"),
            ("reports_dir", "reports"),
        ):
            value = getattr(self, name)
            object.__setattr__(self, name, Path(value).expanduser() if value else self.home / sub)
        if self.signing_key:
            object.__setattr__(self, "signing_key", Path(self.signing_key).expanduser())
        self.check()

    def check(self) -> None:
        """Refuse settings no run could use, in one line naming the setting (before any work)."""
        problems = [f"{f.name} must be a finite number, got {getattr(self, f.name)!r}"
                    for f in fields(self) if not_finite(getattr(self, f.name))]  # fmt: skip
        problems += [f"{name} must be {rule}, got {getattr(self, name)!r}"
                     for name, rule, ok in self._rules() if not ok]  # fmt: skip
        problems += too_big({f.name: getattr(self, f.name) for f in fields(self)})
        if problems:
            raise SettingsError("; ".join(problems))

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
            ("batch_size", "0 (all rows) or more", self.batch_size >= 0),
            ("lr", "above 0", self.lr > 0),
            ("dropout", "in [0, 1)", 0 <= self.dropout < 1),
            ("weight_decay", "0 or more", self.weight_decay >= 0),
            ("device", "'cpu', 'cuda' or 'cuda:N'",
             re.fullmatch(r"cpu|cuda(:\d+)?", str(self.device)) is not None),
            ("signing_key", "a PEM file (an Ed25519 private key)",
             not self.signing_key or Path(self.signing_key).is_file()),
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
            ("seed", "0 or more", self.seed >= 0),
            ("lease_wait_seconds", "0 or more", self.lease_wait_seconds >= 0),
            ("alert_webhook", "an http:// or https:// URL",
             self.alert_webhook is None or self.alert_webhook.startswith(("http://", "https://"))),
            ("task_runner", "'thread' or 'dask'", self.task_runner in {"thread", "dask"}),
            ("judge", "'loo' or 'validation'", self.judge in {"loo", "validation"}),
            ("max_anchor_share", "above 0 and at most 1", 0 < self.max_anchor_share <= 1),
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
            home = config.override_layer(SECTION_OF, overrides).get("home", (None,))[0]
            path = config.config_path(env, home)
        if path and Path(path).exists() and not Path(path).is_file():
            raise SettingsError(f"{path} is not a file: the settings file must be one")
        file = Path(path) if path and Path(path).is_file() else None
        table = read_toml(file) if file else {}
        values = config.layers(SECTION_OF, file, table, env, overrides)
        origin = {name: where for name, (_, where) in values.items()}
        return cls(**_coerce({n: v for n, (v, _) in values.items()}, origin)), origin, file

    @classmethod
    def fields_of(cls, *sections: str) -> tuple[str, ...]:
        """The names of the fields in the given sections, in definition order."""
        unknown = set(sections) - set(SECTIONS)
        if unknown:
            raise SettingsError(f"unknown settings section(s): {', '.join(sorted(unknown))}")
        return tuple(f.name for f in fields(cls) if f.metadata["section"] in sections)

    def section(self, name: str) -> Section:
        """One section's values, as a frozen `Section` (e.g. `.section("matrix").target`)."""
        names = self.fields_of(name)  # an unknown section: SettingsError
        return SECTION_TYPES[name](**{n: getattr(self, n) for n in names})

    def sections(self, *names: str) -> Sections:
        """The named sections as one flat object (`Sections`): what a task that uses several
        of them receives; it also carries every setting as a manifest records them."""
        return Sections(tuple(self.section(n) for n in names), self.to_dict())

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **_coerce(changes))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (paths as strings), written into every artifact (the alert
        webhook, which may carry a token, only as whether it is set)."""
        return _jsonable(dataclasses.asdict(self))


def _jsonable(values: Mapping[str, Any]) -> dict[str, Any]:
    """Paths as strings, and the alert webhook (it may carry a token) only as whether it is set."""
    out = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
    if "alert_webhook" in out:
        out["alert_webhook"] = "(set)" if out["alert_webhook"] else None
    return out


def _type_problems(settings: Settings) -> list[str]:
    """`name must be KIND, got VALUE` for each field whose value is of the wrong type."""
    problems = (
        type_problem(f.name, _TYPES[f.name], getattr(settings, f.name)) for f in fields(settings)
    )
    return [p for p in problems if p]


def _coerce(values: Mapping[str, Any], origin: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Convert strings (from env or CLI) to each field's type; a SettingsError naming the
    setting (and, from `origin`, the file or variable it came from) when it cannot be one."""
    out = {}
    for name, value in values.items():
        config.setting_name(SECTION_OF, name, None, "")  # an unknown one: SettingsError
        where = (origin or {}).get(name, "override")
        try:
            out[name] = converted(name, _TYPES[name], value)
            if problem := type_problem(name, _TYPES[name], out[name]):
                raise SettingsError(problem)
        except SettingsError as exc:
            prefix = "" if where == "override" else where.split(" ", 1)[1] + ": "
            raise SettingsError(f"{prefix}{exc}") from None
    return out


SECTION_OF: dict[str, str] = {f.name: f.metadata["section"] for f in fields(Settings)}
_TYPES: dict[str, str] = {f.name: str(f.type) for f in fields(Settings)}


class Section:
    """One section of the settings: a frozen dataclass of its fields (`Settings.section`)."""

    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view, as `Settings.to_dict` gives these fields (the cache keys' input)."""
        return _jsonable(dataclasses.asdict(self))


def _section_type(name: str) -> type[Section]:
    """The frozen dataclass of one section: its fields, types and defaults from `Settings`."""
    own = [(f.name, f.type, field(default=f.default)) for f in fields(Settings)
           if f.metadata["section"] == name]  # fmt: skip
    kind = make_dataclass(f"{name.title()}Section", own, bases=(Section,), frozen=True,
                          namespace={"name": name, "__module__": __name__})  # fmt: skip
    globals()[kind.__name__] = kind  # importable by name: a Dask worker unpickles it
    return kind


# PathsSection, SourcesSection, SelectionSection, ..., RunnerSection
SECTION_TYPES: dict[str, type[Section]] = {name: _section_type(name) for name in SECTIONS}


# The sections a fit reads: training (its cache key), where artifacts live, the interval
# level it calibrates and how many fits run at once (`runner.workers`).
TRAINING = ("selection", "predictor", "splits")
FIT = ("paths", *TRAINING, "drift", "runner")
# The publish unit's: where the sets live, and the Hub repo it mirrors them to.
PUBLISH = ("paths", "sources")


@dataclass(frozen=True)
class Sections(_Derived):
    """Some sections of the settings read as one flat object (`Settings.sections`).

    `sections.seed` is the `splits` section's seed; a setting of a section it was not handed
    is an AttributeError naming that section. `recorded` is every setting of the run, as a
    published manifest records them (`Settings.to_dict`).
    """

    parts: tuple[Section, ...]
    recorded: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("parts", "recorded"):
            raise AttributeError(name)
        section = SECTION_OF.get(name)
        for part in self.parts:
            if part.name == section:
                return getattr(part, name)
        held = ", ".join(p.name for p in self.parts)
        raise AttributeError(f"{name!r} is not a setting of the sections handed here ({held})"
                             + (f": it is in {section!r}" if section else ""))  # fmt: skip

    def section(self, name: str) -> Section:
        """One of the sections held (an unknown or missing one: SettingsError)."""
        for part in self.parts:
            if part.name == name:
                return part
        raise SettingsError(f"section {name!r} was not handed here")

    def replace(self, **changes: Any) -> Sections:
        """The same sections with `changes` (each a setting of one of them)."""
        values = _coerce(changes)
        parts = tuple(
            dataclasses.replace(p, **{n: v for n, v in values.items() if SECTION_OF[n] == p.name})
            for p in self.parts
        )
        if missing := [n for n in values if SECTION_OF[n] not in {p.name for p in self.parts}]:
            raise SettingsError(f"not in the sections handed here: {', '.join(missing)}")
        recorded = dict(self.recorded) | _jsonable(values)
        return Sections(parts, recorded)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view of the fields held (as `Settings.to_dict` gives them)."""
        return {k: v for p in self.parts for k, v in p.to_dict().items()}


# What a library step that reads settings by name accepts: all of them, or the sections handed.
AnySettings = Settings | Sections


def recorded(settings: AnySettings | Mapping[str, Any] | None) -> dict[str, Any]:
    """Every setting as a manifest records them (`Settings.to_dict`, `Sections.recorded`)."""
    if isinstance(settings, Settings):
        return settings.to_dict()
    return dict(settings.recorded if isinstance(settings, Sections) else settings or {})


__all__ = [
    "FIT",
    "PUBLISH",
    "SECTIONS",
    "SECTION_OF",
    "TRAINING",
    "AnySettings",
    "Section",
    "Sections",
    "Settings",
    "SettingsError",
    "recorded",
]
