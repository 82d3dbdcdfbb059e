"""Inspect AI logs as a store source and as `predict`'s answers, on logs inspect-ai writes.

The layout read (inspect_ai 0.3.x: `inspect_ai/log/_recorders/eval.py` and `json.py` in
github.com/UKGovernmentBEIS/inspect_ai, checked on logs of inspect-ai 0.3.285): a `.eval`
zip of `header.json`, `samples/{id}_epoch_{n}.json`, `summaries.json`, `reductions.json` and
`_journal/start.json` (the only header while the run goes on); a `.json` log is one object
with `status`, `eval` and `samples`. Scores `C`/`I`/`P`/`N` or numbers. Every log here is
written by `inspect_ai.eval` itself (tests/inspect_fixtures.py).
"""

from __future__ import annotations

import os
import shutil
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparseeval.consume.answers.inspect_answers import (
    InspectLogError,
    is_inspect_log,
    read_log,
)
from sparseeval.consume.answers.responses import ResponsesError, read_responses_files
from sparseeval.consume.answers.vector import anchor_vector
from sparseeval.pipeline.sources import ingest_sources
from sparseeval.pipeline.store import Store, watched
from sparseeval.pipeline.store.inspect_logs import InspectLogs
from sparseeval.pipeline.store.kinds import source_from_spec
from tests.inspect_fixtures import (
    QUESTIONS,
    chat_task,
    graded_task,
    mc_task,
    still_running,
    write_log,
)

# the fixed model answers A unless told; targets: q1 A, q2 B, 3 A, q4 B
RIGHT_WRONG = {"q1": "1", "q2": "0", "3": "1", "q4": "0"}
BOOM = {"b1": ("boom", ["x", "y"], "A")}  # the fixed model raises on it


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """One real log of each kind, written once for the module."""
    root = tmp_path_factory.mktemp("inspect")
    out = {
        "eval": write_log(root / "a", mc_task(), epochs=2),
        "json": write_log(root / "b", mc_task(), fmt="json"),
        "other": write_log(root / "c", mc_task(), model="fixed/m2", answers={"3+3": "B"}),
        "graded": write_log(root / "d", graded_task({"g1": 0.43, "g2": "P", "g3": 1, "g4": "I"})),
        "error": write_log(root / "e", mc_task(questions=BOOM), fail_on_error=True),
        "errored": write_log(root / "f", mc_task(questions=BOOM | {"q1": QUESTIONS["q1"]})),
    }
    out["running"] = still_running(out["eval"], root / "running.eval")
    return out


def store_with(path: Path, *benchmarks: str) -> Path:
    with Store.open(path) as store:
        for name in benchmarks:
            store.add_benchmark(name)
    return path


def stored(path: Path) -> list[tuple]:
    with Store.open(path, read_only=True) as store:
        return store.con.execute(
            "SELECT m.model, i.item, r.correct, i.hash FROM results r"
            " JOIN models m USING (model_id) JOIN items i USING (item_id) ORDER BY 1, 2"
        ).fetchall()


def test_eval_and_json_logs_read_alike(logs):
    a, b = read_log(logs["eval"]), read_log(logs["json"])
    assert (a.status, a.task, a.model, a.epochs, a.scorer) == ("success", "toy_mc", "fixed/m1",
                                                                2, "choice")  # fmt: skip
    assert a.n_other_epochs == 4  # the second epoch of each sample: not read
    for log in (a, b):
        assert {s.item: s.correct for s in log.samples} == RIGHT_WRONG
    assert {s.item: s.content_hash for s in a.samples} == {
        s.item: s.content_hash for s in b.samples
    }  # the same question, the same hash, whatever the log format
    assert len({s.content_hash for s in a.samples}) == 4
    assert a.order == {"q1": 0, "q2": 1, "3": 2, "q4": 3}  # the dataset's order


def test_the_content_hash_tells_inputs_apart_and_ignores_message_ids(tmp_path):
    runs = [read_log(write_log(tmp_path / f"run{n}", chat_task())) for n in (1, 2)]
    hashes = [{s.item: s.content_hash for s in log.samples} for log in runs]
    assert hashes[0] == hashes[1]  # the same questions in two runs
    assert hashes[0]["c1"] != hashes[0]["c2"]  # same choices and target, other input


