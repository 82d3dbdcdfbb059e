"""export-inspect -> (inspect-ai runs only those samples, `sample_id=`) -> predict reads the log.

Offline: the log is written by `inspect_ai.eval` with the model API of
tests/inspect_fixtures.py. The set is a tiny fit whose item ids are the task's sample ids.
"""

from __future__ import annotations

from sparseeval.consume.answers.inspect_answers import read_log
from tests.helpers import cli, published, tiny_fit
from tests.inspect_fixtures import mc_task, write_log

IDS = [f"s{j}" for j in range(60)]


def test_export_run_the_anchors_in_inspect_then_predict(tmp_path, capsys):
    fitted = tiny_fit(item_ids=IDS)
    root = published(tmp_path / "published", "toy_mc", fitted)
    out = tmp_path / "anchors.txt"
    rc, said, err = cli(["export-inspect", "--anchor-set", root, "--benchmark", "toy_mc",
                         "--out", out], capsys)  # fmt: skip
    assert rc == 0, err
    anchors = out.read_text().strip().split(",")
    assert sorted(anchors) == sorted(IDS[j] for j in fitted[2].anchors_)
    assert "--sample-id" in err
    # every sample has target A, the fixed model answers A unless told: s0..s29 right
    questions = {i: (f"question {i}?", ["yes", "no"], "A") for i in IDS}
    wrong = {f"question {i}?": "B" for i in IDS[30:]}
    log = write_log(tmp_path / "logs", mc_task(questions=questions), answers=wrong,
                    sample_id=anchors)  # fmt: skip
    assert sorted(s.item for s in read_log(log).samples) == sorted(anchors)  # only those ran
    rc, said, err = cli(["predict", "--anchor-set", root, "--benchmark", "toy_mc",
                         "--responses", log], capsys)  # fmt: skip
    assert rc == 0, err
    assert "toy_mc" in said and "%" in said
    rc, _, err = cli(["export-inspect", "--anchor-set", root, "--benchmark", "nope",
                      "--out", tmp_path / "x.txt"], capsys)  # fmt: skip
    assert rc == 2 and err.count("\n") == 1
