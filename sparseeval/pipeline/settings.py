"""Every knob of the pipeline: nine sections of typed settings, and the one loader.

    defaults < settings file < SPARSEEVAL_* environment < explicit overrides (flow, CLI)

`Settings` holds one frozen dataclass per section (`settings.selection.n_anchors`,
`settings.paths.home`); a task that needs one section receives that section's type.
`Settings.load` reads the layers in that order and `Settings.explain` says where each value
came from (`sparseeval config`).

The settings file is the first of: `SPARSEEVAL_CONFIG` (a TOML path; it must exist), the
home's own `{SPARSEEVAL_HOME}/sparseeval.toml`, then `./sparseeval.toml` (a first run in a
folder). A deployment sets SPARSEEVAL_HOME and SPARSEEVAL_CONFIG as job variables, so
the worker's working directory never decides.

Setting names are unique across sections, so a setting may be given flat or in its
section, never both:

    file      n_anchors = 50                or  [selection] n_anchors = 50
    env       SPARSEEVAL_N_ANCHORS=50       or  SPARSEEVAL_SELECTION__N_ANCHORS=50
    override  n_anchors=50 (--set)          or  selection.n_anchors=50

An unknown setting, one in the wrong section, one given twice or one of the wrong type is a
`SettingsError` naming it and where it came from. (Other `SPARSEEVAL_*` variables without
`__`, e.g. SPARSEEVAL_CONFIG, are not settings and are left alone, unless the name is a
near miss of a setting's, e.g. SPARSEEVAL_N_ANCHOR: that is an error naming the closest.)
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sparseeval.consume.errors import SettingsError
from sparseeval.method.pool import DEFAULT_RATE, DEFAULT_WIDEN, EDGE_RAMP, EDGE_TAIL
from sparseeval.method.registry import PREDICTOR_CHOICES

CONFIG_ENV = "SPARSEEVAL_CONFIG"
HOME_ENV = "SPARSEEVAL_HOME"
ENV_PREFIX = "SPARSEEVAL_"
ENV_SECTION_SEP = "__"  # SPARSEEVAL_{SECTION}__{NAME}
FILE_NAME = "sparseeval.toml"
DEFAULT_HOME = Path(".sparseeval")
FIND_CONFIG = "<find the settings file>"  # Settings.load: see config_path
TARGETS = ("auto", "reported", "items")  # what a matrix's targets are (`matrix.target`)

# The most a setting may be: beyond these a night never ends (a billion epochs) or a host
# drowns (a hundred thousand workers). Generous for any real run; each section refuses more.
MAXIMA: dict[str, int | float] = {
    "epochs": 100_000, "patience": 100_000, "ensemble": 100, "refine_steps": 10_000,
    "swap_candidates": 1_000, "n_anchors": 100_000, "workers": 256, "hub_max_repos": 100_000,
    "lease_wait_seconds": 86_400.0, "min_new_models": 1_000_000, "drift_window": 1_000_000,
    "drift_paired_models": 1_000_000, "drift_alert_nights": 366, "seed": 2**32 - 1,
    "min_models": 10_000_000,
}  # fmt: skip

# (rule in words, whether the value keeps it) per setting: what `_Section.__post_init__` checks
_Rule = tuple[str, str, bool]


class _Section:
    """What every section does: check its values on creation, and give them as JSON."""

    name = ""

    def __post_init__(self) -> None:
        if problems := self._problems():
            raise SettingsError("; ".join(problems))

    def _problems(self) -> list[str]:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        typed = [type_problem(f.name, str(f.type), values[f.name]) for f in fields(self)]
        if problems := [p for p in typed if p]:
            return problems
        problems = [f"{n} must be a finite number, got {v!r}"
                    for n, v in values.items() if _not_finite(v)]  # fmt: skip
        problems += [f"{n} must be {rule}, got {values[n]!r}"
                     for n, rule, ok in self._rules() if not ok]  # fmt: skip
        return problems + _too_big(values)

    def _rules(self) -> list[_Rule]:
        return []

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view, as `Settings.to_dict` gives these fields (cache keys' input)."""
        return _jsonable(dataclasses.asdict(self))


