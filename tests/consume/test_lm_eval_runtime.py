"""How the suite members of one lm-eval run share answers (`consume.lm_eval.runtime`), and the
suite's `--samples` export; no lm-eval needed.

lm-eval runs `process_results` for every task before it aggregates any (lm_eval/evaluator.py
`evaluate`), and builds every task (our `process_docs`: `begin`) before that: a member
built after a run has aggregated starts a new run. lm-eval 0.4.13 also reads each task's
docs again right after aggregating it (lm_eval/evaluator_utils.py `_collect_results`:
`original = len(task.eval_docs)`, which calls `process_docs`), before the next member
aggregates: that is not a new run.
"""

from __future__ import annotations

import json
import math

import pytest

from sparseeval.cli import main
from sparseeval.consume.lm_eval import runtime as rt
from sparseeval.consume.sets.suite_set import load_suite
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.pipeline.versions import set_latest

ITEMS = {"mmlu": [f"anatomy:{j}" for j in range(60)], "gsm8k": [str(j) for j in range(50)]}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite

    root = tmp_path_factory.mktemp("suite")
    lb = {b: ResponseMatrix(m.values, m.model_ids, ITEMS[b])
          for b, m in make_leaderboard(360, {"mmlu": 60, "gsm8k": 50}, seed=4).items()}  # fmt: skip
    settings = Settings.of(home=root, n_anchors=8, n_test=60, n_valid=60, n_calib=60,
                        refine_steps=2, epochs=60, patience=10, ensemble=1)  # fmt: skip
    write_suite(root, fit_suite(lb, settings), settings)
    set_latest(root, "suite", 1)
    return str(root)


def run(root: str, answers: dict[str, dict[str, int]]) -> dict:
    """One lm-eval run of the given members: build all, record every doc, then aggregate."""
    for b in answers:
        rt.begin(root, 1, b)
    for b, given in answers.items():
        for item, value in given.items():
            rt.record(root, 1, b, f"{b}/{item}", value)
    out = {}
    for b, given in answers.items():  # as lm-eval's _collect_results: aggregate, then eval_docs
        out[b] = rt.suite_estimates(root, 1, b, [(f"{b}/{i}", v) for i, v in given.items()])
        rt.begin(root, 1, b)
    return out


def test_members_read_every_benchmark_and_a_later_run_starts_afresh(root):
    suite = load_suite(root)
    answers = {b: {i: (k + len(b)) % 2 for k, i in enumerate(suite.items(b))}
               for b in suite.benchmarks}  # fmt: skip
    want = suite.predict(answers)
    got = run(root, answers)
    for b in suite.benchmarks:
        assert got[b][0] == want[b] and got[b][1] == want["average"]
    assert want["mmlu"] != suite.own["mmlu"].predict(answers["mmlu"])  # the joint reader

    # the next run has mmlu only: its own reader, and no suite average
    alone = run(root, {"mmlu": answers["mmlu"]})["mmlu"]
    assert alone[0] == suite.own["mmlu"].predict(answers["mmlu"]) and alone[1] is None
    assert math.isnan(rt.value(alone[1], "low")) and rt.value(alone[0]) == alone[0].value


def test_suite_samples_export_covers_every_member(root, tmp_path, capsys):
    out = tmp_path / "anchors.json"
    rc = main(["export-lm-eval", "--anchor-set", root, "--benchmark", "suite", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    suite = load_suite(root)
    mapping = json.loads(out.read_text())
    assert sorted(mapping) == sorted("mmlu_anatomy" if b == "mmlu" else b
                                     for b in suite.benchmarks)  # fmt: skip
    assert mapping["gsm8k"] == sorted(int(i) for i in suite.items("gsm8k"))
    assert mapping["mmlu_anatomy"] == sorted(int(i.split(":")[1]) for i in suite.items("mmlu"))


def test_suite_anchors_name_each_members_lm_eval_doc(root, capsys):
    """`anchors --benchmark suite` on a suite of doc-id sets: each suite id `B/ITEM` with its
    member's task and doc (it said "no lm-eval task/doc ids: synthetic item ids")."""
    assert main(["anchors", "--anchor-set", root, "--benchmark", "suite"]) == 0
    out, err = capsys.readouterr()
    suite = load_suite(root)
    rows = [line.split("\t") for line in out.splitlines()]
    item = suite.items("mmlu")[0]
    assert [f"mmlu/{item}", "mmlu_anatomy", item.split(":")[1]] in rows
    assert [f"gsm8k/{suite.items('gsm8k')[0]}", "gsm8k", suite.items("gsm8k")[0]] in rows
    assert "(lm-eval tasks gsm8k, mmlu_anatomy)" in err and "synthetic" not in err
