"""Small typed records passed between pipeline steps (and Prefect tasks): no big data inside.

Matrices and fitted models live in files under `artifacts/`; records carry their paths,
fingerprints and the few numbers the next step and the run report need.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Record:
    """Base: `to_dict()` for JSON, `from_dict()` that ignores unknown keys."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class IngestSummary(Record):
    """What one ingest step did, over all its sources."""

    units: int = 0
    skipped: int = 0
    new: int = 0
    updated: int = 0
    quarantined: int = 0
    filled_with_synthetic: bool = False
    seconds: float = 0.0
    lines: tuple[str, ...] = ()

    def line(self) -> str:
        synth = " (filled the empty store from the built-in synthetic leaderboard)"
        return (
            f"{self.units} unit(s), {self.skipped} already ingested, {self.new:,} new results,"
            f" {self.quarantined} quarantined" + (synth if self.filled_with_synthetic else "")
        )


@dataclass(frozen=True)
class MatrixInfo(Record):
    """A benchmark's ±1 matrix file (`artifacts/matrix/{fingerprint}.npz`) and its shape."""

    benchmark: str
    path: str
    fingerprint: str
    n_models: int
    n_items: int
    last_run: int
    summary: str


@dataclass(frozen=True)
class FitInfo(Record):
    """A fitted benchmark (`artifacts/model/{key}/`): sizes, scores and test metrics."""

    benchmark: str
    key: str
    model_dir: str
    matrix_fingerprint: str
    matrix_path: str
    last_run: int | None
    n_anchors: int
    predictor: str
    valid_scores: dict[str, float]
    split_sizes: dict[str, int]
    test_metrics: dict[str, float]
    budget_rows: list[dict[str, Any]]
    train_range: list[float]
    seconds: float
    code_version: str
    trained: bool = True

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2))

    @classmethod
    def load(cls, path: Path) -> FitInfo:
        return cls.from_dict(json.loads(Path(path).read_text()) | {"trained": False})


@dataclass(frozen=True)
class LiveSet(Record):
    """The live published version of a benchmark, and what it was built from."""

    version: int
    created: str | None
    data_fingerprint: str | None
    test_mae: float | None
    n_anchors: int | None
    last_run: int | None = None


@dataclass(frozen=True)
class DriftDecision(Record):
    """Did the live set drift on new models, and should a candidate be published?"""

    benchmark: str
    drift: bool
    publish: bool
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GateResult(Record):
    """Candidate against the live set on the same held-out models."""

    accept: bool
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate(Record):
    """A written, not yet live, published version."""

    benchmark: str
    published_dir: str
    path: str
    version: int


@dataclass(frozen=True)
class BenchmarkResult(Record):
    """One benchmark's (and budget's) part of a refresh: matrix, fit, drift, gate, outcome."""

    benchmark: str
    matrix: MatrixInfo | None = None
    fit: FitInfo | None = None
    matrix_cached: bool = False
    fit_cached: bool = False
    fit_state: str = ""
    live: LiveSet | None = None
    decision: DriftDecision | None = None
    gate: GateResult | None = None
    n_fresh: int = 0
    published_version: int | None = None
    published_path: str | None = None
    outcome: str = ""
    error: str | None = None
    budget: int | None = None  # set when the run has several budgets (one result each)
    hub_commit: str | None = None  # the Hub mirror's commit of the published version

    @property
    def label(self) -> str:
        """`arc`, or `arc k50` when the run has several budgets."""
        return self.benchmark if self.budget is None else f"{self.benchmark} k{self.budget}"

    @property
    def trained(self) -> bool:
        return self.fit is not None and not self.fit_cached


@dataclass(frozen=True)
class RunSummary(Record):
    """A whole refresh: settings, ingest, one result per benchmark, the report path."""

    started: str
    task_runner: str
    settings: dict[str, Any]
    ingest: IngestSummary
    results: list[BenchmarkResult]
    report_path: str = ""

    @property
    def n_trained(self) -> int:
        return sum(r.trained for r in self.results)

    @property
    def n_cached(self) -> int:
        return sum(r.fit_cached for r in self.results)

    @property
    def n_published(self) -> int:
        return sum(r.published_version is not None for r in self.results)

    @property
    def failed(self) -> list[str]:
        return [r.benchmark for r in self.results if r.error]