@dataclass(frozen=True)
class PathsSection(_Section):
    """Where state lives: the home, and its parts when they live elsewhere."""

    name = "paths"
    home: Path = DEFAULT_HOME
    store_path: Path | None = None  # default: {home}/store.duckdb
    artifacts_dir: Path | None = None  # default: {home}/artifacts
    published_dir: Path | None = None  # default: {home}/published
    reports_dir: Path | None = None  # default: {home}/reports
    # an Ed25519 private key (unencrypted PEM file) that signs every published set and its
    # `latest` pointer: consumers pass the public key (`--public-key`) and follow no rewrite
    signing_key: Path | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        home = Path(self.home).expanduser()  # '~/x' as DuckDB reads it
        object.__setattr__(self, "home", home)
        for name, sub in (("store_path", "store.duckdb"), ("artifacts_dir", "artifacts"),
                          ("published_dir", "published"), ("reports_dir", "reports")):  # fmt: skip
            value = getattr(self, name)
            object.__setattr__(self, name, Path(value).expanduser() if value else home / sub)
        if self.signing_key:
            object.__setattr__(self, "signing_key", Path(self.signing_key).expanduser())

    def _rules(self) -> list[_Rule]:
        key = self.signing_key
        return [("signing_key", "a PEM file (an Ed25519 private key)",
                 not key or Path(key).expanduser().is_file())]  # fmt: skip


@dataclass(frozen=True)
class SourcesSection(_Section):
    """What the nightly job pulls, and where published sets are mirrored."""

    name = "sources"
    # what the nightly job pulls when no sources are passed (specs: pipeline.sources)
    sources: tuple[str, ...] = ()
    # new Hub details repos read per run; the rest wait for the next
    hub_max_repos: int = 200
    # mirror each published version to this Hub dataset repo
    hub_repo: str | None = None
    # benchmark names (globs, e.g. "gpqa*", or "*" for any) registered when a source brings
    # one the store does not know; any other is quarantined until `ingest --new-benchmark`
    new_benchmarks: tuple[str, ...] = ()
    # a deployment may read the built-in synthetic demo (`sources = ["synthetic"]`) only so
    allow_demo: bool = False

    def _rules(self) -> list[_Rule]:
        return [("hub_max_repos", "at least 1", self.hub_max_repos >= 1)]


@dataclass(frozen=True)
class SelectionSection(_Section):
    """Anchor selection: the budget, the initialization and the AIS/CIS refinement."""

    name = "selection"
    # one budget, or several (each published on its own)
    n_anchors: int | tuple[int, ...] = 100
    init: str = "adaptive"
    # at most; refinement stops at the first rejected swap
    refine_steps: int = 40
    acceptance: str = "validated"
    swap_candidates: int = 3
    proxy: str = "ridge"
    judge: str = "loo"
    # the anchors read at most this share of a benchmark's items (a budget over it is capped
    # and said): 100 anchors on a 100-item benchmark would save nothing; 1 lifts the cap
    max_anchor_share: float = 1 / 3

    @property
    def budgets(self) -> tuple[int, ...]:
        """The anchor budgets, ascending (`n_anchors` as a tuple)."""
        n = self.n_anchors
        return tuple(sorted({int(k) for k in n})) if isinstance(n, tuple | list) else (int(n),)

    def _rules(self) -> list[_Rule]:
        return [
            ("n_anchors", "at least 1 (or a list of such budgets)",
             bool(self.budgets) and min(self.budgets) >= 1),
            ("refine_steps", "0 or more", self.refine_steps >= 0),
            ("swap_candidates", "at least 1", self.swap_candidates >= 1),
            ("judge", "'loo' or 'validation'", self.judge in {"loo", "validation"}),
            ("max_anchor_share", "above 0 and at most 1", 0 < self.max_anchor_share <= 1),
        ]  # fmt: skip


