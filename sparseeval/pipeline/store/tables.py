"""Table sources: long tables (CSV or Parquet: model, benchmark, item, correct) and wide CSV
tables (`model` + one column per item, for one benchmark), staged by DuckDB.

A column `score` is no item: it is each model's reported score in percent (0 to 100), per
row of a wide table, per model and benchmark of a long one (repeated on its rows; blank is
none), stored by `scores` with the definition `as reported in FILE (definition not given)`.

A CSV file must be UTF-8 text (a UTF-8 BOM is fine); rows DuckDB cannot parse become
quarantined lines, a file that cannot be read as the format claimed is a SourceError
naming the file and line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.sniff import compressed_message, delimiter_hint
from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.pipeline.store.csv_quotes import stage_repairing_quotes
from sparseeval.pipeline.store.db import Store, execute, fetch, relation
from sparseeval.pipeline.store.scores import SCORE_FRAME, stage_scores
from sparseeval.pipeline.store.unit import (
    SourceError,
    SpecOptions,
    Unit,
    existing,
    printable_line,
    stage_no_bad,
)

LONG_COLUMNS = ("model", "benchmark", "item", "correct")
SCORE = "score"  # a table's column of reported scores (percent), never an item
LONG_SUFFIXES = (".csv", ".parquet", ".pq")
# Columns that carry each CSV row's number and file line through staging (sql/stage_csv.sql,
# sql/csv_lines.sql) start with this; a file's own column may not.
RESERVED_PREFIX = "sparseeval$"
SAVE_AS_UTF8 = "save the file as UTF-8"


@dataclass
class LongTable:
    """A CSV or Parquet file with columns model, benchmark, item, correct."""

    path: Path
    format: str | None = None

    def units(self, store: Store) -> Iterator[Unit]:
        path = existing(self.path)
        fmt = self.format or ("parquet" if path.suffix.lower() in {".parquet", ".pq"} else "csv")
        if fmt not in {"csv", "parquet"}:
            raise SourceError(f"{path}: unknown long-table format {fmt!r} (csv or parquet)")
        kind = f"long-{fmt}"
        stage = _stage_long_parquet if fmt == "parquet" else _stage_long_csv
        key = fingerprint(kind, file_sha256(path))
        yield Unit(kind, str(path), key, [str(path)], partial(stage, path), frames=(SCORE_FRAME,))


@dataclass
class WideTable:
    """A CSV file with a `model` column and one column per item, for one benchmark."""

    path: Path
    benchmark: str

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> WideTable:
        """`BENCHMARK=file.csv` (the spec `wide:BENCHMARK=file.csv`)."""
        benchmark, _, path = body.partition("=")
        if not benchmark or not path:
            raise SourceError("wide source must be wide:BENCHMARK=path.csv")
        return cls(Path(path), benchmark)

    def units(self, store: Store) -> Iterator[Unit]:
        path = existing(self.path)
        key = fingerprint("wide-csv", self.benchmark, file_sha256(path))
        stage = partial(_stage_wide, path, self.benchmark)
        frames = ("wide_cols", SCORE_FRAME)
        yield Unit("wide-csv", str(path), key, [str(path)], stage, frames=frames)


def _stage_csv_raw(
    con: duckdb.DuckDBPyConnection, path: Path, required: tuple[str, ...]
) -> list[str]:
    """Parse `path` into the temp table `src_raw` and the view `src_raw_lines` (with each
    row's file line); rejected lines become `pre_bad`. A file that is not UTF-8 text (a
    UTF-8 BOM is fine) is refused whole, naming the line of its first bad byte."""
    header = _csv_header(path)
    missing = [c for c in required if c not in header]
    if missing:
        shown = ", ".join(header[:8]) + (" ..." if len(header) > 8 else "")
        hint = delimiter_hint(header)
        raise SourceError(printable_line(
            f"{path}: line 1: missing column(s) {', '.join(missing)} (has: {shown}){hint}"
        ))  # fmt: skip
    seen: set[str] = set()
    repeated = [c for c in header if c in seen or seen.add(c)]
    if repeated:
        raise SourceError(
            printable_line(f"{path}: line 1: repeated column(s) {', '.join(repeated[:5])}")
        )
    reserved = [c for c in header if c.startswith(RESERVED_PREFIX)]
    if reserved:
        raise SourceError(printable_line(f"{path}: line 1: column name {reserved[0]} is reserved"))
    cols = dict.fromkeys(header, "VARCHAR")

    def stage(source: Path) -> None:
        execute(con, "drop_csv_rejects", {})
        execute(con, "stage_csv", {"path": str(source), "cols": cols})

    try:
        stage_repairing_quotes(con, path, stage)
    except duckdb.Error as exc:
        raise SourceError(
            printable_line(f"{path}: not a readable CSV file: {_first_line(exc)}")
        ) from exc
    ((encoding_line,),) = fetch(con, "csv_encoding_reject", {})
    if encoding_line is not None:
        raise SourceError(f"{path}: line {encoding_line}: not UTF-8 text; {SAVE_AS_UTF8}")
    ((n_rows,),) = fetch(con, "count_src_raw", {})
    first_bad, n_bad, msg = fetch(con, "csv_first_reject", {})[0]
    if n_rows == 0 and n_bad:
        raise SourceError(
            printable_line(f"{path}: line {first_bad}: cannot be parsed as CSV ({msg})")
        )
    execute(con, "stage_csv_bad", {})
    execute(con, "csv_lines" if n_bad else "csv_lines_plain", {})
    return header


def _stage_long_csv(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    header = _stage_csv_raw(con, path, LONG_COLUMNS)
    execute(con, "stage_long_csv", {})
    _stage_table_scores(con, path, "table_scores_long" if SCORE in header else None, {})


def _stage_table_scores(
    con: duckdb.DuckDBPyConnection, path: Path, query: str | None, params: dict
) -> None:
    """Stage the table's `score` column as reported scores (none when `query` is None)."""
    if query is None:
        stage_scores(con, None)
        return
    definition = f"as reported in {path.name} (definition not given)"
    stage_scores(con, relation(con, query, params | {"definition": definition}).pl())