def test_ingest_a_log_stores_rows_hashes_and_says_the_epoch_policy(logs, tmp_path):
    path = store_with(tmp_path / "s.duckdb", "toy_mc")
    summary = ingest_sources(path, [f"inspect:{logs['eval']}", str(logs["other"])],
                             fill_if_empty=False)  # fmt: skip
    assert [(r["source"].split(":")[0], r["new"]) for r in summary.sources] == [
        ("inspect", 4), (str(logs["other"]), 4)]  # fmt: skip
    assert "scorer choice (first epoch of 2; 4 later-epoch samples not read)" in summary.lines[0]
    rows = stored(path)
    assert [(m, i, int(c)) for m, i, c, _ in rows] == [
        ("fixed/m1", "3", 1), ("fixed/m1", "q1", 1), ("fixed/m1", "q2", 0), ("fixed/m1", "q4", 0),
        ("fixed/m2", "3", 1), ("fixed/m2", "q1", 1), ("fixed/m2", "q2", 1), ("fixed/m2", "q4", 0),
    ]  # fmt: skip
    hashes = {i: h for _, i, _, h in rows}
    assert hashes == {s.item: f"inspect_sample:{s.content_hash}" for s in
                      read_log(logs["eval"]).samples}  # fmt: skip
    again = ingest_sources(path, [f"inspect:{logs['eval']}"], fill_if_empty=False)
    assert (again.new, again.sources[0]["skipped"]) == (0, 1)


def test_graded_are_stored_errored_and_unknown_are_quarantined_with_their_reason(logs, tmp_path):
    path = store_with(tmp_path / "g.duckdb", "toy_graded")
    summary = ingest_sources(path, [f"inspect:{logs['graded']}"], fill_if_empty=False)
    assert summary.new == 4 and quarantine_reasons(path) == []
    with Store.open(path, read_only=True) as store:  # P: Inspect's partial credit, 0.5
        got = store.con.execute("SELECT item, correct, score FROM results_view ORDER BY item")
        assert got.fetchall() == [("g1", False, 0.43), ("g2", True, 0.5), ("g3", True, None),
                                  ("g4", False, None)]  # fmt: skip
    unknown = ingest_sources(path, [f"inspect:{logs['eval']}"], fill_if_empty=False)
    assert unknown.new == 0 and "unknown benchmark: toy_mc" in " ".join(unknown.lines)
    path = store_with(tmp_path / "s.duckdb", "toy_mc")
    errored = ingest_sources(path, [f"inspect:{logs['errored']}"], fill_if_empty=False)
    assert errored.new == 1 and errored.quarantined == 1
    assert "sample errored: RuntimeError('model crashed')" in quarantine_reasons(path)


def test_a_watched_log_folder_reads_each_finished_log_once(logs, tmp_path, monkeypatch):
    monkeypatch.setattr(watched, "SETTLE_SECONDS", 0.5)
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(logs["running"], folder / "run1.eval")
    shutil.copy(logs["error"], folder / "failed.eval")
    (folder / "logs.json").write_text("{}")  # eval-set's own listing: not a log
    (folder / "notes.json").write_text('{"note": 1}')  # nor is other JSON
    _age(folder)
    path = store_with(tmp_path / "s.duckdb", "toy_mc")
    first = ingest_sources(path, [f"inspect:{folder}"], fill_if_empty=False)
    assert (first.new, first.failed, first.pending) == (0, 0, 1)
    said = " ".join(first.lines)
    assert "status started: its run has not ended" in said
    assert "status error: eval-set retries it" in said
    shutil.copy(logs["eval"], folder / "run1.eval")  # the run ended
    shutil.copy(logs["other"], folder / "run2.eval")  # a new log arrived
    _age(folder)
    second = ingest_sources(path, [f"inspect:{folder}"], fill_if_empty=False)
    assert second.new == 8
    third = ingest_sources(path, [f"inspect:{folder}"], fill_if_empty=False)
    assert third.new == 0 and len(stored(path)) == 8


