"""Build a benchmark's ±1 matrix from the store (integer codes scattered into NumPy).

A binary benchmark's matrix is int8 (0 marks a missing cell while scattering); a graded one
(any stored result with a graded score) is float32, 2*score - 1 (NaN marks a missing cell:
a score of 0.5 is 0), the binary rows among its results read as scores 0 and 1.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import numpy as np
import polars as pl

from sparseeval.consume.answers.responses import BINARY, GRADED
from sparseeval.consume.errors import SettingsError
from sparseeval.method.matrix import MatrixError, ResponseMatrix
from sparseeval.pipeline.store.db import Store, fetch, sql
from sparseeval.pipeline.store.unit import printable_line

log = logging.getLogger(__name__)
BATCH_ROWS = 4_000_000
# What a matrix's targets are: `items` the row mean over the kept items (the paper's
# uniform target), `reported` each model's stored reported score (every kept model must
# have one), `auto` reported when nearly every kept model has one (the few without are
# left out, and the note says how many), else items.
TARGETS = ("auto", "reported", "items")
# `auto`: the share of models that may lack a reported score and be left out (a policy, not
# a measured optimum). One model without a leaderboard row (metabench: 1 of 4,280 on ARC)
# must not switch a benchmark to another target; with many more missing, leaving them out
# would change which models the set learns from, so `auto` falls back to the items.
AUTO_MAX_UNSCORED = 0.05
# `joinable`: at most this many ways of setting rare items aside are weighed (bounds the work)
MAX_ASIDE_LEVELS = 16


@dataclass
class BuildSummary:
    """What the build kept and dropped under the missing-results policy."""

    benchmark: str
    models_stored: int
    items_stored: int
    cells_missing: int
    max_missing_model_frac: float
    models_dropped: int
    items_dropped: int
    shape: tuple[int, int]
    fingerprint: str
    seconds: float
    dropped_model_examples: list[str] = field(default_factory=list)
    target: str = "items"  # what the targets are: `items` or `reported`
    target_definition: str = ""  # the target in words, for the manifest and the report
    target_note: str = ""  # why `auto` fell back to items ('' otherwise)
    # results of items too few models have, left out so that the rest can join (`set_aside`)
    rows_set_aside: int = 0
    items_set_aside: int = 0
    set_aside_note: str = ""  # the items, how many models have them, and their files

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        m, n = self.shape
        return (
            f"{self.benchmark}: {m:,} models x {n:,} items (stored {self.models_stored:,} x"
            f" {self.items_stored:,}, {self.cells_missing:,} missing cells; dropped"
            f" {self.models_dropped:,} models missing > {self.max_missing_model_frac:.0%} of"
            f" items and {self.items_dropped:,} items) fingerprint {self.fingerprint[:12]}"
            f" in {self.seconds:.1f}s; target {self.target}: {self.target_definition}"
            + (f" ({self.target_note})" if self.target_note else "")
            + (f"; {self.set_aside_line()}" if self.rows_set_aside else "")
        )

    def set_aside_line(self) -> str:
        """The results left out because too few models have their items, in words."""
        return (
            f"set aside {self.rows_set_aside:,} result(s) of {self.items_set_aside:,} item(s)"
            f" too few models have ({self.set_aside_note}); the matrix is built from the rest"
            " (`sparseeval quarantine list` shows them, `drop` removes them)"
        )


def build_matrix(
    store: Store, benchmark: str, max_missing_model_frac: float = 0.0, target: str = "items"
) -> tuple[ResponseMatrix, BuildSummary]:
    """The models x items ±1 matrix of one benchmark, in stored item order.

    Missing results: models missing more than `max_missing_model_frac` of the items are
    dropped, then items missing for any remaining model. Raises MatrixError if nothing is left.
    `target` (one of `TARGETS`) chooses the matrix's targets; the summary's `target`,
    `target_definition` and `target_note` say what they are.
    """
    if target not in TARGETS:
        raise SettingsError(f"unknown target {target!r} (one of {', '.join(TARGETS)})")
    t0 = time.perf_counter()
    bid = store.benchmark_id(benchmark)
    items = store.con.sql(sql("build_items"), params={"bid": bid}).pl()
    models = store.con.sql(sql("build_models"), params={"bid": bid}).pl()
    if not len(models) or not len(items):
        raise MatrixError(
            f"{benchmark}: no results stored for this benchmark yet"
            " (`sparseeval ingest` reads some; `sparseeval matrix` lists what the store holds)"
        )
    scale = item_scale_of(store, bid)
    values = _scatter(store, bid, models["model_id"].to_numpy(), items["item_id"].to_numpy(), scale)
    present = _present(values)
    cells_missing = int(present.size - present.sum())
    keep_rows, keep_cols, aside = joinable(present, max_missing_model_frac)
    seen_by = present[:, aside].sum(axis=0)  # models with each set-aside item
    del present
    values = values[np.ix_(keep_rows, keep_cols)] if not keep_cols.all() else values[keep_rows]
    if values.size == 0:
        raise MatrixError(
            f"{benchmark}: no complete models x items left after the missing policy (stored"
            f" {len(models):,} models x {len(items):,} items, {cells_missing:,} cells missing;"
            f" max_missing_model_frac {max_missing_model_frac:g}): each model lacks some item"
            " others have; raise max_missing_model_frac, or see `sparseeval quarantine list`"
        )
    chosen = choose_target(store, bid, models["model_id"].to_numpy()[keep_rows], target)
    rows = keep_rows  # the summary's `models_dropped` counts the missing policy's alone
    if chosen.scored is not None:  # `auto` left out the models without a reported score
        values, rows = values[chosen.scored], _narrow(keep_rows, chosen.scored)
    matrix = ResponseMatrix(
        values,
        models["model"].to_numpy().astype(object)[rows],
        items["item"].to_numpy().astype(object)[keep_cols],
        chosen.scores,
        scale,
    )
    if chosen.scores is None:
        chosen.definition = f"mean over the {matrix.shape[1]:,} stored items"
    summary = BuildSummary(
        benchmark, len(models), len(items), cells_missing, max_missing_model_frac,
        int((~keep_rows).sum()), int((~keep_cols & ~aside).sum()), matrix.shape,
        matrix.fingerprint(), time.perf_counter() - t0,
        models["model"].filter(pl.Series(~keep_rows)).head(5).to_list(),
        chosen.target, chosen.definition, chosen.note, int(seen_by.sum()), int(aside.sum()),
        _aside_note(store, bid, items.filter(pl.Series(aside)), seen_by, len(models)),
    )  # fmt: skip
    log.info("matrix %s", summary.line())
    return matrix, summary


def set_aside_items(
    store: Store, benchmark: str, max_missing_model_frac: float = 0.0
) -> pl.DataFrame:
    """(item_id, item, n_models) of the items whose results the build sets aside (`joinable`)."""
    bid = store.benchmark_id(benchmark)
    items = store.con.sql(sql("build_items"), params={"bid": bid}).pl()
    models = store.con.sql(sql("build_models"), params={"bid": bid}).pl()
    if not len(models) or not len(items):
        return items.with_columns(n_models=pl.lit(0))
    ids = models["model_id"].to_numpy(), items["item_id"].to_numpy()
    present = _present(_scatter(store, bid, *ids, item_scale_of(store, bid)))
    aside = joinable(present, max_missing_model_frac)[2]
    return items.filter(pl.Series(aside)).with_columns(n_models=present[:, aside].sum(axis=0))


@dataclass
class ChosenTarget:
    """The targets of a build: reported scores per kept model, or None for the row mean."""

    target: str
    scores: np.ndarray | None = None
    definition: str = ""
    note: str = ""
    scored: np.ndarray | None = None  # which models have a score, when some were left out


def choose_target(store: Store, bid: int, model_ids: np.ndarray, target: str) -> ChosenTarget:
    """The reported scores of `model_ids` (in order) when `target` asks for them.

    `reported` needs every model to have one (a MatrixError otherwise); `auto` takes them
    when at most `AUTO_MAX_UNSCORED` of the models have none, leaving those out (`scored`
    and the note say so), and falls back to the items' mean otherwise.
    """
    if target == "items":
        return ChosenTarget("items")
    stored = _stored_scores(store, bid)
    by_id = dict(zip(stored["model_id"].to_list(), stored["score"].to_list(), strict=True))
    missing = [int(i) for i in model_ids if int(i) not in by_id]
    names = _names(store, missing)
    why = f"models without a reported score: {len(missing):,} of {len(model_ids):,}"
    if missing and target == "reported":
        raise MatrixError(f"target reported: {why} (e.g. {names}); ingest their scores"
                          " (scores:FILE.csv) or use target items")  # fmt: skip
    if len(missing) == len(model_ids):
        return ChosenTarget("items", note="auto: no model has a reported score, so the target"
                                          " is the items' mean")  # fmt: skip
    if len(missing) > AUTO_MAX_UNSCORED * len(model_ids):
        return ChosenTarget("items", note=f"auto: {why}, so the target is the items' mean")
    chosen = _reported(stored, by_id, model_ids[np.isin(model_ids, missing, invert=True)])
    if missing:
        chosen.scored = np.isin(model_ids, missing, invert=True)
        chosen.note = f"auto: {why} left out (e.g. {names})"
    return chosen


def _names(store: Store, model_ids: list[int]) -> str:
    """The first few names of `model_ids`, comma-separated ('' for none)."""
    if not model_ids:
        return ""
    return ", ".join(n for (n,) in fetch(store.con, "build_score_missing", {"ids": model_ids}))


def _reported(stored: pl.DataFrame, by_id: dict, model_ids: np.ndarray) -> ChosenTarget:
    """The reported scores of `model_ids` (each has one) and their definition in words."""
    used = set(model_ids.tolist())
    defs = stored.filter(pl.col("model_id").is_in(used))["definition"].value_counts(sort=True)
    definition = "; ".join(
        d if len(defs) == 1 else f"{d} ({n:,} models)" for d, n in defs.iter_rows()
    )
    scores = np.array([by_id[int(i)] for i in model_ids], dtype=np.float64)
    return ChosenTarget("reported", scores, definition)


def _narrow(keep: np.ndarray, among_kept: np.ndarray) -> np.ndarray:
    """`keep` (over every model) with only the kept models where `among_kept` is True."""
    out = keep.copy()
    out[np.flatnonzero(keep)[~among_kept]] = False
    return out


def _stored_scores(store: Store, bid: int) -> pl.DataFrame:
    """(model_id, score, definition) of the benchmark; none in a store older than the table
    (opened read-only, its schema was not brought up to date)."""
    try:
        return store.con.sql(sql("build_scores"), params={"bid": bid}).pl()
    except duckdb.CatalogException:
        return pl.DataFrame(schema={"model_id": pl.Int32, "score": pl.Float64,
                                    "definition": pl.String})  # fmt: skip


def item_scale_of(store: Store, bid: int) -> str:
    """`graded` when any stored result of the benchmark has a graded score, else `binary`;
    a store older than graded scores (opened read-only, no `score` column) is binary."""
    try:
        ((graded,),) = fetch(store.con, "build_scale", {"bid": bid})
    except duckdb.BinderException:
        return BINARY
    return GRADED if graded else BINARY


def _scatter(
    store: Store, bid: int, model_ids: np.ndarray, item_ids: np.ndarray, scale: str = BINARY
) -> np.ndarray:
    """Scatter (model_id, item_id, value) rows into a matrix: int8 ±1 with 0 for missing,
    or (graded) float32 2*score - 1 with NaN for missing."""
    row_of = _code_map(model_ids)
    col_of = _code_map(item_ids)
    graded = scale == GRADED
    shape = (len(model_ids), len(item_ids))
    values = np.full(shape, np.nan, dtype=np.float32) if graded else np.zeros(shape, np.int8)
    query = sql("build_cells_graded" if graded else "build_cells")
    reader = store.con.sql(query, params={"bid": bid}).to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        frame = pl.from_arrow(batch)
        rows = row_of[frame["model_id"].to_numpy()]
        cols = col_of[frame["item_id"].to_numpy()]
        if graded:
            values[rows, cols] = 2 * frame["score"].to_numpy() - 1
        else:
            values[rows, cols] = np.where(frame["correct"].to_numpy(), 1, -1).astype(np.int8)
    return values


def _present(values: np.ndarray) -> np.ndarray:
    """The cells `_scatter` filled."""
    return ~np.isnan(values) if values.dtype.kind == "f" else values != 0


def _code_map(ids: np.ndarray) -> np.ndarray:
    """Dense codes: code_of[id] = position of id in `ids` (stored ids are small integers)."""
    code_of = np.full(int(ids.max(initial=0)) + 1, -1, dtype=np.int64)
    code_of[ids] = np.arange(len(ids))
    return code_of


def joinable(
    present: np.ndarray, max_missing_model_frac: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(models kept, items kept, items set aside): `missing_policy` after setting aside the
    items that too few models have, when that keeps a bigger matrix.

    An item can be set aside only when fewer than half as many models have it as have the
    benchmark's most-seen item (a stray id, a row for an item no other model ran); of the
    ways to set such items aside (by how many models have them) the one keeping the most
    cells wins, ties going to setting aside fewer. One stray row then costs its own cell,
    never every model that lacks it.
    """
    seen_by = present.sum(axis=0)
    rare = np.unique(seen_by[seen_by * 2 < seen_by.max(initial=0)])
    if len(rare) > MAX_ASIDE_LEVELS:  # bound the work: evenly spaced levels, the last kept
        rare = rare[np.linspace(0, len(rare) - 1, MAX_ASIDE_LEVELS).round().astype(int)]
    best = (*missing_policy(present, max_missing_model_frac), np.zeros(len(seen_by), bool))
    most = int(best[0].sum()) * int(best[1].sum())
    if not len(rare):
        return best
    gaps = np.nonzero(~present)  # the missing cells, once: each level is then O(gaps)
    for level in rare:
        aside = seen_by <= level
        rows, cols = _policy_on_gaps(gaps, present.shape, aside, max_missing_model_frac)
        if (cells := int(rows.sum()) * int(cols.sum())) > most:
            best, most = (rows, cols, aside), cells
    return best


