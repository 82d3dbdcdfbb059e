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


# -- quarantine: named once, held once ------------------------------------------------------


def _unknown(path: Path, n: int = 7) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "".join(f"org/a,nosuch,{i},1\n" for i in range(n)))
    return path


def test_re_reading_the_same_bytes_does_not_grow_the_quarantine(store: Store, tmp_path):
    path = _unknown(tmp_path / "u.csv")
    for _ in range(3):  # a quarantined file is read again (its benchmark may be added since)
        (r,) = ingest(store, LongTable(path))
        assert r.status == "quarantined" and r.n_quarantined == 7
    assert store.scalar("count_quarantine") == 7


def test_an_inbox_file_quarantined_whole_is_named_and_set_aside_once(tmp_path):
    import os

    from sparseeval.pipeline.sources import ingest_sources
    from sparseeval.pipeline.store.watched import Inbox

    inbox = tmp_path / "inbox"
    old = 1_000_000_000
    for path in (_unknown(inbox / "u.csv"), _grid(inbox / "a.csv")):
        os.utime(path, (old, old))
    first = ingest_sources(tmp_path / "s.duckdb", [Inbox(inbox)])
    (held,) = first.sources[0]["quarantine"]
    assert held == {
        "unit": str(inbox / "u.csv"),
        "count": 7,
        "reason": "7 unknown benchmark: nosuch",
    }
    assert f"- {inbox / 'u.csv'}: 7 (7 unknown benchmark: nosuch)" in first.markdown()
    assert (inbox / "failed" / "u.csv").is_file() and not (inbox / "u.csv").exists()
    said = next(line for line in first.lines if "u.csv" in line)
    assert f"(once fixed: sparseeval quarantine release {inbox / 'failed' / 'u.csv'})" in said
    second = ingest_sources(tmp_path / "s.duckdb", [Inbox(inbox)])
    assert second.quarantined == 0 and not second.sources[0]["quarantine"]
    assert "7 quarantined (u.csv: 7 unknown benchmark: nosuch)" in first.line()
    with Store.open(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.scalar("count_quarantine") == 7


def test_a_scores_table_read_as_answers_is_refused_whole(store: Store, tmp_path):
    from sparseeval.pipeline.store import WideTable

    path = tmp_path / "leaderboard.csv"  # booleans beside the scores: taken for items before
    rows = "".join(f"org/m{i},{40 + i}.5,{70 + i}.1,6{i}.2,True,False\n" for i in range(9))
    path.write_text("model,arc,hellaswag,mmlu,complete,merged\n" + rows)
    (r,) = ingest(store, WideTable(path, "arc"), keep_going=True)
    assert r.status == "failed" and "27 of 45 values are no correctness value" in r.message
    assert "not a table of per-item answers, nothing stored" in r.message
    assert "scores:FILE" in r.message and store.scalar("count_quarantine") == 0
    assert store.con.execute("SELECT count(*) FROM results").fetchone() == (0,)


def test_nothing_complete_says_what_is_stored_and_what_to_do(store: Store, tmp_path):
    from sparseeval.method.matrix import MatrixError

    path = tmp_path / "holes.csv"  # each model lacks another item, each item 2 of 3 models
    path.write_text(HEADER + "".join(f"org/m{m},arc,{i},1\n"
                                     for m in range(3) for i in range(3) if i != m))  # fmt: skip
    ingest(store, LongTable(path))
    with pytest.raises(MatrixError) as caught:
        build_matrix(store, "arc")
    said = str(caught.value)
    assert "stored 3 models x 3 items, 3 cells missing" in said
    assert "raise max_missing_model_frac, or see `sparseeval quarantine list`" in said


def test_the_policy_on_missing_cells_is_the_missing_policy_on_the_rest():
    from sparseeval.pipeline.store.build import _policy_on_gaps, missing_policy

    rng = np.random.default_rng(1)
    for _ in range(500):
        m, n = rng.integers(1, 9, size=2)
        present, aside = rng.random((m, n)) < rng.random(), rng.random(n) < 0.3
        frac = float(rng.choice([0.0, 0.1, 0.25, 0.5, 1.0]))
        rows, cols = missing_policy(present[:, ~aside], frac)
        full = np.zeros(n, bool)
        full[np.flatnonzero(~aside)[cols]] = True
        got = _policy_on_gaps(np.nonzero(~present), present.shape, aside, frac)
        assert np.array_equal(got[0], rows) and np.array_equal(got[1], full)
