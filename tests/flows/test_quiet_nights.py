"""Nights that page only when a person is needed (issue [3/5]), against a real Prefect test
server: a bad inbox file fails one night and is moved aside, a file still being written makes
a Completed run that says it waits, and a failure names the file and its reason everywhere
(the flow's error, `--json`, the error line)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from sparseeval.flows.refresh import refresh

from tests.helpers import TINY, release

pytestmark = pytest.mark.usefixtures("prefect_harness")

BAD = "model,benchmark,item\nm1,arc,i1\n"  # no `correct` column: the file cannot be read
REASON = "line 1: missing column(s) correct (has: model, benchmark, item)"


def _settled(path) -> None:
    old = os.path.getmtime(path) - 3600  # unchanged for an hour: past the settle time
    os.utime(path, (old, old))


def _night(home, inbox):
    return refresh(home=str(home), return_state=True,
                   settings_overrides=TINY | {"sources": [f"inbox:{inbox}"]})  # fmt: skip


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_a_bad_inbox_file_fails_one_night_then_is_set_aside(tmp_path):
    home, inbox = tmp_path / "home", tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(release(tmp_path, 0, 200), inbox / "good.parquet")
    (inbox / "bad.csv").write_text(BAD)
    for f in inbox.iterdir():
        _settled(f)
    first = _night(home, inbox)
    assert first.is_failed()  # the night that met the file pages
    exc = first.result(raise_on_failure=False)
    assert f"{inbox / 'bad.csv'}: {REASON}" in str(exc)
    assert f"moved to {inbox / 'failed' / 'bad.csv'}" in str(exc)
    assert exc.run.n_published == 2  # the good file landed all the same
    assert not (inbox / "bad.csv").exists()
    assert REASON in (inbox / "failed" / "bad.csv.reason.txt").read_text()

    second = _night(home, inbox)  # the next night is green
    assert second.is_completed() and not second.result().failed

    shutil.copy(inbox / "failed" / "bad.csv", inbox / "bad.csv")  # the same bytes again
    _settled(inbox / "bad.csv")
    third = _night(home, inbox)
    assert third.is_completed(), "the same bad bytes do not page again"
    (line,) = [x for x in third.result().ingest.lines if "bad.csv" in x]
    assert "failed before, unchanged since" in line and "change it to retry" in line
    ingest = third.result().ingest  # said in the run's line and report, not "already ingested"
    assert ingest.failed_before == 1 and "1 set aside before and unchanged" in ingest.line()
    report = Path(third.result().report_path).read_text()
    assert (
        "put back unchanged, skipped again" in report and f"{inbox / 'bad.csv'}: failed" in report
    )

    (inbox / "bad.csv").write_text(BAD.replace("m1", "m2"))  # changed: tried again
    _settled(inbox / "bad.csv")
    assert _night(home, inbox).is_failed()


def test_a_file_still_being_written_makes_a_completed_run_that_says_it_waits(tmp_path):
    home, inbox = tmp_path / "home", tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(release(tmp_path, 0, 200), inbox / "fresh.parquet")  # just written
    state = _night(home, inbox)
    assert state.is_completed()
    run = state.result()
    assert run.status == "waiting" and run.results == []
    assert run.waiting == (
        f"waiting: {inbox / 'fresh.parquet'} still being written (read once unchanged for"
        " 60s); nothing to fit yet"
    )
    from sparseeval.pipeline.reports.run_report import summary_line

    assert summary_line(run).startswith("nothing fitted; waiting: ")
    assert "set `sources`" not in summary_line(run)

    (inbox / "empty").mkdir()  # sources set, nothing in them yet: waiting too
    state = _night(tmp_path / "other", inbox / "empty")
    assert state.is_completed() and state.result().waiting.startswith("waiting: no results yet")


def test_json_and_the_error_line_name_each_failed_file_and_why(tmp_path, capsys, cli_refresh):
    home, inbox = tmp_path / "home", tmp_path / "inbox"
    inbox.mkdir()
    for name in ("a.csv", "b.csv"):
        (inbox / name).write_text(BAD)
        _settled(inbox / name)
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    code = cli_refresh("--home", str(home), "--source", f"inbox:{inbox}", "--json", *sets)
    out, err = capsys.readouterr()
    assert code == 2  # nothing could run
    doc = json.loads(out)  # one JSON document, failure or not
    assert doc["status"] == "failed" and doc["n_published"] == 0
    assert [(f["source"], f["unit"]) for f in doc["failures"]] == [
        (f"inbox:{inbox}", str(inbox / "a.csv")), (f"inbox:{inbox}", str(inbox / "b.csv"))
    ]  # fmt: skip
    assert all(f["reason"].startswith(f"{f['unit']}: {REASON}") for f in doc["failures"])
    (line,) = err.splitlines()
    assert line.startswith(f"sparseeval refresh: error: refresh failed for source inbox:{inbox}:"
                           f" {inbox / 'a.csv'}: {REASON}")  # fmt: skip
    assert (
        "(and 1 more failed); report at " in line
        and line == "sparseeval refresh: error: " + doc["error"]
    )

    assert cli_refresh("--no-fill", "--home", str(tmp_path / "none"), "--json") == 2
    doc = json.loads(capsys.readouterr().out)  # a run that never started: still one document
    assert doc["status"] == "failed" and doc["error"].startswith("nothing to refresh")
