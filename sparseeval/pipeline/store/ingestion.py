"""Transactional, idempotent ingest of one source into the store."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import duckdb
import polars as pl

from sparseeval.consume.answers.ids import did_you_mean
from sparseeval.consume.benchmarks import of_task, records
from sparseeval.consume.sets.hub import redact
from sparseeval.pipeline.progress import still_working
from sparseeval.pipeline.stopping import reraise_stop
from sparseeval.pipeline.store.db import Store, StoreError, execute, fetch, live_runs
from sparseeval.pipeline.store.item_identity import merge_identity
from sparseeval.pipeline.store.scores import SCORE_FRAME, ScoreCounts, merge_scores
from sparseeval.pipeline.store.unit import SourceError, Unit, printable_line
from sparseeval.pipeline.store.validate import (
    check,
    count_staged,
    quarantine_bad,
    resolve_duplicates,
)

log = logging.getLogger(__name__)
QUARANTINED = "quarantined"  # the status of a unit whose every row was quarantined


class Source(Protocol):
    """Anything that yields units to ingest (files, directories, Hub repos)."""

    def units(self, store: Store) -> Iterable[Unit]: ...


@dataclass
class IngestReport:
    """What one unit's ingest did. `status` is ok, skipped, failed or quarantined (rows
    were read but every one was quarantined: nothing stored, and the same content can be
    ingested again once the cause is fixed).

    `message`: why it was skipped or failed; for an ok unit what it was read with (lm-eval:
    the metric of each task, e.g. `metric arc_challenge=acc_norm; gsm8k=exact_match (filter
    strict-match)`), also in `line()`. Stored as the run's `ingest_runs.message`.
    """

    run_id: int
    kind: str
    source: str
    status: str
    n_read: int = 0
    n_new: int = 0
    n_updated: int = 0
    n_unchanged: int = 0
    n_quarantined: int = 0
    n_duplicates: int = 0
    seconds: float = 0.0
    message: str = ""
    # The unit's reported scores (lm-eval results JSON, `scores:FILE`); their note is part
    # of `message`, so `ingest_runs` shows it too.
    scores: ScoreCounts = field(default_factory=ScoreCounts)
    # the run's most frequent quarantine reasons with their counts (at most 3)
    reasons: list[tuple[str, int]] = field(default_factory=list)

    @property
    def n_stored(self) -> int:
        """Rows whose value is now in the store (new, updated or already there)."""
        return self.n_new + self.n_updated + self.n_unchanged

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"n_stored": self.n_stored}

    def why_quarantined(self) -> str:
        """` (50 unknown benchmark: nosuch; ...)`: the top reasons, '' when none."""
        said = "; ".join(f"{n:,} {reason}" for reason, n in self.reasons)
        return f" ({printable_line(said)})" if said and self.n_quarantined else ""

    def line(self) -> str:
        """One line for a user (control characters of file names and content escaped)."""
        source = printable_line(self.source)
        if self.status != "ok":
            return f"{source}: {self.status} ({printable_line(self.message)})"
        if self.n_read == 0 and self.scores.n_read:  # a scores file: no per-item rows to count
            return f"{source}: {printable_line(self.message)} in {self.seconds:.1f}s"
        return (
            f"{source}: read {self.n_read:,}; new {self.n_new:,}, updated {self.n_updated:,},"
            f" unchanged {self.n_unchanged:,}, quarantined {self.n_quarantined:,}"
            f"{self.why_quarantined()}, duplicates {self.n_duplicates:,} in {self.seconds:.1f}s"
            + (f"; {printable_line(self.message)}" if self.message else "")
        )


def ingest(
    store: Store, source: Source, force: bool = False, keep_going: bool = False,
    new_benchmarks: Sequence[str] = (),
) -> list[IngestReport]:  # fmt: skip
    """Ingest every unit of `source`; each unit is one transaction and one ingest run.

    A unit whose content was already ingested successfully is skipped (`force` re-reads
    it; unchanged rows then cost nothing but the comparison). A failing unit is rolled
    back and recorded; with `keep_going` the next units still run, else the error raises.
    With `keep_going`, an error while listing the source's units (a missing folder, a Hub
    listing that failed) ends that source with one failed report after the units already
    done. Every attempt is an `ingest_runs` row, that error too (kind `source`).
    `new_benchmarks`: globs of unknown benchmark names registered rather than quarantined
    (`validate.check`).
    """
    if store.read_only:
        raise StoreError("store is open read-only")
    reports = []
    try:
        units = iter(source.units(store))
    except Exception as exc:
        reraise_stop(exc)
        units = _raising(exc)
    while True:
        try:
            unit = next(units)
        except StopIteration:
            break
        except Exception as exc:
            reraise_stop(exc)  # a stop signal is no failed source
            report = record_failed_source(store, source_label(source), exc)
            if not keep_going:
                raise
            reports.append(report)
            break
        try:
            with still_working(f"ingest: reading {printable_line(unit.label)}"):
                reports.append(ingest_unit(store, unit, force, new_benchmarks))
        except Exception as exc:
            reraise_stop(exc)
            if not keep_going:
                raise
            run_id = getattr(exc, "sparseeval_run_id", -1)
            reports.append(IngestReport(run_id, unit.kind, unit.label, "failed",
                                        message=stored_message(exc)))  # fmt: skip
    return reports


def _raising(exc: Exception) -> Iterator[Unit]:
    raise exc
    yield  # a generator


def stored_message(text: object) -> str:
    """A message as it may be logged, stored and shown: tokens redacted, control characters
    escaped, at most 500 characters (`str(exc)` of an error, or any text); a full disk is
    said in words."""
    from sparseeval.pipeline.store.integrity import disk_full

    full = isinstance(text, BaseException) and disk_full(text)
    prefix = "disk full, nothing of it was stored: " if full else ""
    return printable_line(prefix + str(redact(text)))[:500]


def record_failed_source(store: Store, label: str, exc: BaseException) -> IngestReport:
    """Record a source that failed before any unit started (listing, Hub discovery) as a run."""
    ((run_id, _),) = fetch(store.con, "next_ids", {})
    report = IngestReport(run_id, "source", label, "failed", message=stored_message(exc))
    params = {"run": run_id, "kind": "source", "source": label, "sha": None,
              "ts": datetime.now(UTC)}  # fmt: skip
    try:
        with store.transaction() as con:
            execute(con, "run_start", params | {"status": "failed"})
            execute(con, "run_finish", _finish_params(report, run_id))
    except duckdb.Error as again:
        log.warning("could not record the failed source %s (%s)", printable_line(label),
                    stored_message(again))  # fmt: skip
        report.run_id = -1
    log.info("ingest %s", report.line())  # the caller shows or raises the failure
    return report


def source_label(source: Source) -> str:
    """A short name for a source object: its path, pattern or type."""
    for name in ("path", "pattern"):
        if (value := getattr(source, name, None)) is not None:
            return str(value)
    return type(source).__name__


def ingest_unit(
    store: Store, unit: Unit, force: bool = False, new_benchmarks: Sequence[str] = ()
) -> IngestReport:
    """Ingest one unit atomically and record the run (ok, skipped or failed).

    The run row is written first, as 'running', and committed before the data transaction
    starts; the data and the run's finish (ok) commit together, a failure finishes it as
    failed. A process killed in between leaves it 'running', and the next `Store.open` for
    writing marks it 'interrupted' (its data never committed). An exception raised here
    carries the run id as `sparseeval_run_id`.
    """
    t0 = time.perf_counter()
    con = store.con
    ts = datetime.now(UTC)
    ((run_id, _),) = fetch(con, "next_ids", {})
    params = {"run": run_id, "kind": unit.kind, "source": unit.label, "sha": unit.key, "ts": ts}
    done = None if force else fetch(con, "run_done", {"sha": unit.key})[0][0]
    if unit.skip or done is not None:
        why = unit.skip or f"already ingested in run {done}; nothing changed (force to re-read)"
        return _record_skip(store, params, why, t0)
    live = live_runs(store.path)
    with store.transaction():
        execute(con, "run_start", params | {"status": "running"})
    live.add(run_id)
    try:
        with store.transaction():
            ((_, ref_base),) = fetch(con, "next_ids", {})
            report = _load(con, unit, params | {"ref_base": ref_base}, new_benchmarks)
            report.seconds = time.perf_counter() - t0
            execute(con, "run_finish", _finish_params(report, run_id))
    except Exception as exc:
        # a stop signal (DuckDB's "Query interrupted"): rolled back, never a failed unit;
        # the run row stays 'running' and the next `Store.open` marks it interrupted
        reraise_stop(exc)
        _drop_temp(con, unit)
        _record_failure(store, params, exc)
        with contextlib.suppress(AttributeError, TypeError):
            exc.sparseeval_run_id = run_id  # type: ignore[attr-defined]
        raise
    finally:
        live.discard(run_id)
    _drop_temp(con, unit)
    log.info("ingest %s", report.line())
    return report


def _load(
    con: duckdb.DuckDBPyConnection, unit: Unit, params: dict[str, Any],
    new_benchmarks: Sequence[str] = (),
) -> IngestReport:  # fmt: skip
    """Stage, validate, de-duplicate and merge one unit (inside the caller's transaction)."""
    unit.stage(con)
    con.register(
        "unit_refs", pl.DataFrame({"ref_no": range(len(unit.refs)), "source_ref": unit.refs})
    )
    execute(con, "refs_insert", params)
    accepted = check(con, new_benchmarks)
    _refuse_demo_mixing(con, unit.kind)
    n_read = count_staged(con)
    execute(con, "quarantine_replace", params)
    n_bad = quarantine_bad(con, params)
    if n_bad < n_read:  # some would be stored (a file all bad is quarantined whole, said)
        _refuse_not_answers(con, unit, params["run"], n_read)
    execute(con, "ingest_models", params)
    execute(con, "ingest_items", params | {"id_kind": unit.id_kind})
    identity_note = merge_identity(con, unit, params)
    execute(con, "ingest_batch", params)
    n_dup, n_conflict = resolve_duplicates(con, params)
    new, updated, unchanged = _merge(con, params)
    scores = merge_scores(con, params) if SCORE_FRAME in unit.frames else ScoreCounts()
    if unit.record is not None:
        unit.record(con, params["run"])
    reasons = fetch(con, "quarantine_reasons", {"run": params["run"], "top": 3})
    notes = [_read_with(unit), scores.note(), identity_note, _accepted_note(accepted)]
    stored = new + updated + unchanged + scores.n_new + scores.n_updated + scores.n_unchanged
    status = "ok" if stored or not (n_read or scores.n_read) else QUARANTINED
    if status == QUARANTINED:
        notes.insert(0, nothing_stored(con, params["run"], n_read + scores.n_read))
    report = IngestReport(
        params["run"], unit.kind, unit.label, status, n_read=n_read, n_new=new,
        n_updated=updated, n_unchanged=unchanged, n_quarantined=n_bad + n_conflict,
        n_duplicates=n_dup, message="; ".join(filter(None, notes)),
        scores=scores, reasons=[(printable_line(r), int(n)) for r, n in reasons],
    )  # fmt: skip
    _assert_accounted(report)
    return report


def _accepted_note(names: list[str]) -> str:
    """`new benchmark accepted: NAME (new_benchmarks)`, or ''."""
    if not names:
        return ""
    plural = "s" if len(names) > 1 else ""
    return f"new benchmark{plural} accepted: {', '.join(names)} (new_benchmarks)"


UNKNOWN = "unknown benchmark:"  # the quarantine reason (sql/validate.sql)


def nothing_stored(con: duckdb.DuckDBPyConnection, run_id: int, n_read: int, top: int = 3) -> str:
    """Why a unit stored nothing: its top quarantine reasons with their counts."""
    reasons = fetch(con, "quarantine_reasons", {"run": run_id, "top": top})
    said = "; ".join(f"{n:,} {printable_line(reason)}" for reason, n in reasons)
    unknown = [str(r)[len(UNKNOWN) :].strip() for r, _ in reasons if str(r).startswith(UNKNOWN)]
    hint = (
        " (known ones are built in; --new-benchmark NAME accepts another, the new_benchmarks"
        " setting every one it matches)" + _nearest(unknown[0])
        if unknown
        else ""
    )
    return f"nothing stored, all {n_read:,} rows quarantined: {said}{hint}"


def _nearest(name: str) -> str:
    """`; did you mean 'arc'?` for a near miss of a benchmark name, or one of its lm-eval
    task names (`arc_challenge` is ARC's), else ''."""
    if said := did_you_mean(name, [b.name for b in records()]):
        return said
    task_of = of_task(name)
    return f"; did you mean {task_of!r}? ({name} is its lm-eval task)" if task_of else ""


def _refuse_not_answers(con: duckdb.DuckDBPyConnection, unit: Unit, run: int, n_read: int) -> None:
    """A file most of whose values are no correctness value (a scores table read as answers,
    its booleans and names taken for items) is refused whole, never stored in part."""
    ((n,),) = fetch(con, "count_not_correct", {"run": run})
    if n * 2 <= n_read:
        return
    raise SourceError(
        f"{printable_line(unit.label)}: {n:,} of {n_read:,} values are no correctness value (0/1,"
        " true/false): not a table of per-item answers, nothing stored (a table of reported"
        " scores is ingested as scores:FILE)"
    )


def _refuse_demo_mixing(con: duckdb.DuckDBPyConnection, kind: str) -> None:
    """Real results never join the built-in synthetic demo's benchmarks (nor the reverse)."""
    names = [name for (name,) in fetch(con, "demo_mixing", {"kind": kind})]
    if not names:
        return
    held = "real results" if kind == "synthetic" else "the built-in synthetic demo data"
    raise SourceError(
        f"benchmark(s) {', '.join(names)} in this store hold {held}; the two are never mixed:"
        " use another home (SPARSEEVAL_HOME) for real results"
    )


def _read_with(unit: Unit) -> str:
    """What the stager recorded, as `metric arc_challenge=acc_norm; gsm8k=exact_match
    (filter strict-match); 57 tasks (mmlu_abstract_algebra ... mmlu_world_religions)=acc`."""
    groups: dict[str, list[str]] = {}
    for name, used in unit.read_with.items():
        groups.setdefault(used, []).append(name)
    parts = [
        (
            ", ".join(names)
            if len(names) <= 3
            else f"{len(names)} tasks ({names[0]} ... {names[-1]})"
        )
        + f"={used}"
        for used, names in groups.items()
    ]
    return stored_message("metric " + "; ".join(parts)) if parts else ""


def _merge(con: duckdb.DuckDBPyConnection, params: dict[str, Any]) -> tuple[int, int, int]:
    """Write the batch into `results`, history first; return (new, updated, unchanged)."""
    ((n_batch,),) = fetch(con, "batch_count", {})
    ((overlap,),) = fetch(con, "batch_overlap", {})
    ((matched, changed),) = fetch(con, "ingest_compare", {}) if overlap else ((0, 0),)
    if matched == 0:
        execute(con, "ingest_insert_all", params)
        return n_batch, 0, 0
    if changed:
        execute(con, "ingest_update", params)
    if n_batch > matched:
        execute(con, "ingest_insert_new", params)
    return n_batch - matched, changed, matched - changed


def _assert_accounted(r: IngestReport) -> None:
    """Nothing silently dropped: read = stored + quarantined + duplicates."""
    if r.n_read != r.n_stored + r.n_quarantined + r.n_duplicates:
        raise AssertionError(
            f"{r.source}: read {r.n_read} rows but stored {r.n_stored} + quarantined"
            f" {r.n_quarantined} + duplicates {r.n_duplicates}"
        )


def _finish_params(r: IngestReport, run_id: int) -> dict[str, Any]:
    return {
        "run": run_id, "status": r.status, "n_read": r.n_read, "n_new": r.n_new,
        "n_updated": r.n_updated, "n_unchanged": r.n_unchanged,
        "n_quarantined": r.n_quarantined, "n_duplicates": r.n_duplicates,
        "message": stored_message(r.message),
    }  # fmt: skip


def _record_skip(store: Store, params: dict[str, Any], why: str, t0: float) -> IngestReport:
    """A skipped attempt: one row, written whole (there is no data transaction to wait for)."""
    report = IngestReport(params["run"], params["kind"], params["source"], "skipped",
                          message=stored_message(why))  # fmt: skip
    with store.transaction() as con:
        execute(con, "run_start", params | {"status": "skipped"})
        execute(con, "run_finish", _finish_params(report, params["run"]))
    report.seconds = time.perf_counter() - t0
    log.info("ingest %s", report.line())
    return report


def _record_failure(store: Store, params: dict[str, Any], exc: Exception) -> None:
    """Finish the attempt's run row as failed (its data changes were rolled back)."""
    report = IngestReport(params["run"], params["kind"], params["source"], "failed",
                          message=stored_message(exc))  # fmt: skip
    try:
        with store.transaction() as con:
            execute(con, "run_finish", _finish_params(report, params["run"]))
    except duckdb.Error as again:  # the row stays 'running'; the next open marks it interrupted
        log.warning("could not record failed run %s (%s)", params["run"], stored_message(again))
    log.info("ingest %s", report.line())  # the caller shows or raises the failure


def _drop_temp(con: duckdb.DuckDBPyConnection, unit: Unit) -> None:
    execute(con, "drop_temp", {})
    for name in ("src_frame", "pre_bad_frame", "unit_refs", *unit.frames):
        with contextlib.suppress(duckdb.Error):
            con.unregister(name)


__all__ = [
    "QUARANTINED",
    "UNKNOWN",
    "IngestReport",
    "Source",
    "ingest",
    "ingest_unit",
    "nothing_stored",
    "record_failed_source",
    "source_label",
    "stored_message",
]
