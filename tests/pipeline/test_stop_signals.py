"""A stop signal is never bad data: SIGTERM, Ctrl-C or DuckDB's "Query interrupted" while
ingesting fails no file and no source, moves nothing to `failed/`, and leaves the store as it
was (the unit's transaction rolled back); the run ends "stopped by signal"."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import duckdb
import pytest

from sparseeval.pipeline import stopping
from sparseeval.pipeline.sources import ingest_sources
from sparseeval.pipeline.store import Store, ingestion
from sparseeval.pipeline.store import tables as table_readers


@pytest.fixture(autouse=True)
def no_pending_stop():
    stopping.forget_signals()
    yield
    stopping.forget_signals()


def inbox_with_a_good_file(tmp_path: Path) -> Path:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    good = inbox / "good.csv"
    rows = "".join(f"org/m{m},arc,{i},{(m + i) % 2}\n" for m in range(3) for i in range(4))
    good.write_text("model,benchmark,item,correct\n" + rows)
    then = time.time() - 120  # settled: past the 60 s a file still being written gets
    os.utime(good, (then, then))
    return inbox


def store_state(store_path: Path) -> tuple[int, list[str]]:
    """(results stored, ingest run statuses)."""
    with Store.open(store_path) as store:
        ((n,),) = store.con.execute("SELECT count(*) FROM results").fetchall()
        runs = [s for (s,) in store.con.execute("SELECT status FROM ingest_runs").fetchall()]
    return n, runs


def night(tmp_path: Path, inbox: Path):
    return ingest_sources(tmp_path / "store.duckdb", [f"inbox:{inbox}"], fill_if_empty=False)


def test_a_query_interrupted_by_sigterm_mid_ingest_is_a_stop_not_a_bad_file(tmp_path, monkeypatch):
    inbox = inbox_with_a_good_file(tmp_path)
    real_load = ingestion._load

    def interrupted(con, unit, params, *rest):
        real_load(con, unit, params, *rest)  # the rows are staged and merged, not yet committed
        stopping.note_signal(signal.SIGTERM)  # the handler ran inside DuckDB's query...
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")  # ...and this came up

    monkeypatch.setattr(ingestion, "_load", interrupted)
    with pytest.raises(stopping.Stopped) as stop:
        night(tmp_path, inbox)
    assert stop.value.code == 143 and str(stop.value) == "stopped by signal SIGTERM"
    assert (inbox / "good.csv").is_file() and not (inbox / "failed").exists()
    n, runs = store_state(tmp_path / "store.duckdb")
    assert n == 0 and "failed" not in runs  # rolled back; the run row: interrupted
    assert runs == ["interrupted"]

    monkeypatch.setattr(ingestion, "_load", real_load)
    stopping.forget_signals()
    (row,) = night(tmp_path, inbox).sources  # the next night reads the file as it is
    assert (row["new"], row["failed"]) == (12, 0)


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), duckdb.InterruptException("Interrupted")])
def test_ctrl_c_while_a_reader_lists_the_file_is_a_stop_not_a_bad_file(tmp_path, monkeypatch, stop):
    inbox = inbox_with_a_good_file(tmp_path)

    def units(self, store):
        raise stop

    monkeypatch.setattr(table_readers.LongTable, "units", units)
    with pytest.raises((stopping.Stopped, KeyboardInterrupt)) as stopped:
        night(tmp_path, inbox)
    assert stopping.as_stop(stopped.value).code == 130  # the CLI's exit code
    assert str(stopping.as_stop(stopped.value)) == "stopped by signal SIGINT"
    assert (inbox / "good.csv").is_file() and not (inbox / "failed").exists()
    assert store_state(tmp_path / "store.duckdb") == (0, [])


def test_a_bad_file_still_fails_and_moves_aside(tmp_path):
    inbox = inbox_with_a_good_file(tmp_path)
    bad = inbox / "bad.csv"
    bad.write_text("nothing,useful\n1,2\n")
    os.utime(bad, (time.time() - 120,) * 2)
    (row,) = night(tmp_path, inbox).sources
    assert (row["new"], row["failed"]) == (12, 1)
    assert (inbox / "failed" / "bad.csv").is_file() and (inbox / "good.csv").is_file()


def test_as_stop_tells_stops_from_errors():
    assert stopping.as_stop(ValueError("bad row")) is None
    assert stopping.as_stop(SystemExit(1)) is None
    assert stopping.as_stop(SystemExit(143)).signum == signal.SIGTERM
    stopping.note_signal(signal.SIGTERM)
    assert stopping.as_stop(ValueError("anything, once a stop is pending")).code == 143