def test_a_log_being_written_waits_for_the_settle_time(logs, tmp_path, monkeypatch):
    monkeypatch.setattr(watched, "SETTLE_SECONDS", 60)
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(logs["eval"], folder / "new.eval")
    (unit,) = InspectLogs(folder).units(None)
    assert unit.skip is not None and unit.skip.startswith("still being written")


def test_a_log_without_samples_fails_saying_so(logs, tmp_path):
    header_only = tmp_path / "header.eval"
    with zipfile.ZipFile(logs["eval"]) as src, zipfile.ZipFile(header_only, "w") as dst:
        for info in src.infolist():
            if not info.filename.startswith("samples/"):
                dst.writestr(info, src.read(info), compress_type=info.compress_type)
    path = store_with(tmp_path / "s.duckdb", "toy_mc")
    summary = ingest_sources(path, [f"inspect:{header_only}"], fill_if_empty=False)
    assert summary.failed == 1 and "no samples in this log" in " ".join(summary.lines)


def test_a_plain_folder_is_read_as_it_is(logs, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(logs["eval"], folder / "just-written.eval")  # changed a moment ago
    path = store_with(tmp_path / "s.duckdb", "toy_mc")
    assert ingest_sources(path, [str(folder)], fill_if_empty=False).new == 4  # no settle time
    watched_now = ingest_sources(path, [f"inspect:{folder}"], fill_if_empty=False)
    assert (watched_now.new, watched_now.pending) == (0, 1)  # a watched folder waits


def test_plain_paths_are_told_apart(logs, tmp_path):
    assert is_inspect_log(logs["eval"]) and is_inspect_log(logs["json"])
    for spec in (logs["eval"], logs["json"], logs["eval"].parent):
        assert isinstance(source_from_spec(str(spec)), InspectLogs)
    plain = tmp_path / "answers.json"
    plain.write_text('{"q1": 1}')
    assert not is_inspect_log(plain)


def test_predict_reads_answers_from_a_log(logs):
    aset = SimpleNamespace(benchmark="toy_mc", items=["q1", "q2", "3"], item_sources={})
    assert read_responses_files([logs["eval"]], aset) == {"q1": "1", "q2": "0", "3": "1"}
    assert read_responses_files([logs["json"]], aset) == {"q1": "1", "q2": "0", "3": "1"}
    with pytest.raises(InspectLogError, match="its run has not ended"):
        read_responses_files([logs["running"]], aset)
    graded = SimpleNamespace(benchmark="toy_graded", items=["g1", "g2"], item_sources={})
    answers = read_responses_files([logs["graded"]], graded)
    assert answers == {"g1": "0.43", "g2": "0.5"}  # as read: the set's item scale decides
    with pytest.raises(ResponsesError, match=r"graded score \('0\.43'\), but this set's items"
                       " are binary"):  # fmt: skip
        anchor_vector(answers, {"g1": 0, "g2": 1}, 2)
    assert anchor_vector(answers, {"g1": 0, "g2": 1}, 2, graded=True) == pytest.approx([-0.14, 0])


def test_predict_refuses_other_questions_under_the_same_ids(logs):
    sources = {"q1": {"hash": "inspect_sample:" + "0" * 64}, "q2": {}}
    aset = SimpleNamespace(benchmark="toy_mc", items=["q1", "q2"], item_sources=sources)
    with pytest.raises(InspectLogError, match=r"1 answered item\(s\) have another content hash"):
        read_responses_files([logs["eval"]], aset)
    answers = read_responses_files([logs["eval"]], aset, {"ignore_hash_mismatch": True})
    assert answers == {"q1": "1", "q2": "0"}


def quarantine_reasons(path: Path) -> list[str]:
    with Store.open(path, read_only=True) as store:
        return sorted(r for (r,) in store.con.execute("SELECT reason FROM quarantine").fetchall())


def _age(folder: Path) -> None:
    then = time.time() - 60
    for p in folder.iterdir():
        os.utime(p, (then, then))
