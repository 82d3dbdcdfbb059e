"""`scores:FILE`: a CSV file of reported scores, in percent (0 to 100), as a store source.

Two layouts, told apart by the header:

- long: columns `model, benchmark, score` and optionally `definition` (the score's
  definition in words; without one it is `as reported in FILE (definition not given)`);
- leaderboard: a `model` or `name` column and one column per Open LLM Leaderboard v1
  benchmark (`arc, hellaswag, mmlu, truthfulqa, winogrande, gsm8k`; others such as
  `avg` or `params` are ignored), as metabench's `open-llm-leaderboard.csv`; each value
  gets that benchmark's leaderboard definition (`scores.v1_definitions`). An empty
  cell is no score (the model was not evaluated there), not a bad one.

Scores are percent, as leaderboards publish them; a fraction such as 0.62 would be read
as 0.62 percent, so a file of fractions must be multiplied by 100 first: a benchmark whose
every score in the file (at least `MIN_FRACTION_ROWS`) is at most 1 is quarantined as
fractions in a percent column, and so is a single score that the model's own items say is
a fraction (`contradiction`), and scores at most 1 mixed among a benchmark's percents
(`consume.scales.fractions_among_percents`). A score that is not a number or lies outside 0..100 is
quarantined with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.ids import IdError, check_benchmark_name
from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.consume.scales import fractions_among_percents
from sparseeval.pipeline.store.db import Store
from sparseeval.pipeline.store.scores import SCORE_FRAME, stage_scores, v1_definitions
from sparseeval.pipeline.store.tables import not_utf8
from sparseeval.pipeline.store.unit import (
    SourceError,
    SpecOptions,
    Unit,
    existing,
    printable_line,
    stage_frames,
)

LONG_SCORE_COLUMNS = ("model", "benchmark", "score")
MIN_FRACTION_ROWS = 5  # a benchmark's scores, all at most 1: fractions in a percent column


@dataclass
class ScoresFile:
    """A CSV file of reported scores in percent (long or leaderboard layout, see module)."""

    path: Path
    benchmark: str | None = None  # `scores:BENCH=FILE`: a model,score file of one benchmark

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> ScoresFile:
        """`FILE` (the spec `scores:FILE`), or `BENCH=FILE` (model,score rows of BENCH, as
        `wide:BENCH=FILE` names its benchmark)."""
        if not body.strip():
            raise SourceError("scores source must be scores:FILE.csv or scores:BENCH=FILE.csv")
        name, eq, rest = body.partition("=")
        if eq and name and not Path(body).exists():
            try:
                return cls(Path(rest), check_benchmark_name(name.strip()))
            except IdError as exc:
                raise SourceError(f"scores:{printable_line(body)}: {exc}") from None
        return cls(Path(body))

    def units(self, store: Store) -> Iterator[Unit]:
        path = existing(self.path)
        key = fingerprint("scores-csv", file_sha256(path), *filter(None, [self.benchmark]))
        stage = partial(_stage_scores_file, path, self.benchmark)
        yield Unit("scores-csv", str(path), key, [str(path)], stage, frames=(SCORE_FRAME,))


def looks_like_scores(header: set[str]) -> bool:
    """Whether a CSV header is a scores table's (either layout), not per-item results."""
    if {"item", "correct"} & header:
        return False
    leaderboard = {"model", "name"} & header and len(set(v1_definitions()) & header) >= 2
    return set(LONG_SCORE_COLUMNS) <= header or bool(leaderboard)


def _stage_scores_file(path: Path, benchmark: str | None, con: duckdb.DuckDBPyConnection) -> None:
    stage_frames(con, None)  # no per-item rows
    stage_scores(con, read_scores_csv(path, benchmark))


def read_scores_csv(path: Path, benchmark: str | None = None) -> pl.DataFrame:
    """The file's scores in the `scores.SCORE_SCHEMA` layout (percent, scale 100); with
    `benchmark`, a `model,score` file's rows are that benchmark's."""
    frame = _read_strings(path)
    cols = set(frame.columns)
    if benchmark is not None:
        if not {"model", "score"} <= cols or "benchmark" in cols:
            raise SourceError(printable_line(
                f"{path}: line 1: scores:{benchmark}=FILE takes columns model,score (has:"
                f" {', '.join(frame.columns[:8])}); a file naming its benchmarks is scores:FILE"
            ))  # fmt: skip
        frame = frame.with_columns(benchmark=pl.lit(benchmark))
        cols.add("benchmark")
    if set(LONG_SCORE_COLUMNS) <= cols:
        long = frame.with_row_index("line", offset=2)
        if "definition" not in cols:
            long = long.with_columns(
                definition=pl.lit(f"as reported in {path.name} (definition not given)")
            )
        scores = long.select(*LONG_SCORE_COLUMNS, "definition", "line").with_columns(
            scale=pl.lit(100.0), ref_no=pl.lit(0)
        )
        return fractions_refused(scores, path.name)
    model = next((c for c in ("model", "name") if c in cols), None)
    definitions = v1_definitions()
    benchmarks = [c for c in definitions if c in cols]
    if model is None or not benchmarks:
        shown = ", ".join(frame.columns[:8]) + (" ..." if len(frame.columns) > 8 else "")
        raise SourceError(
            printable_line(
                f"{path}: line 1: not a scores table: need columns model, benchmark, score"
                f" (optional definition), or model/name and leaderboard columns"
                f" ({', '.join(definitions)}); has: {shown}"
            )
        )
    columns = {b: definitions[b] for b in benchmarks}
    return fractions_refused(_melt_leaderboard(frame, model, columns), path.name)