@dataclass(frozen=True)
class PredictorSection(_Section):
    """The predictor read from the anchors, and how its MLPs train."""

    name = "predictor"
    predictor: str = "auto"
    # retrain the chosen predictor on training and validation models: true, false, or "auto"
    # (when the validation models are at least a tenth as many as the training models)
    refit: bool | str = "auto"
    ensemble: int = 3
    lr: float = 3e-3
    epochs: int = 2000
    patience: int = 20
    # MLP training rows per Adam step (each epoch one shuffled pass); 0: all rows at each
    # step (the paper's full batch)
    batch_size: int = 512
    weight_decay: float = 0.0
    dropout: float = 0.1
    # the torch device the MLPs train on: "cpu", or "cuda" / "cuda:N" (a GPU: the same
    # results within the tolerance bench/gpu.py measures, not bit for bit)
    device: str = "cpu"

    def _rules(self) -> list[_Rule]:
        return [
            ("predictor", "one of " + ", ".join(PREDICTOR_CHOICES),
             self.predictor in PREDICTOR_CHOICES),
            ("ensemble", "at least 1", self.ensemble >= 1),
            ("epochs", "at least 1", self.epochs >= 1),
            ("patience", "at least 1", self.patience >= 1),
            ("batch_size", "0 (all rows) or more", self.batch_size >= 0),
            ("lr", "above 0", self.lr > 0),
            ("dropout", "in [0, 1)", 0 <= self.dropout < 1),
            ("weight_decay", "0 or more", self.weight_decay >= 0),
            ("device", "'cpu', 'cuda' or 'cuda:N'",
             re.fullmatch(r"cpu|cuda(:\d+)?", str(self.device)) is not None),
        ]  # fmt: skip


@dataclass(frozen=True)
class SplitsSection(_Section):
    """How models are split into training, validation, test and calibration."""

    name = "splits"
    n_test: float = 200
    n_valid: float = 200
    # taken from training models; only calibrates the intervals
    n_calib: float = 200
    # "split": intervals from the n_calib held-out models; "cross": from 5 cross-fits of the
    # whole procedure over every training and validation model (5 extra fits; no models set
    # aside; single-run coverage closer to nominal)
    calibration: str = "split"
    stable_split: bool = True
    seed: int = 0

    def calibration_args(self) -> dict[str, Any]:
        """`method.splits.calibration_split`'s settings: n_calib, calibration, seed, stable."""
        return {"n_calib": self.n_calib, "calibration": self.calibration, "seed": self.seed,
                "stable": self.stable_split}  # fmt: skip

    def _rules(self) -> list[_Rule]:
        return [
            ("n_test", "above 0", self.n_test > 0),
            ("n_valid", "above 0", self.n_valid > 0),
            ("n_calib", "0 or more", self.n_calib >= 0),
            ("calibration", "'split' or 'cross'", self.calibration in {"split", "cross"}),
            ("seed", "0 or more", self.seed >= 0),
        ]


@dataclass(frozen=True)
class PoolSection(_Section):
    """When a benchmark trains, and how its set tells and widens estimates beyond its pool.

    The defaults were measured on metabench (`method.pool` says how; bench/RESULTS.md):
    change them with a measurement of your own (`bench/newcomers.py`, `bench/off_pool.py`).
    The suite's readers keep their own widening and edge (`method.pool.SUITE_WIDEN`).
    """

    name = "pool"
    # fewer models in a benchmark's matrix: it waits for more (and `fit` refuses)
    min_models: int = 100
    # test and validation each take at most this share of the models (a small benchmark trains)
    heldout_fraction: float = 0.2
    # the share of training and calibration models whose answer pattern is flagged
    flag_rate: float = DEFAULT_RATE
    # a flagged estimate's interval half-width, in multiples of the conformal one
    widen: float = DEFAULT_WIDEN
    # the pool's top share by score, held out to fit the top edge (where estimates of stronger
    # models than the pool's stop rising: their intervals open upward there)
    edge_tail: float = EDGE_TAIL
    # the share of the edge's zone over which its upper half-width grows (0: a step)
    edge_ramp: float = EDGE_RAMP

    def _rules(self) -> list[_Rule]:
        return [
            ("min_models", "at least 10", self.min_models >= 10),
            ("heldout_fraction", "above 0 and below 0.5", 0 < self.heldout_fraction < 0.5),
            ("flag_rate", "above 0 and below 1", 0 < self.flag_rate < 1),
            ("widen", "at least 1", self.widen >= 1),
            ("edge_tail", "above 0 and below 1", 0 < self.edge_tail < 1),
            ("edge_ramp", "in [0, 1]", 0 <= self.edge_ramp <= 1),
        ]


