"""Inspect AI logs as a store source: one `.eval` / `.json` log, or a log folder watched nightly.

Each log file is one unit, read by the consumer's reader (`consume.answers.inspect_answers`,
which says the layout, the item identity and the epoch policy): the model is the log's
`eval.model`, the benchmark its task name (a registry prefix such as `inspect_evals/`
dropped), unless the spec's options name them. A graded score (`P`, 0.43) is stored as the
item's graded score (`sql/validate.sql`); samples without one score (errored, several
values) are quarantined with their reason; each item's content hash
(`inspect_sample:…`) is stored, so the same id naming another question is reported.

A folder is read again every night (`inspect eval-set`'s log dir): a log changed within the
settle time, or whose run has not ended (status `started`), is pending; a log whose run
ended in `error` or `cancelled` is skipped (eval-set retries it into a new log, read once it
succeeds); content read before is skipped by its fingerprint, so each log lands once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.identity import OPAQUE
from sparseeval.consume.answers.inspect_answers import (
    CONTENT_HASH,
    EPOCH_POLICY,
    STARTED,
    InspectLog,
    InspectLogError,
    is_inspect_log,
    read_log,
)
from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.pipeline.store.db import Store
from sparseeval.pipeline.store.item_identity import HASHED_SCHEMA, ITEM_HASH_FRAME, stage_hashes
from sparseeval.pipeline.store.unit import (
    BAD_SCHEMA,
    SourceError,
    SpecOptions,
    Unit,
    conform,
    existing,
    no_stage,
    stage_frames,
)
from sparseeval.pipeline.store.watched import (
    PENDING,
    settle_time,
    settled_units,
    skipped_unit,
    spec_target,
)

KIND = "inspect"
_NOT_LOGS = {"logs.json", "eval-set.json"}  # eval-set's own bookkeeping in a log folder


@dataclass
class InspectLogs:
    """Inspect AI logs: one `.eval` or `.json` log file, or a folder of them (recursively).

    `settle_seconds`: how long a log must be unchanged to be read (None: the watched
    sources' `SETTLE_SECONDS`, as for `inspect:DIR`; a plain path given to `ingest` is read
    as it is, 0, like an lm-eval folder: a log cut short fails, naming the file)."""

    path: Path
    model: str | None = None
    benchmark: str | None = None
    settle_seconds: float | None = None

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> InspectLogs:
        """`PATH` (the spec `inspect:PATH`); model and benchmark from the options, else each
        log's own."""
        path = spec_target(KIND, body, "a log file or folder", "inspect:logs/")
        return cls(Path(path), options.model, options.benchmark)

    def units(self, store: Store) -> Iterator[Unit]:
        path = existing(self.path)
        if path.is_file():
            yield _log_unit(path, self.model, self.benchmark)
            return
        settle, now = settle_time(self.settle_seconds), time.time()
        for log in log_files(path):
            unit = partial(_log_unit, log, self.model, self.benchmark)
            yield from settled_units(KIND, log, [log], unit, settle, now)


def log_files(folder: Path) -> list[Path]:
    """The Inspect logs in a folder and below it: `.eval` files, and `.json` files that open
    as a log does (eval-set's `logs.json`, other JSON and hidden files are not logs)."""
    return [
        p for p in sorted(folder.rglob("*"))
        if p.name not in _NOT_LOGS and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
        and (p.suffix.lower() == ".eval" or (p.suffix.lower() == ".json" and is_inspect_log(p)))
    ]  # fmt: skip


def benchmark_of(task: str) -> str:
    """The benchmark a task's results go to: its name without a registry prefix."""
    return task.rsplit("/", 1)[-1]


def _log_unit(path: Path, model: str | None, benchmark: str | None) -> Unit:
    if not is_inspect_log(path):
        raise SourceError(f"{path}: not an Inspect log (a .eval zip or a .json log)")
    try:
        head = read_log(path, samples=False)
    except InspectLogError as exc:
        raise SourceError(str(exc)) from None
    if head.status == STARTED:
        return skipped_unit(KIND, path, f"{PENDING} (status started: its run has not ended)")
    if head.status != "success":
        return skipped_unit(KIND, path, f"status {head.status}: eval-set retries it into a new log,"
                                    " read once that succeeds")  # fmt: skip
    name = model or head.model
    bench = benchmark or benchmark_of(head.task)
    key = fingerprint(KIND, name, bench, EPOCH_POLICY, file_sha256(path))
    unit = Unit(KIND, str(path), key, [str(path)], no_stage, frames=(ITEM_HASH_FRAME,),
                id_kind=OPAQUE)  # fmt: skip
    unit.stage = partial(_stage_log, path, name, bench, unit)
    return unit


def _stage_log(
    path: Path, model: str, benchmark: str, unit: Unit, con: duckdb.DuckDBPyConnection
) -> None:
    try:
        log = read_log(path)
    except InspectLogError as exc:
        raise SourceError(str(exc)) from None
    if not log.samples:
        raise SourceError(f"{path}: no samples in this log (was it written with log_samples off?)")
    good, bad = log_rows(log, model, benchmark)
    unit.read_with.clear()
    unit.read_with[log.task] = _read_with(log)
    stage_hashes(con, good)
    stage_frames(con, good, bad)


def log_rows(log: InspectLog, model: str, benchmark: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows in the staging layout with their hash, quarantined samples with the reason)."""
    read = [s for s in log.samples if s.problem is None]
    good = pl.DataFrame(
        {
            "item": [s.item for s in read],
            "correct": [s.correct for s in read],
            "ord": [log.order.get(s.item) for s in read],
            "line": [s.position for s in read],
            "hash": [f"{CONTENT_HASH}:{s.content_hash}" for s in read],
        },
        schema_overrides={"ord": pl.Int64, "line": pl.Int64, "correct": pl.String},
    ).with_columns(model=pl.lit(model), benchmark=pl.lit(benchmark), ref_no=pl.lit(0))
    failed = [s for s in log.samples if s.problem is not None]
    bad = pl.DataFrame(
        {
            "line": [s.position for s in failed],
            "raw": [json.dumps({"id": s.raw_id, "epoch": s.epoch}, default=str) for s in failed],
            "reason": [s.problem for s in failed],
        },
        schema_overrides={"line": pl.Int64, "raw": pl.String, "reason": pl.String},
    ).with_columns(ref_no=pl.lit(0))
    return conform(good, HASHED_SCHEMA), conform(bad, BAD_SCHEMA)


def _read_with(log: InspectLog) -> str:
    """`scorer choice (first epoch of 2; 3 later-epoch samples not read)`."""
    said = f"scorer {log.scorer or 'none'} ({EPOCH_POLICY} of {log.epochs}"
    if log.n_other_epochs:
        said += f"; {log.n_other_epochs:,} later-epoch samples not read"
    return said + ")"


__all__ = [
    "KIND",
    "InspectLogs",
    "benchmark_of",
    "is_inspect_log",
    "log_files",
    "log_rows",
]