def fractions_refused(scores: pl.DataFrame, name: str) -> pl.DataFrame:
    """`scores` with a `refusal` for every row of a benchmark whose scores are all at most
    1 (at least `MIN_FRACTION_ROWS` of them, not all 0): fractions in a percent column."""
    number = pl.col("score").str.strip_chars().cast(pl.Float64, strict=False)
    per = (
        scores.with_columns(number=number)
        .group_by("benchmark")
        .agg(n=pl.col("number").is_not_null().sum(), top=pl.col("number").max())
    )
    bad = per.filter(
        (pl.col("n") >= MIN_FRACTION_ROWS) & (pl.col("top") <= 1) & (pl.col("top") > 0)
    )
    why = pl.format(
        "every {} score in {} is at most 1 ({} rows): fractions in a percent column?"
        " (multiply by 100)", pl.col("benchmark"), pl.lit(name), pl.col("n"),
    )  # fmt: skip
    refusals = bad.select("benchmark", refusal=why)
    joined = scores.join(refusals, on="benchmark", how="left", maintain_order="left")
    mixed = pl.Series("mixed", _mixed(joined, name), dtype=pl.String)
    return joined.with_columns(refusal=pl.coalesce("refusal", mixed))


def _mixed(scores: pl.DataFrame, name: str) -> list[str | None]:
    """Per row, why it is refused as a fraction among a benchmark's percent scores in the
    file (`consume.scales.fractions_among_percents`), else None."""
    numbers = scores["score"].str.strip_chars().cast(pl.Float64, strict=False).to_list()
    out: list[str | None] = [None] * len(numbers)
    rows: dict[str, list[int]] = {}
    for i, (benchmark, value) in enumerate(zip(scores["benchmark"], numbers, strict=True)):
        if value is not None:
            rows.setdefault(benchmark, []).append(i)
    for benchmark, at in rows.items():
        values = [numbers[i] for i in at]
        found = fractions_among_percents(values)
        for j in found:
            out[at[j]] = (
                f"{benchmark} score {values[j]:g} is at most 1 among percents up to"
                f" {max(values):g} in {name} ({len(found):,} such): a fraction? write it in"
                " percent"
            )
    return out


def _melt_leaderboard(frame: pl.DataFrame, model: str, columns: dict[str, str]) -> pl.DataFrame:
    """One row per (model, leaderboard column) with a non-empty cell; columns: {column:
    its definition}."""
    long = (
        frame.with_row_index("line", offset=2)
        .select(pl.col(model).alias("model"), "line", *columns)
        .unpivot(index=["model", "line"], variable_name="benchmark", value_name="score")
        .filter(pl.col("score").is_not_null() & (pl.col("score").str.strip_chars() != ""))
    )
    return long.with_columns(
        definition=pl.col("benchmark").replace_strict(columns),
        scale=pl.lit(100.0),
        ref_no=pl.lit(0),
    ).sort("line", "benchmark")


def _read_strings(path: Path) -> pl.DataFrame:
    """Every column as text (a UTF-8 BOM is fine); a SourceError naming the file otherwise."""
    raw = path.read_bytes()
    if not raw.strip():
        raise SourceError(f"{path}: empty file")
    try:
        raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    try:
        frame = pl.read_csv(raw.removeprefix(b"\xef\xbb\xbf"), infer_schema=False)
    except pl.exceptions.PolarsError as exc:
        first = str(exc).strip().splitlines()[0][:200]
        raise SourceError(printable_line(f"{path}: not a readable CSV file: {first}")) from exc
    return frame.rename({c: c.strip() for c in frame.columns})


__all__ = [
    "LONG_SCORE_COLUMNS",
    "MIN_FRACTION_ROWS",
    "ScoresFile",
    "fractions_refused",
    "looks_like_scores",
    "read_scores_csv",
]