@dataclass(frozen=True)
class MatrixSection(_Section):
    """How a benchmark's ±1 matrix is built from the store."""

    name = "matrix"
    max_missing_model_frac: float = 0.0
    # what a set estimates: "reported" (the score the source reports, e.g. the leaderboard's),
    # "items" (the mean over the stored items), "auto" (reported when at most 5% of the
    # models lack one, and those are left out: `store.build.AUTO_MAX_UNSCORED`)
    target: str = "auto"

    def _rules(self) -> list[_Rule]:
        return [
            ("max_missing_model_frac", "in [0, 1]", 0 <= self.max_missing_model_frac <= 1),
            ("target", "one of " + ", ".join(TARGETS), self.target in TARGETS),
        ]


@dataclass(frozen=True)
class DriftSection(_Section):
    """When a published set has drifted, and what may replace it."""

    name = "drift"
    drift_mae_points: float = 3.0
    drift_mae_ratio: float = 1.5
    drift_out_of_range_frac: float = 0.2
    min_new_models: int = 20
    # drift is judged on a window of the newest arrivals: the thresholds above on the newest
    # `drift_window` new models, and a paired test (live set vs the night's candidate) on the
    # newest `drift_paired_models` held-out models, whenever they arrived (0: no paired test)
    drift_window: int = 150
    drift_paired_models: int = 30
    interval_level: float = 0.9
    # the quality gate: "paired" refuses only a candidate worse beyond noise (`gate.py`),
    # "strict" any candidate with a higher MAE on the held-out (or fresh held-out) models
    gate: str = "paired"
    # checks in a row in drift after which `sparseeval.drift.persistent` is emitted
    drift_alert_nights: int = 3
    # also publish the suite (every benchmark read jointly, `published/suite`)
    suite: bool = True

    def _rules(self) -> list[_Rule]:
        return [
            ("interval_level", "in (0, 1), e.g. 0.9", 0 < self.interval_level < 1),
            ("min_new_models", "at least 1", self.min_new_models >= 1),
            ("drift_window", "at least 1", self.drift_window >= 1),
            ("drift_paired_models", "0 or at least 3",
             self.drift_paired_models == 0 or self.drift_paired_models >= 3),
            ("gate", "'paired' or 'strict'", self.gate in {"paired", "strict"}),
            ("drift_alert_nights", "at least 1", self.drift_alert_nights >= 1),
        ]  # fmt: skip


@dataclass(frozen=True)
class RunnerSection(_Section):
    """How a run executes: task runner, parallelism, waiting for the home, alerting."""

    name = "runner"
    task_runner: str = "thread"
    dask_address: str | None = None
    lease_wait_seconds: float = 300.0  # a second run on the home waits, then refuses
    workers: int = 2  # benchmarks fitted at once: threads, or local Dask workers
    # a run outside a deployment (`sparseeval refresh`) that fails POSTs {subject, body} here;
    # deployed runs alert through the automations (`sparseeval automations install --webhook`)
    alert_webhook: str | None = None

    def _rules(self) -> list[_Rule]:
        return [
            ("task_runner", "'thread' or 'dask'", self.task_runner in {"thread", "dask"}),
            ("workers", "at least 1", self.workers >= 1),
            ("lease_wait_seconds", "0 or more", self.lease_wait_seconds >= 0),
            ("alert_webhook", "an http:// or https:// URL",
             self.alert_webhook is None or self.alert_webhook.startswith(("http://", "https://"))),
        ]  # fmt: skip


