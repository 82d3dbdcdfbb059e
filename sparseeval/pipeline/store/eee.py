"""Every Eval Ever records as a store source: a datastore folder watched nightly, or one file.

Each `{uuid}_samples.jsonl` with its aggregate `{uuid}.json` beside it is one unit, read by
the consumer's reader (`consume.answers.eee_answers`: the layout, the item identity and how a
record's score is read). A graded score (0 < score < 1) is stored as the item's graded
score (`sql/validate.sql`); records without a score, a binary score contradicted by
`is_correct` and records of another model than the aggregate's are quarantined with the
reason; each item's `sample_hash` is stored as its content hash (`eee_sample_hash:…`).
Aggregates without a samples file hold no per-item results and are not read.

A folder (a checkout or download of the datastore, `data/{collection}/{developer}/{model}/`)
is read again every night: a file changed within the settle time is pending, a samples
file whose bytes are not the ones its aggregate's checksum names fails (read once they
agree), and content read before is skipped by its fingerprint, so each record lands once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.eee_answers import (
    CONTENT_HASH,
    SAMPLES_SUFFIX,
    Aggregate,
    EeeError,
    EeeRecord,
    aggregate_path,
    check_checksum,
    one_result,
    read_aggregate,
    read_records,
)
from sparseeval.consume.answers.identity import OPAQUE
from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.pipeline.store.db import Store
from sparseeval.pipeline.store.hub import HubClient, default_hub_client
from sparseeval.pipeline.store.item_identity import HASHED_SCHEMA, ITEM_HASH_FRAME, stage_hashes
from sparseeval.pipeline.store.retries import with_retries
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
    failing_unit,
    settle_time,
    settled_units,
    spec_target,
)

KIND = "eee"


@dataclass
class EeeRecords:
    """Every Eval Ever records: a folder in the datastore's layout, or one samples file."""

    path: Path
    benchmark: str | None = None
    settle_seconds: float | None = None

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> EeeRecords | EeeHub:
        """`PATH` (the spec `eee:PATH`), or `hub:ORG/REPO[/FOLDER]` (a datastore repo on
        the Hub); every record's benchmark from the options if given."""
        target = spec_target(KIND, body, "a folder or samples file", "eee:EEE_datastore/data")
        if target.startswith("hub:"):
            return EeeHub.from_spec(target[4:], options)
        return cls(Path(target), options.benchmark)

    def units(self, store: Store) -> Iterator[Unit]:
        path = existing(self.path)
        if path.is_file():
            yield _samples_unit(path, self.benchmark)
            return
        settle, now = settle_time(self.settle_seconds), time.time()
        for samples in sorted(path.rglob(f"*{SAMPLES_SUFFIX}")):
            if any(part.startswith(".") for part in samples.relative_to(path).parts):
                continue
            agg = aggregate_path(samples)
            missing = None if agg.is_file() else f"no {agg.name} beside it"
            unit = partial(_samples_unit, samples, self.benchmark)
            yield from settled_units(KIND, samples, [samples, agg], unit, settle, now, missing)


@dataclass
class EeeHub:
    """A datastore repo on the Hugging Face Hub (`evaleval/EEE_datastore`), pulled
    incrementally: one listing of the head revision's files (with their blob ids) per
    night; a samples file is downloaded only when it or its aggregate changed since it was
    read (its unit key is the pair's blob ids), so a night costs what is new."""

    repo: str
    under: str = "data"
    benchmark: str | None = None
    client: HubClient | None = None

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> EeeHub:
        """`ORG/REPO[/FOLDER]` (FOLDER: `data`, or one collection `data/helm_lite`)."""
        org, _, rest = body.strip().partition("/")
        name, _, under = rest.partition("/")
        if not org or not name:
            raise SourceError(f"eee:hub:{body}: name the repo (eee:hub:evaleval/EEE_datastore)")
        return cls(f"{org}/{name}", under.strip("/") or "data", options.benchmark)

    @property
    def path(self) -> str:  # the source's label (`ingestion.source_label`)
        return f"hub:{self.repo}/{self.under}"

    def units(self, store: Store) -> Iterator[Unit]:
        client = self.client or default_hub_client()
        secret = getattr(client, "token", None)
        sha = with_retries(f"revision of {self.repo}", client.dataset_info, self.repo,
                           secret=secret).sha  # fmt: skip
        listing = with_retries(
            f"listing files of {self.repo}@{sha[:12]}",
            lambda: list(client.list_repo_tree(self.repo, self.under, recursive=True,
                                               repo_type="dataset", revision=sha)),
            secret=secret,
        )  # fmt: skip
        blobs = {e.path: e.blob_id for e in listing if getattr(e, "blob_id", None)}
        for path in sorted(p for p in blobs if p.endswith(SAMPLES_SUFFIX)):
            agg = str(aggregate_path(Path(path)))
            label = f"{self.repo}@{sha[:12]}:{path}"
            if agg not in blobs:
                missing = SourceError(f"{label}: no aggregate beside it")
                yield failing_unit(KIND, Path(label), missing)
                continue
            key = fingerprint(KIND, "hub", self.repo, path, blobs[path], blobs[agg], self.benchmark)
            unit = Unit(KIND, label, key, [f"hf://datasets/{self.repo}@{sha}/{path}"], no_stage,
                        frames=(ITEM_HASH_FRAME,), id_kind=OPAQUE)  # fmt: skip
            unit.stage = partial(self._stage, client, sha, path, unit)
            yield unit

    def _stage(
        self, client: HubClient, sha: str, path: str, unit: Unit, con: duckdb.DuckDBPyConnection
    ) -> None:
        def get(name: str) -> Path:
            return Path(with_retries(
                f"download {self.repo}@{sha[:12]}:{name}", client.hf_hub_download, self.repo,
                name, repo_type="dataset", revision=sha, secret=getattr(client, "token", None),
            ))  # fmt: skip

        agg_file = get(str(aggregate_path(Path(path))))
        samples = get(path)
        try:
            agg = read_aggregate(agg_file)
            check_checksum(samples, agg)
        except EeeError as exc:
            raise SourceError(f"{self.repo}@{sha[:12]}: {exc}") from None
        _stage(samples, agg, self.benchmark, unit, con)