def _policy_on_gaps(
    gaps: tuple[np.ndarray, np.ndarray], shape: tuple[int, int], aside: np.ndarray, frac: float
) -> tuple[np.ndarray, np.ndarray]:
    """`missing_policy` on the items not `aside`, from the missing cells' (rows, cols); the
    items kept are over every item (False for those set aside)."""
    rows, cols = gaps
    counted = ~aside[cols]
    n_items = int((~aside).sum())
    missing = np.bincount(rows[counted], minlength=shape[0])
    keep_rows = missing <= (frac + 1e-12) * n_items if n_items else np.zeros(shape[0], bool)
    lacking = np.bincount(cols[counted & keep_rows[rows]], minlength=shape[1])
    return keep_rows, (lacking == 0) & ~aside


def _aside_note(
    store: Store, bid: int, items: pl.DataFrame, seen_by: np.ndarray, n_models: int
) -> str:
    """The first set-aside items with how many models have them, and the files they came from."""
    if not len(items):
        return ""
    named = ", ".join(
        f"{printable_line(str(item))} ({int(n):,} of {n_models:,} models)"
        for item, n in zip(items["item"].head(3).to_list(), seen_by[:3], strict=False)
    )
    more = f" and {len(items) - 3:,} more" if len(items) > 3 else ""
    files = fetch(store.con, "build_aside_files", {"bid": bid, "ids": items["item_id"].to_list()})
    said = ", ".join(f"{printable_line(str(ref))} ({n:,})" for ref, n in files)
    return f"item {named}{more}; from {said}" if said else f"item {named}{more}"


def missing_policy(
    present: np.ndarray, max_missing_model_frac: float
) -> tuple[np.ndarray, np.ndarray]:
    """(models kept, items kept): drop models missing > X of items, then incomplete items."""
    n_items = present.shape[1]
    if n_items == 0:
        return np.zeros(present.shape[0], bool), np.zeros(0, bool)
    missing_frac = 1.0 - present.sum(axis=1) / n_items
    keep_rows = missing_frac <= max_missing_model_frac + 1e-12
    keep_cols = present[keep_rows].all(axis=0)
    return keep_rows, keep_cols


__all__ = [
    "AUTO_MAX_UNSCORED",
    "BATCH_ROWS",
    "MAX_ASIDE_LEVELS",
    "TARGETS",
    "BuildSummary",
    "ChosenTarget",
    "build_matrix",
    "choose_target",
    "item_scale_of",
    "joinable",
    "missing_policy",
    "set_aside_items",
]