def _stage_long_parquet(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    if path.stat().st_size == 0:
        raise SourceError(f"{path}: empty file")
    try:
        rel = relation(con, "read_parquet", {"path": str(path)})
    except duckdb.Error as exc:
        raise SourceError(f"{path}: not a Parquet file: {_first_line(exc)}") from exc
    missing = [c for c in LONG_COLUMNS if c not in rel.columns]
    if missing:
        raise SourceError(f"{path}: missing column(s) {', '.join(missing)}")
    _refuse_nested(path, dict(zip(rel.columns, map(str, rel.types), strict=True)))
    rel.create_view("src_parquet", replace=True)
    execute(con, "stage_long_parquet", {})
    stage_no_bad(con)  # Parquet either reads or fails as a whole
    query = "table_scores_parquet" if SCORE in rel.columns else None
    _stage_table_scores(con, path, query, {})


# Parquet column types that are no id or answer: their text (`[1, 2]`, `{'a': 1}`) is not.
_NOT_SCALAR = ("STRUCT", "MAP", "UNION", "BLOB", "BIT")


def _refuse_nested(path: Path, types: dict[str, str]) -> None:
    """A SourceError naming the first of model/benchmark/item/correct that is not scalar."""
    for col in LONG_COLUMNS:
        kind = types[col]
        if kind.startswith(_NOT_SCALAR) or kind.endswith("]"):  # `INTEGER[]`: a list
            raise SourceError(
                printable_line(f"{path}: column {col} is {kind[:60]}, not text or a number")
            )


def _stage_wide(path: Path, benchmark: str, con: duckdb.DuckDBPyConnection) -> None:
    header = _csv_header(path)
    if "" in header:  # its cells would have no item: refused, never dropped
        raise SourceError(f"{path}: line 1: column {header.index('') + 1} has no name (a wide"
                          " table's column names are its item ids)")  # fmt: skip
    header = _stage_csv_raw(con, path, ("model",))
    items = [c for c in header if c not in ("model", SCORE)]
    con.register("wide_cols", pl.DataFrame({"item": items, "ord": range(len(items))}))
    execute(con, "stage_wide", {"benchmark": benchmark})
    query = "table_scores_wide" if SCORE in header else None
    _stage_table_scores(con, path, query, {"benchmark": benchmark})


def _csv_header(path: Path) -> list[str]:
    """The column names of a CSV file's first line (a UTF-8 BOM before them is dropped)."""
    if path.stat().st_size == 0:
        raise SourceError(f"{path}: empty file")
    if (packed := compressed_message(path)) is not None:
        raise SourceError(printable_line(packed))
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            return [c.strip() for c in next(csv.reader(f))]
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    except (csv.Error, StopIteration) as exc:
        raise SourceError(printable_line(f"{path}: line 1: not a CSV header ({exc})")) from exc


def not_utf8(path: Path) -> SourceError:
    """The error for a file that is not UTF-8 text, naming the line of its first bad byte.

    Lines are decoded one by one: a newline byte never occurs inside a UTF-8 sequence.
    """
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw[exc.start]
                return SourceError(
                    f"{path}: line {n}: not UTF-8 text (byte 0x{byte:02x}); {SAVE_AS_UTF8}"
                )
    return SourceError(f"{path}: not UTF-8 text; {SAVE_AS_UTF8}")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:200]


__all__ = [
    "LONG_COLUMNS",
    "LONG_SUFFIXES",
    "RESERVED_PREFIX",
    "SAVE_AS_UTF8",
    "SCORE",
    "LongTable",
    "WideTable",
    "not_utf8",
]