def _samples_unit(samples: Path, benchmark: str | None) -> Unit:
    if not samples.name.endswith(SAMPLES_SUFFIX):
        raise SourceError(f"{samples}: not an EEE samples file ({{uuid}}{SAMPLES_SUFFIX})")
    agg_path = aggregate_path(samples)
    if not agg_path.is_file():
        raise SourceError(f"{samples}: no aggregate {agg_path.name} beside it")
    try:
        agg = read_aggregate(agg_path)
        check_checksum(samples, agg)
    except EeeError as exc:
        raise SourceError(str(exc)) from None
    key = fingerprint(KIND, benchmark, file_sha256(samples), file_sha256(agg_path))
    unit = Unit(KIND, str(samples), key, [str(samples)], no_stage, frames=(ITEM_HASH_FRAME,),
                id_kind=OPAQUE)  # fmt: skip
    unit.stage = partial(_stage, samples, agg, benchmark, unit)
    return unit


def _stage(
    samples: Path, agg: Aggregate, benchmark: str | None, unit: Unit,
    con: duckdb.DuckDBPyConnection,
) -> None:  # fmt: skip
    try:
        records = list(read_records(samples, agg))
    except EeeError as exc:
        raise SourceError(str(exc)) from None
    records, n_other = one_result(records)
    good, bad = record_rows(records, agg.model, benchmark)
    unit.read_with.clear()
    said = "evaluation.score" + (
        f" ({n_other:,} records of other results not read)" if n_other else ""
    )
    for r in records:
        unit.read_with.setdefault(r.benchmark, f"{r.result_id or 'the result'}; {said}")
    stage_hashes(con, good)
    stage_frames(con, good, bad)


def record_rows(
    records: list[EeeRecord], model: str, benchmark: str | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows in the staging layout with their hash, quarantined records with the reason)."""
    problems = [_problem(r, model) for r in records]
    read = [r for r, p in zip(records, problems, strict=True) if p is None]
    good = pl.DataFrame(
        {
            "benchmark": [benchmark or r.benchmark for r in read],
            "item": [r.item for r in read],
            "correct": [r.correct for r in read],
            "line": [r.line for r in read],
            "hash": [f"{CONTENT_HASH}:{r.sample_hash}" if r.sample_hash else None for r in read],
        },
        schema_overrides={"line": pl.Int64, "correct": pl.String, "hash": pl.String,
                          "benchmark": pl.String, "item": pl.String},
    ).with_columns(model=pl.lit(model), ref_no=pl.lit(0))  # fmt: skip
    failed = [(r, p) for r, p in zip(records, problems, strict=True) if p is not None]
    bad = pl.DataFrame(
        {
            "line": [r.line for r, _ in failed],
            "raw": [r.raw for r, _ in failed],
            "reason": [p for _, p in failed],
        },
        schema_overrides={"line": pl.Int64, "raw": pl.String, "reason": pl.String},
    ).with_columns(ref_no=pl.lit(0))
    return conform(good, HASHED_SCHEMA), conform(bad, BAD_SCHEMA)


def _problem(record: EeeRecord, model: str) -> str | None:
    if record.model and record.model != model:
        return f"model_id {record.model[:80]!r} is not the aggregate's ({model[:80]})"
    return record.problem


__all__ = [
    "KIND",
    "EeeHub",
    "EeeRecords",
    "record_rows",
]
