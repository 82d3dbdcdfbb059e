"""`sparseeval quarantine list|drop|release` (issue 46): an operator sees what is held out of
the matrices (quarantined rows, results set aside by the build, set-aside inbox files) and
drops or releases it with one command, no SQL.
"""

from __future__ import annotations

import json
import os

import pytest

from sparseeval.cli import main
from sparseeval.pipeline.sources import ingest_sources
from sparseeval.pipeline.store.watched import Inbox

HEADER = "model,benchmark,item,correct\n"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return rc, out, err


def _old(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + text)
    os.utime(path, (1_000_000_000, 1_000_000_000))  # settled long ago
    return path


@pytest.fixture
def night(tmp_path):
    """An inbox night: a good grid, a stray item row, a file of an unknown benchmark."""
    inbox = tmp_path / "inbox"
    _old(inbox / "a.csv", "".join(f"m{m},arc,{i},{(m * i) % 2}\n"
                                  for m in range(6) for i in range(5)))  # fmt: skip
    _old(inbox / "stray.csv", "new,arc,999,1\n")
    _old(inbox / "unknown.csv", "".join(f"m0,nosuch,{i},1\n" for i in range(4)))
    store = tmp_path / "s.duckdb"
    ingest_sources(store, [Inbox(inbox)])
    return inbox, store


def test_list_names_rows_results_and_files(capsys, night):
    inbox, store = night
    rc, out, _ = cli(capsys, "quarantine", "list", "--store", store, "--inbox", inbox, "--json")
    found = json.loads(out)
    assert rc == 0
    assert [(r["rows"], r["reason"]) for r in found["rows"]] == [(4, "unknown benchmark: nosuch")]
    assert found["results"] == [{"benchmark": "arc", "item": "999", "models": 1}]
    assert [f["file"] for f in found["files"]] == [str(inbox / "failed" / "unknown.csv")]
    rc, out, _ = cli(capsys, "quarantine", "list", "--store", store, "--inbox", inbox)
    assert "arc item 999: 1 model(s) have it" in out and "unknown.csv" in out


def test_drop_the_set_aside_results_then_the_matrix_has_none(capsys, night):
    _, store = night
    rc, out, _ = cli(capsys, "quarantine", "drop", "--benchmark", "arc", "--store", store)
    assert (rc, out.strip()) == (0, "dropped 1 result(s) that arc set aside")
    rc, out, _ = cli(capsys, "matrix", "arc", "--store", store)
    assert rc == 0 and "6 models x 5 items" in out and "set aside" not in out
    rc, _, err = cli(capsys, "quarantine", "drop", "--benchmark", "arc", "--store", store)
    assert rc == 2 and "sets no results aside" in err


def test_drop_rows_and_release_a_file(capsys, night):
    inbox, store = night
    aside = inbox / "failed" / "unknown.csv"
    rc, out, _ = cli(capsys, "quarantine", "drop", inbox / "unknown.csv", "--store", store)
    assert (rc, out.strip()) == (0, f"dropped 4 quarantined row(s) of {inbox / 'unknown.csv'}")
    rc, out, _ = cli(capsys, "quarantine", "release", aside)
    assert rc == 0 and (inbox / "unknown.csv").is_file() and not aside.exists()
    assert not aside.with_name("unknown.csv.reason.txt").exists()
    rc, _, err = cli(capsys, "quarantine", "release", inbox / "a.csv")
    assert rc == 2 and "not a set-aside file" in err and len(err.splitlines()) == 1
    rc, _, err = cli(capsys, "quarantine", "drop", "nothing.csv", "--store", store)
    assert rc == 2 and "no quarantined rows of 'nothing.csv'" in err


def test_a_long_list_is_cut_and_json_has_every_row(capsys, tmp_path):
    from sparseeval.pipeline.store import LongTable, Store, ingest

    path = tmp_path / "bad.csv"  # 60 distinct reasons
    path.write_text(HEADER + "".join(f"m0,nosuch{i},0,1\n" for i in range(60)))
    with Store.open(tmp_path / "s.duckdb") as store:
        ingest(store, LongTable(path))
    rc, out, _ = cli(capsys, "quarantine", "list", "--store", tmp_path / "s.duckdb")
    assert rc == 0 and "rows: 60 quarantined" in out and "... and 10 more (--json" in out
    rc, out, _ = cli(capsys, "quarantine", "list", "--store", tmp_path / "s.duckdb", "--json")
    assert len(json.loads(out)["rows"]) == 60


def test_a_bad_setting_is_one_line_before_anything(capsys, monkeypatch):
    monkeypatch.setenv("SPARSEEVAL_EPOCHS", "0")
    rc, _, err = cli(capsys, "quarantine", "list")
    assert rc == 2 and "epochs must be at least 1" in err and len(err.splitlines()) == 1
