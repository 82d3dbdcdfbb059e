"""The results store: idempotence, transactions, history, locking, drift queries, matrices."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from sparseeval.method.matrix import MatrixError
from sparseeval.pipeline.store import (
    LongTable,
    Store,
    StoreError,
    StoreLockedError,
    build_matrix,
    ingest,
)
from sparseeval.pipeline.store import ingestion as ingest_module
from sparseeval.pipeline.store.build import missing_policy

TABLES = ("results", "result_history", "models", "items", "quarantine", "source_refs")


def write_long(path: Path, rows: list[tuple]) -> Path:
    lines = ["model,benchmark,item,correct"] + [",".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def grid(models: list[str], n_items: int, value=lambda m, i: (m + i) % 2) -> list[tuple]:
    return [(name, "arc", i, value(m, i)) for m, name in enumerate(models) for i in range(n_items)]


def counts(store: Store) -> dict[str, int]:
    return {t: store.con.sql(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}


def test_same_file_twice_changes_nothing_and_says_so(store, tmp_path):
    path = write_long(tmp_path / "a.csv", grid(["org/a", "org/b"], 5))
    (first,) = ingest(store, LongTable(path))
    before = counts(store)
    (second,) = ingest(store, LongTable(path))
    assert first.status == "ok" and first.n_new == 10
    assert second.status == "skipped" and "already ingested" in second.message
    assert counts(store) == before
    (forced,) = ingest(store, LongTable(path), force=True)
    assert (forced.n_new, forced.n_updated, forced.n_unchanged) == (0, 0, 10)
    assert counts(store)["results"] == 10 and counts(store)["result_history"] == 0


def test_newer_value_replaces_current_and_keeps_history(store, tmp_path):
    ingest(store, LongTable(write_long(tmp_path / "a.csv", grid(["org/a"], 3))))
    flipped = [*grid(["org/a"], 3, value=lambda m, i: 1 - (m + i) % 2)[:1], ("org/a", "arc", 9, 1)]
    (r,) = ingest(store, LongTable(write_long(tmp_path / "b.csv", flipped)))
    assert (r.n_new, r.n_updated, r.n_unchanged) == (1, 1, 0)
    hist = store.history("org/a", "arc", "0")
    assert hist["correct"].to_list() == [True, False]
    assert hist["current"].to_list() == [True, False]
    assert hist["source_ref"].to_list()[1].endswith("a.csv")


def test_stored_models_and_items_in_new_pairs_are_counted_new(store, tmp_path):
    """The batch's models and items are all stored, but never together: every row is new
    (the cheap overlap check passes them on to the full comparison, which finds no pair);
    a stored pair is still compared, and fresh models skip the comparison."""

    def load(name: str, rows: list[tuple]):
        (report,) = ingest(store, LongTable(write_long(tmp_path / name, rows)))
        return report.n_new, report.n_updated, report.n_unchanged

    load("a.csv", [("org/a", "arc", 0, 1), ("org/b", "arc", 1, 0)])
    assert load("b.csv", [("org/a", "arc", 1, 1), ("org/b", "arc", 0, 1)]) == (2, 0, 0)
    assert load("c.csv", [("org/a", "arc", 0, 0), ("org/b", "arc", 0, 1)]) == (0, 1, 1)
    assert load("d.csv", grid(["org/c"], 2)) == (2, 0, 0)
    assert counts(store)["results"] == 6 and counts(store)["result_history"] == 1


def test_failure_mid_ingest_leaves_nothing_partial(store, tmp_path, monkeypatch):
    ingest(store, LongTable(write_long(tmp_path / "a.csv", grid(["org/a"], 3))))
    before = counts(store)
    real_merge = ingest_module._merge

    def merge_then_crash(con, params):
        real_merge(con, params)
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ingest_module, "_merge", merge_then_crash)
    rows = grid(["org/b", "org/a"], 4, value=lambda m, i: 1)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingest(store, LongTable(write_long(tmp_path / "b.csv", rows)))
    assert counts(store) == before
    assert store.runs()["status"].to_list()[0] == "failed"
    monkeypatch.undo()
    (r,) = ingest(store, LongTable(tmp_path / "b.csv"))  # a failed run is not "already done"
    assert r.status == "ok" and r.n_new == 5


def test_ids_are_data_not_sql(store, tmp_path):
    evil = ["o'rg/m; DROP TABLE results;--", "Ünïcødé/模型", 'q"uote/x']
    rows = [(f'"{m}"' if "," in m or '"' in m else m, "arc", 0, 1) for m in evil[:2]]
    rows.append(('"q""uote/x"', "arc", 0, 0))
    ingest(store, LongTable(write_long(tmp_path / "a.csv", rows)))
    assert sorted(store.models()["model"].to_list()) == sorted(evil)
    assert store.history(evil[0], "arc", "0")["correct"].to_list() == [True]


def test_second_writer_gets_clear_error_within_bound(tmp_path):
    db = tmp_path / "locked.duckdb"
    Store.open(db).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time, duckdb
            con = duckdb.connect({str(db)!r}); print("ready", flush=True); time.sleep(30)
        """)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ready"
        t = datetime.now()
        with pytest.raises(StoreLockedError, match="in use by another writer"):
            Store.open(db, wait_s=0.5)
        assert (datetime.now() - t).total_seconds() < 5
    finally:
        holder.kill()
        holder.wait()
    Store.open(db, wait_s=5).close()  # free again once the writer is gone


