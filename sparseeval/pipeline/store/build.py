"""Build a benchmark's ±1 int8 matrix from the store (integer codes scattered into NumPy)."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from sparseeval.method.matrix import MatrixError, ResponseMatrix
from sparseeval.pipeline.store.db import Store, sql

log = logging.getLogger(__name__)
BATCH_ROWS = 4_000_000


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        m, n = self.shape
        return (
            f"{self.benchmark}: {m:,} models x {n:,} items (stored {self.models_stored:,} x"
            f" {self.items_stored:,}, {self.cells_missing:,} missing cells; dropped"
            f" {self.models_dropped:,} models missing > {self.max_missing_model_frac:.0%} of"
            f" items and {self.items_dropped:,} items) fingerprint {self.fingerprint[:12]}"
            f" in {self.seconds:.1f}s"
        )


def build_matrix(
    store: Store, benchmark: str, max_missing_model_frac: float = 0.0
) -> tuple[ResponseMatrix, BuildSummary]:
    """The models x items ±1 matrix of one benchmark, in stored item order.

    Missing results: models missing more than `max_missing_model_frac` of the items are
    dropped, then items missing for any remaining model. Raises MatrixError if nothing is left.
    """
    t0 = time.perf_counter()
    bid = store.benchmark_id(benchmark)
    items = store.con.sql(sql("build_items"), params={"bid": bid}).pl()
    models = store.con.sql(sql("build_models"), params={"bid": bid}).pl()
    values = _scatter(store, bid, models["model_id"].to_numpy(), items["item_id"].to_numpy())
    present = values != 0
    cells_missing = int(present.size - present.sum())
    keep_rows, keep_cols = missing_policy(present, max_missing_model_frac)
    del present
    values = values[np.ix_(keep_rows, keep_cols)] if not keep_cols.all() else values[keep_rows]
    if values.size == 0:
        raise MatrixError(f"{benchmark}: no complete models x items left after the missing policy")
    matrix = ResponseMatrix(
        values,
        models["model"].to_numpy().astype(object)[keep_rows],
        items["item"].to_numpy().astype(object)[keep_cols],
    )
    summary = BuildSummary(
        benchmark, len(models), len(items), cells_missing, max_missing_model_frac,
        int((~keep_rows).sum()), int((~keep_cols).sum()), matrix.shape, matrix.fingerprint(),
        time.perf_counter() - t0,
        models["model"].filter(pl.Series(~keep_rows)).head(5).to_list(),
    )  # fmt: skip
    log.info("matrix %s", summary.line())
    return matrix, summary


def _scatter(store: Store, bid: int, model_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray:
    """Scatter (model_id, item_id, correct) rows into an int8 matrix; 0 marks missing."""
    row_of = _code_map(model_ids)
    col_of = _code_map(item_ids)
    values = np.zeros((len(model_ids), len(item_ids)), dtype=np.int8)
    reader = store.con.sql(sql("build_cells"), params={"bid": bid}).to_arrow_reader(BATCH_ROWS)
    for batch in reader:
        frame = pl.from_arrow(batch)
        rows = row_of[frame["model_id"].to_numpy()]
        cols = col_of[frame["item_id"].to_numpy()]
        values[rows, cols] = np.where(frame["correct"].to_numpy(), 1, -1).astype(np.int8)
    return values


def _code_map(ids: np.ndarray) -> np.ndarray:
    """Dense codes: code_of[id] = position of id in `ids` (stored ids are small integers)."""
    code_of = np.full(int(ids.max(initial=0)) + 1, -1, dtype=np.int64)
    code_of[ids] = np.arange(len(ids))
    return code_of


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
