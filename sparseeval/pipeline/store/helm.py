"""HELM raw runs as a store source: a release folder (`benchmark_output/runs/{release}/`) or
one run folder, read again every night.

One run folder is one unit, read as `consume.answers.helm_answers` reads a run (its model,
benchmark, items, content hashes, the unperturbed first trial, the run's binary metric;
that module cites the layout). A fractional mean (`exact_match@5`) is stored as a graded
score (`sql/validate.sql`). A run folder without `per_instance_stats.json` yet, or changed
within the settle time, is pending.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.helm_answers import (
    SPEC,
    STATS,
    HelmError,
    RunSpec,
    read_rows,
    read_spec,
    run_folders,
)
from sparseeval.consume.answers.identity import OPAQUE
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
    settle_time,
    settled_units,
    spec_target,
)

KIND = "helm"


@dataclass
class HelmRuns:
    """HELM run folders: a release folder (each `*/run_spec.json` below it) or one run."""

    path: Path
    benchmark: str | None = None
    settle_seconds: float | None = None

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> HelmRuns:
        """`PATH` (the spec `helm:PATH`); every run's benchmark from the options if given."""
        path = spec_target(KIND, body, "a release or run folder", "helm:benchmark_output/runs/v1")
        return cls(Path(path), options.benchmark)

    def units(self, store: Store) -> Iterator[Unit]:
        root = existing(self.path)
        if not (runs := run_folders(root)):
            raise SourceError(f"{root}: no HELM run folder (with {SPEC}) in it")
        settle, now = settle_time(self.settle_seconds), time.time()
        for run in runs:
            files = [p for p in run.iterdir() if p.is_file()]
            missing = None if (run / STATS).is_file() else f"no {STATS} yet"
            unit = partial(_run_unit, run, self.benchmark)
            yield from settled_units(KIND, run, files, unit, settle, now, missing)


def _run_unit(run: Path, benchmark: str | None) -> Unit:
    spec = _read(read_spec, run, benchmark)
    files = [run / SPEC, run / STATS, *([spec.content] if spec.content else [])]
    key = fingerprint(KIND, spec.benchmark, *(f"{p.name}:{file_sha256(p)}" for p in files))
    unit = Unit(KIND, str(run), key, [str(run / STATS)], no_stage, frames=(ITEM_HASH_FRAME,),
                id_kind=OPAQUE)  # fmt: skip
    unit.stage = partial(_stage, spec, unit)
    return unit


def _stage(spec: RunSpec, unit: Unit, con: duckdb.DuckDBPyConnection) -> None:
    read = _read(read_rows, spec)
    good = conform(
        pl.DataFrame(read.rows, schema=["item", "correct", "line", "hash"], orient="row")
        .with_columns(model=pl.lit(spec.model), benchmark=pl.lit(spec.benchmark),
                      ref_no=pl.lit(0)),
        HASHED_SCHEMA,
    )  # fmt: skip
    rejected = pl.DataFrame(read.bad, schema=["line", "raw", "reason"], orient="row")
    unit.read_with.clear()
    unit.read_with[spec.benchmark] = (
        f"{read.metric or 'no binary metric'} (unperturbed, first trial"
        + (f"; {read.skipped:,} perturbed or later-trial entries not read)" if read.skipped
           else ")")
    )  # fmt: skip
    stage_hashes(con, good)
    stage_frames(con, good, conform(rejected.with_columns(ref_no=pl.lit(0)), BAD_SCHEMA))


def _read(reader, *args):
    """`reader(*args)`, a HelmError as the SourceError a unit fails with."""
    try:
        return reader(*args)
    except HelmError as exc:
        raise SourceError(str(exc)) from None


__all__ = [
    "KIND",
    "HelmRuns",
]
