"""The unit of ingest: one file, folder or Hub repo revision, staged as rows to validate."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.identity import OPAQUE
from sparseeval.consume.errors import SparseEvalError
from sparseeval.pipeline.store.db import execute

# Staging contract shared by every source (see sql/validate.sql).
SRC_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "item": pl.String,
    "correct": pl.String,
    "ord": pl.Int64,
    "line": pl.Int64,
    "ref_no": pl.Int32,
}
BAD_SCHEMA = {"line": pl.Int64, "raw": pl.String, "reason": pl.String, "ref_no": pl.Int32}

Stager = Callable[[duckdb.DuckDBPyConnection], None]
Recorder = Callable[[duckdb.DuckDBPyConnection, int], None]


class SourceError(SparseEvalError, ValueError):
    """A whole file cannot be read as the format claimed; names the file (and line)."""


@dataclass
class Unit:
    """One thing to ingest atomically.

    `stage(con)` creates the temp views `src` and `pre_bad` (rows the reader could not
    parse); `refs[ref_no]` is each row's provenance; `key` identifies the content, so the
    same content is never ingested twice; `record` adds source-specific bookkeeping in
    the same transaction; `skip` says why there is nothing to read.
    """

    kind: str
    label: str
    key: str
    refs: list[str]
    stage: Stager
    record: Recorder | None = None
    skip: str | None = None
    notes: dict[str, int] = field(default_factory=dict)
    # What each part was read with, filled while staging (lm-eval: {task: "acc_norm"}); it
    # becomes the run's message, so `sparseeval ingest` and `ingest_runs` show it.
    read_with: dict[str, str] = field(default_factory=dict)
    # Frames the stager registered on the connection besides `src_frame` / `pre_bad_frame`
    # (e.g. `wide_cols`); they are unregistered after the unit, whatever happened.
    frames: tuple[str, ...] = ()
    # What the unit's item ids are (`consume.answers.identity`): lm-eval doc ids, leaderboard rows,
    # or opaque (tables: ids whose meaning the source does not say).
    id_kind: str = OPAQUE


@dataclass(frozen=True)
class SpecOptions:
    """What a source spec string leaves to its caller (`sources.parse_source`'s arguments).

    fmt: a plain path's format (`auto`, `long`, `wide`, `lm-eval`); benchmark: a wide
    table's benchmark; model: an lm-eval run's model; hub_max_repos: new Hub repos per run.
    """

    fmt: str = "auto"
    benchmark: str | None = None
    model: str | None = None
    hub_max_repos: int = 200


def no_stage(con: duckdb.DuckDBPyConnection) -> None:
    """The stager of a unit that is skipped, or whose stager is set once the unit exists."""
    raise RuntimeError("skipped unit has nothing to stage")


def existing(path: Path | str) -> Path:
    """`path` as a Path; a SourceError naming it when there is nothing there."""
    path = Path(path)
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    return path


def stage_frames(
    con: duckdb.DuckDBPyConnection, rows: pl.DataFrame | None, bad: pl.DataFrame | None = None
) -> None:
    """Stage Polars frames (in the `SRC_SCHEMA` / `BAD_SCHEMA` layouts) as `src` / `pre_bad`."""
    rows = conform(rows, SRC_SCHEMA)
    bad = conform(bad, BAD_SCHEMA)
    con.register("src_frame", rows)
    con.register("pre_bad_frame", bad)
    execute(con, "stage_frames", {})
    execute(con, "stage_frames_bad", {})


def stage_no_bad(con: duckdb.DuckDBPyConnection) -> None:
    """An empty `pre_bad` view, for readers that reject nothing themselves."""
    con.register("pre_bad_frame", pl.DataFrame(schema=BAD_SCHEMA))
    execute(con, "stage_frames_bad", {})


def conform(frame: pl.DataFrame | None, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """`frame` with exactly `schema`'s columns and types (missing ones null)."""
    if frame is None:
        return pl.DataFrame(schema=schema)
    cols = [
        (pl.col(c) if c in frame.columns else pl.lit(None)).cast(t).alias(c)
        for c, t in schema.items()
    ]
    return frame.select(cols)


def printable_line(text: object) -> str:
    """`text` with control and format characters escaped (`\\x1b`, `\\u202e`), on one line.

    For every message built from file content (headers, names, raw lines) before it
    reaches a terminal, a log or the store: an escape sequence in a file's header must not
    retitle or clear the user's terminal. Letters of every script are kept as they are.
    """
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ascii(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


__all__ = [
    "BAD_SCHEMA",
    "SRC_SCHEMA",
    "Recorder",
    "SourceError",
    "SpecOptions",
    "Stager",
    "Unit",
    "conform",
    "existing",
    "no_stage",
    "printable_line",
    "stage_frames",
    "stage_no_bad",
]