SECTION_TYPES: dict[str, type[_Section]] = {kind.name: kind for kind in (
    PathsSection, SourcesSection, SelectionSection, PredictorSection, SplitsSection,
    PoolSection, MatrixSection, DriftSection, RunnerSection,
)}  # fmt: skip
SECTIONS = tuple(SECTION_TYPES)
SECTION_OF: dict[str, str] = {f.name: s for s, kind in SECTION_TYPES.items() for f in fields(kind)}
_TYPES: dict[str, str] = {f.name: str(f.type) for kind in SECTION_TYPES.values()
                          for f in fields(kind)}  # fmt: skip


def fields_of(*sections: str) -> tuple[str, ...]:
    """The names of the settings in the given sections, in definition order."""
    if unknown := set(sections) - set(SECTIONS):
        raise SettingsError(f"unknown settings section(s): {', '.join(sorted(unknown))}")
    return tuple(name for name, section in SECTION_OF.items() if section in sections)


@dataclass(frozen=True)
class Settings:
    """Every knob of the pipeline, one section each, with the paper's defaults where the paper
    has one. `Settings.of(n_anchors=50)` sets settings by name; `Settings.load()` reads the
    settings file and environment too."""

    paths: PathsSection = field(default_factory=PathsSection)
    sources: SourcesSection = field(default_factory=SourcesSection)
    selection: SelectionSection = field(default_factory=SelectionSection)
    predictor: PredictorSection = field(default_factory=PredictorSection)
    splits: SplitsSection = field(default_factory=SplitsSection)
    pool: PoolSection = field(default_factory=PoolSection)
    matrix: MatrixSection = field(default_factory=MatrixSection)
    drift: DriftSection = field(default_factory=DriftSection)
    runner: RunnerSection = field(default_factory=RunnerSection)

    @classmethod
    def of(cls, **values: Any) -> Settings:
        """Settings given by name (`home=...`, `n_anchors=50`), the rest their defaults: no
        file, no environment. Strings (from a flag) are read as each setting's type."""
        return cls._from_values(_coerce(values))

    @classmethod
    def _from_values(cls, values: Mapping[str, Any]) -> Settings:
        parts, problems = {}, []
        for name, kind in SECTION_TYPES.items():
            try:
                parts[name] = kind(**{n: v for n, v in values.items() if SECTION_OF[n] == name})
            except SettingsError as exc:
                problems.append(str(exc))
        if problems:
            raise SettingsError("; ".join(problems))
        return cls(**parts)

    @classmethod
    def load(
        cls, path: str | Path | None = FIND_CONFIG, env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> Settings:  # fmt: skip
        """Defaults, then the settings file, then environment, then `overrides` (by name).

        path: a TOML file; FIND_CONFIG (the default): `config_path` (SPARSEEVAL_CONFIG, else
        the home's sparseeval.toml, else ./sparseeval.toml); None: no file.
        """
        return cls._resolve(path, env, overrides)[0]

    @classmethod
    def explain(
        cls, path: str | Path | None = FIND_CONFIG, env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> tuple[Settings, list[tuple[str, Any, str]], Path | None]:  # fmt: skip
        """The settings, (name, value, origin) rows, and the file read (`sparseeval config`)."""
        settings, origin, file = cls._resolve(path, env, overrides)
        rows = [(n, v, origin.get(n, "default")) for n, v in settings.to_dict().items()]
        return settings, rows, file

    @classmethod
    def _resolve(cls, path, env, overrides) -> tuple[Settings, dict[str, str], Path | None]:
        env = os.environ if env is None else env
        if path == FIND_CONFIG:
            path = config_path(env, _override_layer(overrides).get("home", (None,))[0])
        if path and Path(path).exists() and not Path(path).is_file():
            raise SettingsError(f"{path} is not a file: the settings file must be one")
        file = Path(path) if path and Path(path).is_file() else None
        values = _file_layer(read_toml(file) if file else {}, file)
        values.update(_env_layer(env))
        values.update(_override_layer(overrides))
        origin = {name: where for name, (_, where) in values.items()}
        return (
            cls._from_values(_coerce({n: v for n, (v, _) in values.items()}, origin)),
            origin,
            file,
        )

    def replace(self, **changes: Any) -> Settings:
        """The same settings with `changes`, by name (`n_anchors=10`)."""
        return self._from_values(self.values() | _coerce(changes))

    def values(self) -> dict[str, Any]:
        """Every setting by name, as typed values (`n_anchors`, `home`, ...)."""
        return {n: v for s in SECTIONS for n, v in vars(getattr(self, s)).items()}

    def to_dict(self) -> dict[str, Any]:
        """Every setting by name, JSON-ready (paths as strings), as each artifact records them
        (the alert webhook, which may carry a token, only as whether it is set)."""
        return _jsonable(self.values())


def recorded(settings: Settings | Mapping[str, Any] | None) -> dict[str, Any]:
    """Every setting as a manifest records them (`Settings.to_dict`), or the mapping given."""
    return settings.to_dict() if isinstance(settings, Settings) else dict(settings or {})


def _jsonable(values: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
    if "alert_webhook" in out:
        out["alert_webhook"] = "(set)" if out["alert_webhook"] else None
    return out


def _coerce(values: Mapping[str, Any], origin: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Strings (from env or a flag) as each setting's type; a SettingsError naming the setting
    (and, from `origin`, the file or variable it came from) when it cannot be one."""
    out = {}
    for name, value in values.items():
        _setting_name(name, None, "")  # an unknown one: SettingsError
        where = (origin or {}).get(name, "override")
        try:
            out[name] = converted(name, _TYPES[name], value)
            if problem := type_problem(name, _TYPES[name], out[name]):
                raise SettingsError(problem)
        except SettingsError as exc:
            prefix = "" if where == "override" else where.split(" ", 1)[1] + ": "
            raise SettingsError(f"{prefix}{exc}") from None
    return out


# --- where the settings file is ----------------------------------------------------------


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


# --- the layers: each given setting with its value and origin ------------------------------

# (value, where it came from), per setting name
_Layer = dict[str, tuple[Any, str]]
# `SPARSEEVAL_*` variables that are not settings (read elsewhere): never taken for a typo
NOT_SETTINGS = frozenset({"config", "cron", "light_python", "faults_tag", "console_one_line"})
# how close a variable's name must be to a setting's to be taken for a mistyped one
TYPO_CUTOFF = 0.85


def _file_layer(table: Mapping[str, Any], path: Path | None) -> _Layer:
    """A settings file's values: flat keys and `[section]` tables."""
    out: _Layer = {}
    where = f"{path}: "
    for key, value in table.items():
        section = key if isinstance(value, dict) else None  # no setting takes a table
        if section is not None:
            _check_section(section, where)
        for sub, v in value.items() if section else [(key, value)]:
            name = _setting_name(sub, section, where)
            _put(out, name, v, f"file {path}", f"{where}{name} is set both flat and in its section")
    return out


def _env_layer(env: Mapping[str, str]) -> _Layer:
    """`SPARSEEVAL_{NAME}` and `SPARSEEVAL_{SECTION}__{NAME}` values (an empty one is unset)."""
    out: _Layer = {}
    for key in sorted(env):
        if not key.startswith(ENV_PREFIX) or not env[key].strip():
            continue
        rest = key[len(ENV_PREFIX):].lower()  # fmt: skip
        section, sep, name = rest.partition(ENV_SECTION_SEP)
        if sep:
            _check_section(section, f"{key}: ")
            name = _setting_name(name, section, f"{key}: ")
        elif rest in SECTION_OF:
            name = rest
        else:
            _mistyped(key, rest)
            continue  # SPARSEEVAL_CONFIG, SPARSEEVAL_CRON, ...: not a setting
        other = out.get(name, (None, ""))[1].removeprefix("env ")
        _put(out, name, env[key], f"env {key}", f"{other} and {key} both set {name}")
    return out


def _mistyped(key: str, rest: str) -> None:
    """A SettingsError when `SPARSEEVAL_{rest}` reads as a mistyped setting (`N_ANCHOR`):
    a variable that sets nothing must not pass for one that does."""
    if rest in NOT_SETTINGS:
        return
    close = difflib.get_close_matches(rest, list(SECTION_OF), n=1, cutoff=TYPO_CUTOFF)
    if close:
        raise SettingsError(
            f"{key}: unknown setting {rest!r} (did you mean {ENV_PREFIX}{close[0].upper()}?)"
        )


def _override_layer(overrides: Mapping[str, Any]) -> _Layer:
    """Explicit values (flow parameters, `--set`): `name` or `section.name`; None is unset."""
    out: _Layer = {}
    for key, value in overrides.items():
        if value is None:
            continue
        section, sep, name = key.strip().rpartition(".")
        if sep:
            _check_section(section, "")
        name = _setting_name(name, section or None, "")
        _put(out, name, value, "override", f"{name} is given twice")
    return out


def _setting_name(key: str, section: str | None, where: str) -> str:
    """`key` when it is a setting (of `section`, when given), else a SettingsError naming it."""
    if key not in SECTION_OF:
        inside = f" in [{section}]" if section else ""
        close = difflib.get_close_matches(key, list(SECTION_OF), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise SettingsError(f"{where}unknown setting {key!r}{inside}{hint}")
    if section is not None and SECTION_OF[key] != section:
        raise SettingsError(f"{where}{key} belongs in [{SECTION_OF[key]}], not [{section}]")
    return key


def _check_section(section: str, where: str) -> None:
    if section not in SECTIONS:
        raise SettingsError(
            f"{where}unknown settings section [{section}] (sections: {', '.join(SECTIONS)})"
        )


def _put(out: _Layer, name: str, value: Any, origin: str, twice: str) -> None:
    if name in out:
        raise SettingsError(f"{twice}: keep one")
    out[name] = (value, origin)


# --- values: strings from the environment or a flag, and type checks ----------------------

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
    return None if ok(value) else f"{name} must be {what}, got {_shown(value)}"


def _shown(value: Any) -> str:
    """A value as the settings file would spell it (`true`, not `True`)."""
    return json.dumps(value, default=str) if isinstance(value, bool | None) else repr(value)


def _not_finite(value: Any) -> bool:
    """A float setting (or one in a list) that is inf or NaN: no run can use it."""
    values = value if isinstance(value, tuple | list) else (value,)
    return any(isinstance(v, float) and not math.isfinite(v) for v in values)


def _too_big(values: Mapping[str, Any]) -> list[str]:
    """`NAME must be at most MAX, got VALUE` for each setting above its maximum (`MAXIMA`)."""
    out = []
    for name, most in MAXIMA.items():
        value = values.get(name)
        given = value if isinstance(value, tuple | list) else (value,)
        if any(isinstance(v, int | float) and v > most for v in given):
            out.append(f"{name} must be at most {most:,}, got {_shown(value)}")
    return out


def converted(name: str, kind: str, value: Any) -> Any:
    """A string from the environment or a flag as a value of the annotation `kind`."""
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
    return value  # a number, a tuple, or a wrong type: the section names it


__all__ = [
    "CONFIG_ENV",
    "DEFAULT_HOME",
    "ENV_PREFIX",
    "FILE_NAME",
    "HOME_ENV",
    "MAXIMA",
    "SECTIONS",
    "SECTION_OF",
    "SECTION_TYPES",
    "TARGETS",
    "DriftSection",
    "MatrixSection",
    "PathsSection",
    "PoolSection",
    "PredictorSection",
    "RunnerSection",
    "SelectionSection",
    "Settings",
    "SettingsError",
    "SourcesSection",
    "SplitsSection",
    "config_path",
    "converted",
    "env_home",
    "fields_of",
    "read_toml",
    "recorded",
    "type_problem",
]
