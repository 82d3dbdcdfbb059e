"""Small typed records passed between pipeline steps (and Prefect tasks): no big data inside.

Matrices and fitted models live in files under `artifacts/`; records carry their paths,
fingerprints and the few numbers the next step and the run report need.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


def set_name(benchmark: str, budget: int | None = None) -> str:
    """`arc`, or `arc-k50` for one of several budgets: names the set in artifact files."""
    return benchmark if budget is None else f"{benchmark}-k{int(budget)}"


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
    """What one ingest step did: totals over all its sources, and one row per source.

    Each row of `sources` is a dict: source (the spec), units, new_models (models whose
    first result in the store came from it), new (rows), updated (rows), skipped (units
    already ingested), pending (units still being written), quarantined (rows),
    targets_quarantined (reported scores: bad, or contradicted by the items), failed (1 for a
    source that failed as a whole) and message (the first failure, else "").
    """

    units: int = 0
    skipped: int = 0  # already ingested, nothing changed
    new: int = 0
    updated: int = 0
    quarantined: int = 0
    filled_with_synthetic: bool = False
    seconds: float = 0.0
    lines: tuple[str, ...] = ()
    new_models: int = 0
    failed: int = 0
    sources: tuple[dict[str, Any], ...] = ()
    pending: int = 0  # still being written (changed within the settle time): read later
    targets_quarantined: int = 0  # reported scores (`store.scores.ScoreCounts`)
    scores: int = 0  # reported scores stored (new or updated)
    failed_before: int = 0  # files put back unchanged after they were set aside: skipped

    _COLUMNS = (
        ("source", "source"), ("units", "units"), ("new_models", "new models"),
        ("new", "new rows"), ("updated", "updated"), ("scores", "reported scores"),
        ("skipped", "already ingested"), ("pending", "pending"),
        ("quarantined", "quarantined"), ("targets_quarantined", "targets quarantined"),
        ("failed_before", "failed before"), ("failed", "failed"), ("message", "first failure"),
    )  # fmt: skip
    _COUNTS = ("units", "new_models", "new", "updated", "scores", "skipped", "pending",
               "quarantined", "targets_quarantined", "failed_before", "failed")  # fmt: skip

    @classmethod
    def from_sources(
        cls, rows: list[dict[str, Any]], lines=(), filled: bool = False, seconds: float = 0.0
    ) -> IngestSummary:
        """Totals summed from the per-source rows."""
        totals = {k: sum(int(r.get(k, 0)) for r in rows) for k in cls._COUNTS}
        return cls(**totals, filled_with_synthetic=filled, seconds=seconds,
                   lines=tuple(lines), sources=tuple(dict(r) for r in rows))  # fmt: skip

    def line(self) -> str:
        synth = " (filled the store from the built-in synthetic leaderboard)"
        models = f" ({self.new_models:,} new model(s))" if self.new_models else ""
        failed = f", {self.failed} failed" if self.failed else ""
        if self.pending:
            failed += f", {self.pending} pending (changed <60 s ago, read on a later run)"
        if self.failed_before:
            failed += (f", {self.failed_before} set aside before and unchanged (skipped;"
                       " change or remove them)")  # fmt: skip
        models += f", {self.scores:,} reported score(s)" if self.scores else ""
        return (
            f"{self.units} unit(s), {self.skipped} skipped, {self.new:,} new results{models},"
            f" {self.quarantined} quarantined{self._held()}{self._targets()}{failed}"
            + (synth if self.filled_with_synthetic else "")
        )

    def _held(self) -> str:
        """` (u.csv: 7 unknown benchmark: nosuch; +1 more file)`: where tonight's quarantined
        rows came from and why (the report lists every file), '' when none."""
        held = [q for row in self.sources for q in row.get("quarantine", [])]
        if not held:
            return ""
        more = f"; +{len(held) - 1} more file(s)" if len(held) > 1 else ""
        first = held[0]["reason"].split("; ")[0]
        return f" ({Path(held[0]['unit']).name}: {first}{more})"

    def _targets(self) -> str:
        n = self.targets_quarantined
        return f", {n} reported score(s) quarantined" if n else ""

    def markdown(self) -> str:
        """What arrived, per source, as a Markdown table (a Prefect artifact, the run report)."""
        if not self.sources:
            return f"Ingest: {self.line() if self.units else 'no sources'}.\n"
        out = [
            "| " + " | ".join(label for _, label in self._COLUMNS) + " |",
            "|---|" + "--:|" * len(self._COUNTS) + "---|",
        ]
        rows = list(self.sources)
        if len(rows) > 1:
            rows.append({k: getattr(self, k) for k in self._COUNTS} | {"total": True})
        for row in rows:
            out.append("| " + " | ".join(self._cell(row, k) for k, _ in self._COLUMNS) + " |")
        if self.filled_with_synthetic:
            out += ["", "The store was filled from the built-in synthetic leaderboard."]
        held = [q for row in self.sources for q in row.get("quarantine", [])]
        if held:
            out += ["", "Quarantined rows (`sparseeval quarantine list` shows them):"]
            out += [f"- {q['unit']}: {q['count']:,} ({q['reason']})" for q in held]
        aside = [line for row in self.sources for line in row.get("set_aside", [])]
        if aside:
            out += ["", "Set aside on an earlier night, put back unchanged, skipped again:"]
            out += [f"- {line}" for line in aside]
        return "\n".join(out) + "\n"

    @staticmethod
    def _cell(row: dict[str, Any], key: str) -> str:
        if key == "source" and row.get("total"):
            return "**all**"
        value = row.get(key, "" if key in {"source", "message"} else 0)
        if key in {"source", "message"}:
            text = " ".join(str(value).replace("|", "\\|").split())[:200]
            return f"`{text}`" if key == "source" and text else text
        return f"{int(value):,}"


@dataclass(frozen=True)
class MatrixInfo(Record):
    """A benchmark's ±1 matrix file (`artifacts/matrix/{benchmark}.{fingerprint}.npz`), shape.

    built: False when the matrix was found on disk under its key (`recipe.matrix_step`).
    """

    benchmark: str
    path: str
    fingerprint: str
    n_models: int
    n_items: int
    last_run: int
    summary: str
    built: bool = True
    # what the targets are and where the results came from (published in the manifest)
    target: dict[str, str] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    set_aside: str = ""  # results the build left out (`BuildSummary.set_aside_line`), or ""


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
    target: dict[str, str] = field(default_factory=dict)  # MatrixInfo.target
    provenance: dict[str, Any] = field(default_factory=dict)  # MatrixInfo.provenance

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2))

    @classmethod
    def load(cls, path: Path) -> FitInfo:
        return cls.from_dict(json.loads(Path(path).read_text()) | {"trained": False})


@dataclass(frozen=True)
class Waiting(Record):
    """A fit not attempted yet: the benchmark has too few models (`recipe.NotEnoughModels`)."""

    benchmark: str
    reason: str


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
    """A written, not yet live, published version; `key` names it in the ledger of refusals.

    key: what the candidate was built from (a benchmark's fit key, the suite's data key).
    """

    benchmark: str
    published_dir: str
    path: str
    version: int
    budget: int | None = None  # the run's budget when it has several (names it: `set_name`)
    key: str = ""
    signing_key: str | None = None  # the PEM file it was signed with (its pointers are too)

    @property
    def name(self) -> str:
        """The set's name in artifact files (`set_name`)."""
        return set_name(self.benchmark, self.budget)

    @property
    def set_budget(self) -> int | None:
        """The budget of the set its folder is in (`{benchmark}/k{K}/`; None: the suite's)."""
        from sparseeval.consume.sets.layout import budget_of

        return budget_of(self.path)


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
    unchanged_from: int | None = None  # the live version a discarded candidate repeated

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
    suite: str = ""  # what the suite step did (one line), "" when it did not run
    waiting: str = ""  # why nothing was fitted yet although sources are set (not a failure)
    dropped_events: int = 0  # Prefect events this run could not send (server unreachable)

    def dropped_line(self) -> str:
        """What the dropped events mean, or "" when every event was sent."""
        n = self.dropped_events
        if not n:
            return ""
        return (f"{n} Prefect event{'s' if n != 1 else ''} could not be sent (server"
                " unreachable); the run's state in the UI may be stale")  # fmt: skip

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
    def all_failed(self) -> bool:
        """Benchmarks ran and every one of them failed."""
        return bool(self.results) and all(r.error for r in self.results)

    @property
    def failures(self) -> list[dict[str, str]]:
        """Each failed unit {"source", "unit", "reason"} (a file, folder or repo; the source
        itself when it failed as a whole), then each failed benchmark {"benchmark", "reason"}."""
        out = [
            {"source": s["source"], "unit": f["unit"], "reason": f["reason"]}
            for s in self.ingest.sources if s.get("failed")
            for f in s.get("failures") or [{"unit": s["source"], "reason": s.get("message", "")}]
        ]  # fmt: skip
        return out + [{"benchmark": r.label, "reason": r.error or ""}
                      for r in self.results if r.error]  # fmt: skip

    def failure_line(self) -> str:
        """The first failure (what and why) and how many more, in one line ("" when none)."""
        if not (failures := self.failures):
            return ""
        first = failures[0]
        what = first.get("unit") or first["benchmark"]
        reason = first["reason"]
        said = reason if reason.startswith(what) else f"{what}: {reason}"
        return said + (f" (and {len(failures) - 1} more failed)" if len(failures) > 1 else "")

    @property
    def status(self) -> str:
        """ok, waiting (nothing to fit yet), partial (something failed) or failed (all)."""
        if self.all_failed or (self.failed and not self.results):
            return "failed"
        return "partial" if self.failed else "waiting" if self.waiting else "ok"

    @property
    def failed(self) -> list[str]:
        """What failed: benchmarks, and sources that failed (`source SPEC`)."""
        bad_sources = [f"source {s['source']}" for s in self.ingest.sources if s.get("failed")]
        return [r.benchmark for r in self.results if r.error] + bad_sources


__all__ = [
    "BenchmarkResult",
    "Candidate",
    "DriftDecision",
    "FitInfo",
    "GateResult",
    "IngestSummary",
    "LiveSet",
    "MatrixInfo",
    "Record",
    "RunSummary",
    "Waiting",
    "set_name",
]