def test_models_first_seen_after_time_and_run(store, tmp_path):
    (r1,) = ingest(store, LongTable(write_long(tmp_path / "a.csv", grid(["org/a"], 2))))
    cut = datetime.now(UTC)
    rows = grid(["org/a", "org/b"], 2, value=lambda m, i: 1)
    ingest(store, LongTable(write_long(tmp_path / "b.csv", rows)))
    assert store.models_first_seen_after(run_id=r1.run_id) == ["org/b"]
    assert store.models_first_seen_after(after=cut) == ["org/b"]
    assert store.models_first_seen_after(run_id=r1.run_id, benchmark="arc") == ["org/b"]
    assert store.models_first_seen_after(run_id=0, benchmark="gsm8k") == []
    with pytest.raises(ValueError):
        store.models_first_seen_after()


def test_build_matrix_order_ids_fingerprint(store, tmp_path):
    rows = grid([f"org/m{k}" for k in range(3)], 12)
    ingest(store, LongTable(write_long(tmp_path / "a.csv", rows[::-1])))
    m, summary = build_matrix(store, "arc")
    assert m.values.dtype == np.int8 and set(np.unique(m.values)) == {-1, 1}
    assert m.item_ids.tolist() == [str(i) for i in range(12)]  # natural order, not "10" < "2"
    assert m.model_ids.tolist() == ["org/m0", "org/m1", "org/m2"]
    assert m.values[1, 0] == 1 and m.values[0, 0] == -1
    assert summary.fingerprint == m.fingerprint() and summary.shape == (3, 12)
    assert build_matrix(store, "arc")[1].fingerprint == summary.fingerprint


def test_missing_policy_drops_models_then_items(store, tmp_path):
    rows = grid([f"org/m{k}" for k in range(4)], 10)
    rows = [r for r in rows if not (r[0] == "org/m3" and r[2] >= 5)]  # m3 misses half
    rows = [r for r in rows if not (r[0] == "org/m0" and r[2] == 9)]  # m0 misses one item
    ingest(store, LongTable(write_long(tmp_path / "a.csv", rows)))
    m, s = build_matrix(store, "arc", max_missing_model_frac=0.2)
    assert m.shape == (3, 9) and s.models_dropped == 1 and s.items_dropped == 1
    assert s.cells_missing == 6 and "org/m3" in s.dropped_model_examples
    m, s = build_matrix(store, "arc", max_missing_model_frac=0.0)
    assert m.shape == (2, 10)
    with pytest.raises(MatrixError):
        build_matrix(store, "gsm8k")


def test_missing_policy_unit():
    present = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 0, 0, 0]], bool)
    rows, cols = missing_policy(present, 0.25)
    assert rows.tolist() == [True, True, False] and cols.tolist() == [True, True, True, False]


def test_read_only_open_of_missing_store_is_clear(tmp_path):
    path = tmp_path / "none.duckdb"
    with pytest.raises(StoreError) as caught:
        Store.open(path, read_only=True)
    assert str(caught.value) == f"no store at {path} (ingest something first)"
    assert not path.exists() and not isinstance(caught.value, StoreLockedError)


def test_runs_record_counts(store, tmp_path):
    ingest(store, LongTable(write_long(tmp_path / "a.csv", grid(["org/a"], 4))))
    (run,) = store.runs().to_dicts()
    counted = ("status", "n_read", "n_new", "n_updated", "n_unchanged", "n_quarantined")
    assert {k: run[k] for k in counted} == {
        "status": "ok", "n_read": 4, "n_new": 4, "n_updated": 0, "n_unchanged": 0,
        "n_quarantined": 0,
    }  # fmt: skip
    benchmarks = store.benchmarks().select("benchmark", "n_items", "n_models", "n_results")
    assert benchmarks.row(0) == ("arc", 4, 1, 4)
    assert benchmarks["n_results"].sum() == 4  # the other known benchmarks are empty


def test_result_signatures_change_with_results(store, tmp_path):
    ingest(store, LongTable(write_long(tmp_path / "a.csv", grid(["org/a"], 3))))
    before = store.result_signatures()
    ingest(store, LongTable(write_long(tmp_path / "b.csv", [("org/a", "arc", 0, 1)])))
    after = store.result_signatures()
    assert set(before) == {"arc"} and before["arc"][0] == after["arc"][0] == 3
    assert before != after
