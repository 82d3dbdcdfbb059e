"""Reading one revision of an Open LLM Leaderboard details repo: which files, and their rows.

v1 repos hold one parquet file per config and run; the dataset card's `latest` split names
the newest. v2 repos hold lm-eval samples files (read like `lm_eval_run.read_samples`).
Only files not ingested before are downloaded; the Hub calls themselves (with retries)
are the caller's (`hub.OpenLLMLeaderboard`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import yaml

from sparseeval.consume.lm_eval.samples import newest_samples, samples_task
from sparseeval.consume.lm_eval.taskmap import TaskMap, map_lm_eval_task, map_v1_config
from sparseeval.pipeline.store.db import fetch
from sparseeval.pipeline.store.item_identity import HASHED_SCHEMA, stage_hashes
from sparseeval.pipeline.store.lm_eval_run import read_samples
from sparseeval.pipeline.store.scores import (
    n_choices,
    results_files,
    stage_scores,
    v1_scores,
    v2_scores,
)
from sparseeval.pipeline.store.unit import (
    BAD_SCHEMA,
    SourceError,
    Unit,
    conform,
    stage_frames,
)

HUB_FILES_FRAME = "unit_hub_files"  # the files a unit read, for sql/hub_record.sql


@dataclass(frozen=True)
class Revision:
    """One revision of a details repo, with the (retried) calls that list and fetch its files."""

    repo: str
    sha: str
    model: str
    version: str
    list_files: Callable[[], list[str]]
    download: Callable[[str], Path]


def stage_revision(rev: Revision, unit: Unit, con: duckdb.DuckDBPyConnection) -> None:
    """Stage the rows of the revision's files not read before; note them as `unit_hub_files`."""
    files = rev.list_files()
    done = {row[0] for row in fetch(con, "hub_files", {"repo": rev.repo})}
    wanted = _v1_files(rev, files) if rev.version == "v1" else _v2_files(files)
    new = [(path, task) for path, task in wanted if path not in done]
    rows, choices = [], {}
    for ref_no, (path, task) in enumerate(new):
        local = _fetch(rev, unit, path)
        if rev.version == "v1":
            rows.append(read_v1_parquet(local, task, rev.model, ref_no))
        else:  # v2 samples: the metric read per task is recorded in the ingest report
            rows.append(read_samples(local, task, rev.model, ref_no, read_with=unit.read_with))
            choices[samples_task(path)[0]] = n_choices(local)  # type: ignore[index]
    good = pl.concat([r[0] for r in rows]) if rows else None
    bad = pl.concat([r[1] for r in rows]) if rows else None
    stage_hashes(con, good)
    stage_frames(con, good, bad)
    results = [p for p in results_files(files) if p not in done]
    read = [(_fetch(rev, unit, p), len(unit.refs) - 1) for p in results]
    known = {t: k for t, k in choices.items() if k}
    scores = (
        v1_scores(read, rev.model) if rev.version == "v1" else v2_scores(read, known, rev.model)
    )
    stage_scores(con, scores)
    paths = [p for p, _ in new] + results
    con.register(HUB_FILES_FRAME, pl.DataFrame({"path": paths}, schema={"path": pl.String}))


def _fetch(rev: Revision, unit: Unit, path: str) -> Path:
    """Download one file of the revision and note it as the unit's next source ref."""
    local = rev.download(path)
    unit.refs.append(f"{rev.repo}@{rev.sha}:{path}")
    return local


def _v1_files(rev: Revision, files: list[str]) -> list[tuple[str, TaskMap]]:
    """The `latest` parquet file of each config we know, per the dataset card."""
    card = rev.download("README.md")
    out = []
    for config, patterns in card_latest(card).items():
        task = map_v1_config(config)
        matches = sorted(f for f in files for p in patterns if fnmatch.fnmatchcase(f, p))
        if task and matches:
            out.append((matches[-1], task))
    return out


def card_latest(card: Path) -> dict[str, list[str]]:
    """{config name: path patterns of its `latest` split} from a dataset card's YAML header."""
    text = card.read_text(encoding="utf-8")
    m = re.match(r"---\s*\n(.*?)\n---", text, flags=re.DOTALL)
    if not m:
        raise SourceError(f"{card}: dataset card has no YAML header")
    meta = yaml.safe_load(m.group(1)) or {}
    out: dict[str, list[str]] = {}
    for cfg in meta.get("configs", []):
        for split in cfg.get("data_files", []):
            if split.get("split") == "latest":
                paths = split.get("path")
                out[cfg["config_name"]] = [paths] if isinstance(paths, str) else list(paths)
    return out


def _v2_files(files: list[str]) -> list[tuple[str, TaskMap]]:
    """The newest samples file of each leaderboard task."""
    latest = newest_samples(files)
    return [
        (f, map_lm_eval_task(task))
        for task, f in sorted(latest.items())
        if task.startswith("leaderboard_")
    ]


def read_v1_parquet(
    path: Path, task: TaskMap, model: str, ref_no: int = 0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows of one v1 details parquet file: one row per item, in the benchmark's order."""
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:
        raise SourceError(f"{path}: not a Parquet file ({exc})") from exc
    value = _metric_column(frame, task.metrics[0], path)
    n = frame.height
    rows = pl.DataFrame({
        "model": [model] * n,
        "benchmark": [task.benchmark] * n,
        "item": [task.item(i) for i in range(n)],
        "correct": frame.select(value.cast(pl.String)).to_series(),
        "ord": pl.Series(range(n) if task.subject is None else [None] * n, dtype=pl.Int64),
        "line": range(1, n + 1),
        "hash": frame.with_columns(_hash_column(frame).alias("_hash"))["_hash"],
    }).with_columns(ref_no=pl.lit(ref_no))  # fmt: skip
    return conform(rows, HASHED_SCHEMA), conform(None, BAD_SCHEMA)


# A details row's content hash, first found: lighteval's per-doc `hashes` struct (its
# `DetailsLogger.Hash`: `example` = xxh64 of the query, `full_prompt` = of the few-shot
# prompt; src/lighteval/logging/info_loggers.py), or such a field flattened to a column.
_HASH_FIELDS = ("example", "full_prompt")


def _hash_column(frame: pl.DataFrame) -> pl.Expr:
    """`name:value` of the row's content hash, or null when the file has none."""
    dtype = frame.schema.get("hashes")
    fields = [f.name for f in dtype.fields] if isinstance(dtype, pl.Struct) else []
    for name in _HASH_FIELDS:
        if name in fields:
            value = pl.col("hashes").struct.field(name)
        elif f"hashes.{name}" in frame.columns:
            value = pl.col(f"hashes.{name}")
        else:
            continue
        return pl.lit(f"{name}:") + value.cast(pl.String)
    return pl.lit(None, dtype=pl.String)


def _metric_column(frame: pl.DataFrame, metric: str, path: Path) -> pl.Expr:
    """The metric as column `acc`, column `metrics.acc`, or field of a `metrics` struct."""
    if metric in frame.columns:
        return pl.col(metric)
    if f"metrics.{metric}" in frame.columns:
        return pl.col(f"metrics.{metric}")
    dtype = frame.schema.get("metrics")
    if isinstance(dtype, pl.Struct) and metric in [f.name for f in dtype.fields]:
        return pl.col("metrics").struct.field(metric)
    raise SourceError(f"{path}: no column {metric}, metrics.{metric} or metrics struct field")


__all__ = [
    "HUB_FILES_FRAME",
    "Revision",
    "card_latest",
    "read_v1_parquet",
    "stage_revision",
]
