"""Watched sources (`inbox:DIR`, `lm-eval:GLOB`) as the nightly job reads them, night by night."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import polars as pl
import pytest

from sparseeval.pipeline.records import IngestSummary
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.sources import ingest_sources, parse_source
from sparseeval.pipeline.store import Store
from sparseeval.pipeline.store import tables as table_readers
from sparseeval.pipeline.store import watched as file_sources
from sparseeval.pipeline.store.watched import Inbox, LmEvalGlob

SETTLE = 0.5
STAMP = "2025-03-14T09-26-53.589793"


@pytest.fixture(autouse=True)
def quick_settle(monkeypatch):
    monkeypatch.setattr(file_sources, "SETTLE_SECONDS", SETTLE)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


def night(store_path: Path, *specs: str) -> IngestSummary:
    return ingest_sources(store_path, list(specs), fill_if_empty=False)


def settled(*paths: Path) -> None:
    """Make files look written a minute ago (past the settle time)."""
    then = time.time() - 60
    for p in paths:
        os.utime(p, (then, then))


def write(path: Path, text: str, age: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if age:
        settled(path)
    return path


def long_csv(path: Path, models: list[str], bench: str = "arc", n: int = 4) -> Path:
    body = "".join(
        f"{m},{bench},{i},{(i + k) % 2}\n" for k, m in enumerate(models) for i in range(n)
    )
    return write(path, "model,benchmark,item,correct\n" + body)


def fill_inbox(inbox: Path) -> None:
    long_csv(inbox / "long.csv", ["org/a", "org/b"])  # 8 rows
    pl.DataFrame(
        {"model": ["org/c"] * 3, "benchmark": ["gsm8k"] * 3, "item": ["0", "1", "2"],
         "correct": [1, 0, 1]}
    ).write_parquet(inbox / "long.parquet")  # fmt: skip
    settled(inbox / "long.parquet")
    write(inbox / "arc" / "wide.csv", "model,0,1,2\norg/d,1,0,1\norg/e,0,0,1\n")  # 6 rows


def source_row(summary: IngestSummary) -> dict:
    (only,) = summary.sources
    return only


def test_inbox_night_by_night(store_path, tmp_path, monkeypatch):
    inbox = tmp_path / "inbox"
    fill_inbox(inbox)
    spec = f"inbox:{inbox}"

    first = night(store_path, spec)
    row = source_row(first)
    assert (row["units"], row["new"], row["new_models"], row["skipped"], row["failed"]) == (
        3, 17, 5, 0, 0,
    )  # fmt: skip
    assert row["source"] == spec and first.new == 17 and first.new_models == 5
    md = first.markdown()
    assert "| source | units | new models | new rows |" in md
    assert f"| `{spec}` | 3 | 5 | 17 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |  |" in md

    # night 2, nothing new: every file is only hashed (no reader runs) and skipped
    for reader in ("_stage_long_csv", "_stage_long_parquet", "_stage_wide"):
        monkeypatch.setattr(table_readers, reader, _must_not_read)
    second = night(store_path, spec)
    row = source_row(second)
    assert (row["units"], row["skipped"], row["new"], row["new_models"], row["failed"]) == (
        3, 3, 0, 0, 0,
    )  # fmt: skip
    assert all("already ingested" in line for line in second.lines)
    monkeypatch.undo()
    monkeypatch.setattr(file_sources, "SETTLE_SECONDS", SETTLE)

    # a new file appears: only it is read
    long_csv(inbox / "new.csv", ["org/f"], n=2)
    third = night(store_path, spec)
    row = source_row(third)
    assert (row["units"], row["skipped"], row["new"], row["new_models"]) == (4, 3, 2, 1)
    assert third.lines[0].startswith(f"{inbox / 'new.csv'}: read 2;")


def test_file_still_being_written_waits_for_the_settle_time(store_path, tmp_path):
    inbox = tmp_path / "inbox"
    long_csv(inbox / "old.csv", ["org/a"])
    write(inbox / "late.csv", "model,benchmark,item,correct\norg/z,arc,0,1\n", age=False)
    time.sleep(0.1)

    first = source_row(night(store_path, f"inbox:{inbox}"))
    assert (first["units"], first["skipped"], first["pending"], first["new"]) == (2, 0, 1, 4)
    assert first["new_models"] == 1
    runs = Store.open(store_path, read_only=True)
    try:
        skipped = runs.runs().filter(pl.col("status") == "skipped")
    finally:
        runs.close()
    (message,) = skipped["message"].to_list()
    assert "still being written" in message

    time.sleep(SETTLE + 0.1)
    later = source_row(night(store_path, f"inbox:{inbox}"))
    assert (later["new"], later["new_models"], later["skipped"]) == (1, 1, 1)


def test_bad_files_fail_alone(store_path, tmp_path):
    inbox = tmp_path / "inbox"
    long_csv(inbox / "good.csv", ["org/a"])
    write(inbox / "bad.csv", "this,is\nnot,a table\n")
    write(inbox / "broken.parquet", "not parquet at all")
    write(inbox / "arc" / "long.parquet", "misplaced")
    summary = night(store_path, f"inbox:{inbox}")
    row = source_row(summary)
    assert (row["units"], row["new"], row["failed"]) == (4, 4, 3)
    assert row["message"].startswith(f"{inbox / 'arc' / 'long.parquet'}: wide tables are CSV")
    failed = [line for line in summary.lines if ": failed (" in line]
    assert len(failed) == 3
    assert any("bad.csv: line 1: missing column(s) model, benchmark" in x for x in failed)
    assert any("broken.parquet" in x and "Parquet" in x for x in failed)
    assert "3 failed" in summary.line()


def test_failing_sources_do_not_stop_the_others(store_path, tmp_path):
    inbox = tmp_path / "inbox"
    long_csv(inbox / "a.csv", ["org/a"])
    specs = [f"inbox:{tmp_path / 'nowhere'}", "lm-eval:", "mystery.txt", f"inbox:{inbox}"]
    summary = night(store_path, *specs)
    rows = summary.sources
    assert [r["failed"] for r in rows] == [1, 1, 1, 0]
    assert [r["units"] for r in rows] == [0, 0, 0, 1]
    assert "no such file or folder" in rows[0]["message"]
    assert "lm-eval source needs a glob" in rows[1]["message"]
    assert "cannot tell what source" in rows[2]["message"]
    assert (rows[3]["new"], summary.new, summary.failed) == (4, 4, 3)
    md = summary.markdown()
    assert md.count("\n") == 2 + 4 + 1  # header, rule, 4 sources, the totals row
    assert "| **all** | 1 | 1 | 4 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 3 |  |" in md


def test_lm_eval_glob_takes_only_complete_runs(store_path, tmp_path):
    runs = tmp_path / "runs"
    a = write_lm_eval(runs / "modelA", "org/model-a", results=True)
    b = write_lm_eval(runs / "modelB", "org/model-b", results=False)
    spec = f"lm-eval:{runs}/*"

    first = night(store_path, spec)
    row = source_row(first)
    assert (row["units"], row["new"], row["new_models"], row["pending"]) == (2, 3, 1, 1)
    assert any(line.startswith(str(b)) and "no results_*.json yet" in line for line in first.lines)

    # modelB's results JSON appears: the folder is fresh, so it waits once more
    results_b = write_results(b, "org/model-b", age=False)
    row = source_row(night(store_path, spec))
    assert (row["new"], row["skipped"], row["pending"]) == (0, 1, 1)  # a read, b pending

    settled(*b.iterdir())
    row = source_row(night(store_path, spec))
    assert (row["units"], row["new"], row["new_models"], row["skipped"]) == (2, 3, 1, 1)
    assert results_b.exists() and a.is_dir()


def test_lm_eval_glob_deeper_output_folders_and_missing_base(store_path, tmp_path):
    out = tmp_path / "runs" / "nightly-1"
    write_lm_eval(out / "org__model-c", "org/model-c", results=True)
    row = source_row(night(store_path, f"lm-eval:{tmp_path / 'runs'}/*"))
    assert (row["units"], row["new"]) == (1, 3)
    row = source_row(night(store_path, f"lm-eval:{tmp_path / 'elsewhere'}/*/*"))
    assert row["failed"] == 1 and "no such folder" in row["message"]
    empty = tmp_path / "empty"
    empty.mkdir()
    row = source_row(night(store_path, f"lm-eval:{empty}/*"))
    assert (row["units"], row["failed"]) == (0, 0)


def test_settings_sources_round_trip_into_parse_source(store_path, tmp_path):
    inbox = tmp_path / "inbox"
    long_csv(inbox / "a.csv", ["org/a"])
    toml = tmp_path / "sparseeval.toml"
    toml.write_text(f'sources = ["inbox:{inbox}", "lm-eval:{tmp_path}/runs/*/*"]\n')
    from_toml = Settings.load(path=toml, env={})
    assert from_toml.sources.sources == (f"inbox:{inbox}", f"lm-eval:{tmp_path}/runs/*/*")
    parsed = [parse_source(s) for s in from_toml.sources.sources]
    assert parsed == [Inbox(inbox), LmEvalGlob(f"{tmp_path}/runs/*/*")]

    as_json = {"SPARSEEVAL_SOURCES": json.dumps(list(from_toml.sources.sources))}
    as_list = {"SPARSEEVAL_SOURCES": ";".join(from_toml.sources.sources)}
    for env in (as_json, as_list):
        assert Settings.load(path=toml, env=env).sources.sources == from_toml.sources.sources

    summary = night(store_path, *from_toml.sources.sources)
    assert [r["new"] for r in summary.sources] == [4, 0]
    assert [r["failed"] for r in summary.sources] == [0, 1]  # no runs/ folder yet
    assert summary.to_dict()["sources"][0]["source"] == f"inbox:{inbox}"


# -- helpers ------------------------------------------------------------------------------


def _must_not_read(*args, **kwargs):
    raise AssertionError("an unchanged file was read again")


def write_lm_eval(folder: Path, model: str, results: bool) -> Path:
    """An lm-eval `--log_samples` run folder with 3 ARC docs (results JSON optional)."""
    rows = [{"doc_id": d, "filter": "none", "metrics": ["acc_norm"], "acc_norm": v}
            for d, v in enumerate([1.0, 0.0, 1.0])]  # fmt: skip
    text = "".join(json.dumps(r) + "\n" for r in rows)
    write(folder / f"samples_arc_challenge_{STAMP}.jsonl", text)
    if results:
        write_results(folder, model)
    return folder


def write_results(folder: Path, model: str, age: bool = True) -> Path:
    data = {"results": {"arc_challenge": {"alias": "arc_challenge"}}, "model_name": model}
    return write(folder / f"results_{STAMP}.json", json.dumps(data), age=age)
