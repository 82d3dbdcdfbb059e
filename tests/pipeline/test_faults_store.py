"""Fault and bad-input cases of the results store (issue 13): encodings, BOMs, huge ids,
lm-eval substitutions, every attempt recorded, quarantine lines, redaction, escaping.

Fast: a real DuckDB store in tmp_path and real files; the kill case is one subprocess.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sparseeval.consume.lm_eval.harness import LmEvalError, read_responses, read_samples_file
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.sources import parse_source
from sparseeval.pipeline.store import (
    LmEvalRun,
    LongTable,
    SourceError,
    Store,
    StoreError,
    WideTable,
    build_matrix,
    ingest,
)
from sparseeval.pipeline.store import ingestion as ingestion_module
from sparseeval.pipeline.store.unit import Unit
from sparseeval.pipeline.store.validate import MAX_BENCHMARK_LEN, MAX_ITEM_LEN, MAX_MODEL_LEN

HEADER = "model,benchmark,item,correct\n"
BOM = "\ufeff"
TS = "2024-05-01T12-00-00.123456"
TOKEN = "hf_" + "Ab3" * 12


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def count(store: Store, table: str) -> int:
    return store.con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0]


def runs(store: Store) -> list[dict]:
    return store.runs().sort("run_id").to_dicts()


# -- 3. UTF-8 BOM ---------------------------------------------------------------------------


def test_long_csv_with_bom_is_read(store, tmp_path):
    path = write(tmp_path / "a.csv", BOM + HEADER + "org/a,arc,0,1\norg/a,arc,1,0\n")
    (r,) = ingest(store, LongTable(path))
    assert (r.status, r.n_new, r.n_quarantined) == ("ok", 2, 0)
    assert store.models()["model"].to_list() == ["org/a"]


def test_wide_csv_with_bom_is_taken_for_wide_and_read(store, tmp_path):
    path = write(tmp_path / "arc.csv", BOM + "model,660,1067\norg/a,1,0\norg/b,0,1\n")
    source = parse_source(str(path), benchmark="arc")
    assert isinstance(source, WideTable)  # not a long table
    (r,) = ingest(store, source)
    assert (r.status, r.n_new) == ("ok", 4)
    m, _ = build_matrix(store, "arc")
    assert m.item_ids.tolist() == ["660", "1067"]  # no BOM in any name
    assert m.model_ids.tolist() == ["org/a", "org/b"]


def test_fit_reads_bom_data_and_targets(tmp_path):
    from sparseeval.cli.fit import read_wide

    rows = [f"org/m{k},{k % 2},{(k // 2) % 2},1" for k in range(12)]
    data = write(tmp_path / "r.csv", BOM + "model,1,2,3\n" + "\n".join(rows) + "\n")
    scores = [f"org/m{k},{5 * k}" for k in range(12)]
    targets = write(tmp_path / "t.csv", BOM + "model,score\n" + "\n".join(scores) + "\n")
    m = read_wide(data, targets)
    assert m.item_ids.tolist() == ["1", "2", "3"] and m.model_ids[0] == "org/m0"
    assert m.y[:3].tolist() == [0.0, 0.05, 0.1]


# -- 5. files that are not UTF-8 ----------------------------------------------------------------


def test_latin1_long_csv_is_one_failed_unit_naming_the_line(store, tmp_path):
    body = "org/a,arc,0,1\norg/caf\xe9,arc,1,1\n"
    path = write(tmp_path / "l1.csv", (HEADER + body).encode("latin-1"))
    with pytest.raises(SourceError, match=r"l1\.csv: line 3: not UTF-8 text \(byte 0xe9\)"):
        ingest(store, LongTable(path))
    assert [r["status"] for r in runs(store)] == ["failed"]
    assert "line 3: not UTF-8" in runs(store)[0]["message"]
    assert count(store, "results") == 0


def test_latin1_line_past_the_header_chunk_refuses_the_whole_file(store, tmp_path):
    good = "".join(f"org/a,arc,{i},1\n" for i in range(2000))  # well past Python's 8 KiB read
    path = write(tmp_path / "late.csv", (HEADER + good + "org/\xe9,arc,0,1\n").encode("latin-1"))
    with pytest.raises(SourceError, match=r"late\.csv: line 2002: not UTF-8 text"):
        ingest(store, LongTable(path))
    assert count(store, "results") == 0 and count(store, "quarantine") == 0


def test_latin1_lm_eval_samples_fail_in_store_and_consumer(store, tmp_path):
    run = tmp_path / "run"
    write(run / f"results_{TS}.json", json.dumps({"model_name": "org/m"}))
    lines = [
        json.dumps({"doc_id": 0, "acc_norm": 1.0}),
        '{"doc_id": 1, "acc_norm": 0.0, "q": "\xe9"}',
    ]
    samples = write(run / f"samples_arc_challenge_{TS}.jsonl", "\n".join(lines).encode("latin-1"))
    (r,) = ingest(store, LmEvalRun(run), keep_going=True)
    assert r.status == "failed" and "line 2: not UTF-8 text (byte 0xe9)" in r.message
    assert count(store, "results") == 0
    with pytest.raises(LmEvalError, match=r":2: not UTF-8 text"):
        read_samples_file(samples)


def test_settings_file_not_utf8_or_not_toml_is_one_line_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "sparseeval.toml", "seed = 1\n# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"^sparseeval\.toml: not UTF-8 text .*line 2"):
        Settings.load("sparseeval.toml", env={})
    write(tmp_path / "sparseeval.toml", "seed = 1\nn_anchors = \n")
    with pytest.raises(ValueError, match=r"^sparseeval\.toml: line 2, column \d+: not valid TOML"):
        Settings.load("sparseeval.toml", env={})
    write(tmp_path / "sparseeval.toml", BOM + "seed = 7\n")
    assert Settings.load("sparseeval.toml", env={}).splits.seed == 7


def test_fit_latin1_file_is_one_line_naming_file_and_line(tmp_path):
    from sparseeval.cli.common import UserError
    from sparseeval.cli.fit import read_wide

    path = write(tmp_path / "r.csv", "model,1,2\norg/a,1,0\norg/\xe9,0,1\n".encode("latin-1"))
    with pytest.raises(UserError, match=r"r\.csv: line 3: not UTF-8 text \(byte 0xe9\)"):
        read_wide(path)


# -- 6. bounded id lengths ------------------------------------------------------------------


def test_huge_ids_are_quarantined_with_the_reason(store, tmp_path):
    huge = "m" * 100_000
    body = (
        f"{huge},arc,0,1\n"
        f"org/ok,arc,{'i' * (MAX_ITEM_LEN + 1)},1\n"
        f"org/ok,{'b' * (MAX_BENCHMARK_LEN + 1)},0,1\n"
        f"{'o' * MAX_MODEL_LEN},arc,1,1\n"  # exactly at the bound: a good row
    )
    (r,) = ingest(store, LongTable(write(tmp_path / "a.csv", HEADER + body)))
    assert (r.n_new, r.n_quarantined) == (1, 3)
    q = store.quarantine().sort("line")
    assert q["reason"].to_list() == [
        f"model id is 100,000 characters long (at most {MAX_MODEL_LEN})",
        f"item id is {MAX_ITEM_LEN + 1} characters long (at most {MAX_ITEM_LEN})",
        f"benchmark name is {MAX_BENCHMARK_LEN + 1} characters long (at most {MAX_BENCHMARK_LEN})",
    ]
    assert q["line"].to_list() == [2, 3, 4]
    assert max(map(len, q["raw"])) <= 1003  # the raw row is kept, cut to 1,000 characters
    assert store.models()["model"].to_list() == ["o" * MAX_MODEL_LEN]
    with pytest.raises(StoreError, match="benchmark name must be 1 to 64 characters"):
        store.add_benchmark("x" * (MAX_BENCHMARK_LEN + 1))


# -- 8. lm-eval: the metric read is recorded, doc ids are integers ------------------------------


def lm_eval_run(folder: Path, task: str, records: list[dict]) -> Path:
    write(folder / f"results_{TS}.json", json.dumps({"model_name": "org/m"}))
    write(folder / f"samples_{task}_{TS}.jsonl", "\n".join(map(json.dumps, records)) + "\n")
    return folder


def test_arc_without_acc_norm_is_visible_and_metric_recorded(store, tmp_path):
    no_norm = lm_eval_run(tmp_path / "a", "arc_challenge", [{"doc_id": 0, "acc": 1.0}])
    (r,) = ingest(store, LmEvalRun(no_norm))
    assert (r.n_new, r.n_quarantined) == (0, 1)  # never read from `acc` instead
    assert "arc_challenge=none (no acc_norm in any sample; 1 quarantined)" in r.message
    assert "metric arc_challenge=none" in r.line()
    ok = [{"doc_id": 0, "acc": 0.0, "acc_norm": 1.0}, {"doc_id": 1, "acc": 1.0, "acc_norm": 0.0}]
    (r,) = ingest(store, LmEvalRun(lm_eval_run(tmp_path / "b", "arc_challenge", ok)))
    assert r.n_new == 2 and r.message == "metric arc_challenge=acc_norm"
    assert runs(store)[-1]["message"] == "metric arc_challenge=acc_norm"  # stored with the run
    assert build_matrix(store, "arc")[0].values.tolist() == [[1, -1]]


def test_unknown_task_metric_fallback_is_said(store, tmp_path):
    store.add_benchmark("arc_easy")
    recs = [{"doc_id": 0, "acc": 1.0, "acc_norm": 0.0}]
    (r,) = ingest(store, LmEvalRun(lm_eval_run(tmp_path / "e", "arc_easy", recs)))
    assert r.n_new == 1 and r.message == "metric arc_easy=acc"


def test_non_integer_doc_ids_are_refused(store, tmp_path):
    recs = [{"doc_id": d, "acc_norm": 1.0} for d in (914.4, "914.4", True, 914.0, -1, "7")]
    (r,) = ingest(store, LmEvalRun(lm_eval_run(tmp_path / "f", "arc_challenge", recs)))
    assert (r.n_new, r.n_quarantined) == (1, 5)
    reasons = store.quarantine().sort("line")["reason"].to_list()
    assert reasons == [f"doc_id {d!r} is not a non-negative integer"
                       for d in (914.4, "914.4", True, 914.0, -1)]  # fmt: skip
    assert build_matrix(store, "arc")[0].item_ids.tolist() == ["7"]
    samples = next((tmp_path / "f").glob("samples_*"))
    with pytest.raises(LmEvalError, match=r":1: doc_id 914\.4 is not a non-negative integer"):
        read_samples_file(samples)


def test_consumer_refuses_float_doc_ids_in_item_sources(tmp_path):
    run = lm_eval_run(tmp_path / "c", "arc_challenge", [{"doc_id": 914, "acc_norm": 1.0}])
    for bad in (914.4, "914.4", True, 914.0):
        sources = {"a": {"task": "arc_challenge", "doc_id": bad}}
        with pytest.raises(LmEvalError, match="is not a non-negative integer"):
            read_responses([run], items=["a"], benchmark="arc", item_sources=sources)
    ok = {"a": {"task": "arc_challenge", "doc_id": "914"}}
    assert read_responses([run], items=["a"], benchmark="arc", item_sources=ok) == {"a": 1}


def test_ingest_command_shows_the_metric(tmp_path, capsys, monkeypatch):
    from sparseeval.cli.store import add_store_commands

    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    recs = [{"doc_id": 0, "acc_norm": 1.0}]
    folder = lm_eval_run(tmp_path / "out", "arc_challenge", recs)
    parser = argparse.ArgumentParser(prog="sparseeval")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["ingest", str(folder)])
    assert args.func(args) == 0
    assert "new 1," in (out := capsys.readouterr().out) and "metric arc_challenge=acc_norm" in out


# -- 9. every attempt recorded; quarantine lines ----------------------------------------------


def test_failure_after_the_run_row_leaves_a_failed_row_and_no_data(store, tmp_path):
    seen = []

    def stage(con):
        with store.con.cursor() as other:  # another connection: sees only what is committed
            seen.append(other.sql("SELECT status FROM ingest_runs").fetchall())
        raise RuntimeError("disk on fire")

    unit = Unit("test", "thing", "key-1", ["thing"], stage)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingestion_module.ingest_unit(store, unit)
    assert seen == [[("running",)]]  # the row was written, committed, before the data
    (row,) = runs(store)
    assert row["status"] == "failed" and row["message"] == "disk on fire"
    assert row["finished_at"] is not None
    assert count(store, "results") == 0 and count(store, "source_refs") == 0


def test_killed_ingest_is_marked_interrupted_by_the_next_open(tmp_path):
    db = tmp_path / "store.duckdb"
    src = write(tmp_path / "a.csv", HEADER + "org/a,arc,0,1\norg/b,arc,0,0\n")
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from sparseeval.pipeline.store import LongTable, Store, ingest
        from sparseeval.pipeline.store import ingestion

        real = ingestion._merge
        def merge_then_die(con, params):
            real(con, params)  # rows written, not committed
            os.kill(os.getpid(), signal.SIGKILL)
        ingestion._merge = merge_then_die
        with Store.open({str(db)!r}) as store:
            ingest(store, LongTable(Path({str(src)!r})))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    with Store.open(db) as store:
        (row,) = runs(store)
        assert row["status"] == "interrupted" and "process ended" in row["message"]
        assert count(store, "results") == 0 and count(store, "models") == 0
        (r,) = ingest(store, LongTable(src))  # not "already ingested": it is read now
        assert (r.status, r.n_new) == ("ok", 2)


def test_source_that_fails_before_any_unit_is_a_run(store):
    class BrokenListing:
        pattern = "hub:v1:*"

        def units(self, store):
            raise OSError(f"listing failed: 503 (token {TOKEN})")
            yield

    (r,) = ingest(store, BrokenListing(), keep_going=True)
    assert r.status == "failed" and r.run_id > 0
    (row,) = runs(store)
    assert (row["kind"], row["source"], row["status"]) == ("source", "hub:v1:*", "failed")
    assert TOKEN not in row["message"] and "listing failed: 503" in row["message"]
    with pytest.raises(OSError):
        ingest(store, BrokenListing())  # without keep_going it raises, and is recorded too
    assert len(runs(store)) == 2


def test_csv_rows_rejected_by_the_validator_have_their_line(store, tmp_path):
    body = "org/a,arc,0,1\norg/a,arc,1\norg/a,arc,2,maybe\n,arc,3,1\norg/a,arc,4,0\n"
    (r,) = ingest(store, LongTable(write(tmp_path / "a.csv", HEADER + body)))
    q = store.quarantine().sort("line")
    assert q["line"].to_list() == [3, 4, 5]
    assert q["reason"].to_list()[1:] == ["not a correctness value: maybe", "missing model"]
    wide = write(tmp_path / "w.csv", "model,1,2\norg/a,1,0\norg/b,1,x\n")
    (r,) = ingest(store, WideTable(wide, "arc"))
    (q,) = store.quarantine(r.run_id).to_dicts()
    assert (q["line"], q["reason"]) == (3, "not a correctness value: x")


# -- 10. hygiene -------------------------------------------------------------------------------


def test_token_in_an_error_is_stored_redacted(store, caplog):
    caplog.set_level(logging.INFO, logger="sparseeval")

    def stage(con):
        raise RuntimeError(f"401 for https://hub/x (Authorization: Bearer {TOKEN})")

    unit = Unit("test", "thing", "key-2", ["thing"], stage)
    (r,) = ingest(store, _One(unit), keep_going=True)
    (row,) = runs(store)
    for text in (r.message, r.line(), row["message"], caplog.text):
        assert TOKEN not in text
    assert "Bearer ***" in row["message"] and "ingest thing: failed" in caplog.text


def test_control_characters_from_a_header_are_escaped(store, tmp_path):
    evil = "\x1b]0;pwned\x07\x1b[2J"
    path = write(tmp_path / "a.csv", f"{evil},benchmark,item,correct\norg/a,arc,0,1\n")
    (r,) = ingest(store, LongTable(path), keep_going=True)
    (row,) = runs(store)
    for text in (r.message, r.line(), row["message"]):
        assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned\\x07" in r.line()


def test_connections_never_draw_progress_bars(store, tmp_path):
    setting = "SELECT current_setting('enable_progress_bar')"
    assert store.con.sql(setting).fetchall() == [(False,)]
    store.close()
    with Store.open(tmp_path / "store.duckdb", read_only=True) as ro:
        assert ro.con.sql(setting).fetchall() == [(False,)]


class _One:
    """A source of one prepared unit."""

    def __init__(self, unit: Unit) -> None:
        self.unit = unit

    def units(self, store):
        yield self.unit


def test_connections_bound_duckdbs_memory(store, tmp_path):
    """DuckDB's default is 80% of RAM: a 20,000 x 2,000 wide CSV peaked at 8 GB. Bounded,
    big staging queries spill next to the store (`bench/ingest.py --wide`)."""
    limit = "SELECT current_setting('memory_limit')"
    assert store.con.sql(limit).fetchall() == [("1.8 GiB",)]  # 2GB as DuckDB prints it
    store.close()
    with Store.open(tmp_path / "store.duckdb", read_only=True) as ro:
        assert ro.con.sql(limit).fetchall() == [("1.8 GiB",)]


def test_a_wide_table_bigger_than_the_bound_spills_and_ingests(store, tmp_path):
    from sparseeval.pipeline.store import WideTable

    path = tmp_path / "wide.csv"
    rng = np.random.default_rng(0)
    n_models, n_items = 3000, 300
    with open(path, "w") as f:
        f.write("model," + ",".join(f"q{j}" for j in range(n_items)) + "\n")
        for m in range(n_models):
            f.write(f"m{m}," + ",".join(map(str, rng.integers(0, 2, n_items))) + "\n")
    store.add_benchmark("wide")
    store.con.execute("SET memory_limit = '100MB'")  # far below what the unpivot holds
    (report,) = ingest(store, WideTable(path, "wide"))
    assert report.status == "ok" and report.n_new == n_models * n_items, report.line()
    spilled = Path(f"{store.path}.tmp")  # DuckDB's spill folder; removed when the store closes
    assert spilled.is_dir()
    store.close()
    assert not spilled.exists()
