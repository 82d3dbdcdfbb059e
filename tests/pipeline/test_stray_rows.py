"""One bad row never stops a benchmark (issue 46): results that cannot join the matrix (an
item id only a stray row has) are set aside, named with their file, and the rest trains.

Fast: a real DuckDB store in tmp_path and small CSV files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sparseeval.pipeline.store import LongTable, Store, build_matrix, ingest
from sparseeval.pipeline.store.build import joinable

HEADER = "model,benchmark,item,correct\n"


def _grid(path: Path, n_models: int = 12, n_items: int = 10) -> Path:
    rng = np.random.default_rng(0)
    rows = [
        f"org/m{m},arc,{i},{int(rng.random() < 0.5)}"
        for m in range(n_models)
        for i in range(n_items)
    ]
    path.write_text(HEADER + "\n".join(rows) + "\n")
    return path


def _stray(path: Path, model: str, item: str = "9999") -> Path:
    path.write_text(HEADER + f"{model},arc,{item},1\n")
    return path


@pytest.mark.parametrize("model", ["org/m3", "org/newcomer"])
def test_a_stray_item_row_is_set_aside_and_the_rest_trains(store: Store, tmp_path, model):
    ingest(store, LongTable(_grid(tmp_path / "a.csv")))
    ingest(store, LongTable(_stray(tmp_path / "stray.csv", model)))
    m, s = build_matrix(store, "arc")
    assert m.shape == (12, 10) and "9999" not in m.item_ids.tolist()
    assert (s.rows_set_aside, s.items_set_aside, s.items_dropped) == (1, 1, 0)
    assert "set aside 1 result(s) of 1 item(s)" in s.line()
    assert f"item 9999 (1 of {12 + (model == 'org/newcomer')} models)" in s.line()
    assert "stray.csv (1)" in s.line()  # the file it came from


def test_a_complete_new_item_still_joins(store: Store, tmp_path):
    ingest(store, LongTable(_grid(tmp_path / "a.csv", n_items=11)))
    m, s = build_matrix(store, "arc")
    assert m.shape == (12, 11) and s.rows_set_aside == 0 and "set aside" not in s.line()


def test_joinable_keeps_the_plain_policy_when_it_keeps_more():
    present = np.ones((10, 6), bool)
    present[9, 5] = False  # one model lacks one item: drop the model, keep the item
    rows, cols, aside = joinable(present, 0.0)
    assert rows.sum() == 9 and cols.all() and not aside.any()
    present = np.ones((10, 6), bool)
    present[1:, 5] = False  # an item only one model has: set it aside, keep every model
    rows, cols, aside = joinable(present, 0.0)
    assert rows.all() and cols.tolist() == [True] * 5 + [False] and aside.tolist()[-1]
