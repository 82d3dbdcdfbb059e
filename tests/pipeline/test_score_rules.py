"""Reported scores follow the rules result rows do (issue 28, class 3): one id rule on every
score path, per-part range checks, a partial group is no score, a bad results file fails
alone. Results layouts: v1 `results_*.json` keyed `harness|{task}|{shots}` (the leaderboard's
`src/leaderboard/read_evals.py`, see tests/leaderboard_layouts.py); v2 lm-eval 0.4 results
keyed `"{metric},none"` per task and group (lm_eval/evaluator.py, as in
EleutherAI/lm-evaluation-harness `save_results_aggregated`)."""

from __future__ import annotations

import json
import unicodedata

import pytest

from sparseeval.consume.benchmarks import BBH_SUBTASKS, MUSR_SUBTASKS
from sparseeval.pipeline.store import Store, ingest, reported_scores
from sparseeval.pipeline.store.kinds import source_from_spec
from sparseeval.pipeline.store.scores import (
    Refusal,
    v1_file_scores,
    v1_scores,
    v2_file_scores,
    v2_scores,
)
from tests.leaderboard_layouts import mmlu_accs, v1_results


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def _reasons(store) -> list[str]:
    sql = "SELECT reason FROM quarantine ORDER BY line"
    return [r for (r,) in store.con.execute(sql).fetchall()]


def test_scores_file_model_ids_follow_the_result_rows_rule(store, tmp_path):
    nfc = unicodedata.normalize("NFC", "org/café")
    rows = [("org/a", 50), ("org/a ", 50), ("org/\u200ba", 50), (nfc, 60),
            (unicodedata.normalize("NFD", nfc), 60),
            ("org/\x1bb", 70), ("org/\u202ec", 70)]  # an escape, a bidi override  # fmt: skip
    p = tmp_path / "scores.csv"
    p.write_text("model,benchmark,score\n" + "".join(f'"{m}",arc,{v}\n' for m, v in rows),
                 encoding="utf-8")  # fmt: skip
    (r,) = ingest(store, source_from_spec(f"scores:{p}"))
    assert r.status == "ok", r.message
    got = {m: s for m, s in reported_scores(store).select("model", "score").rows()}
    assert got == {"org/a": 0.5, nfc: 0.6}  # no phantom models
    assert r.scores.n_duplicates == 3 and r.scores.n_quarantined == 2
    assert _reasons(store) == ["model id has a control character (\\x1b)",
                               "model id has a format character (\\u202e)"]  # fmt: skip


def test_a_subject_accuracy_outside_0_1_or_missing_is_no_mmlu_score():
    high = v1_file_scores(json.loads(v1_results("org/m", {}, mmlu_accs(5.0, 0.5))))["mmlu"]
    low = v1_file_scores(json.loads(v1_results("org/m", {}, mmlu_accs(-2.0, 0.5))))["mmlu"]
    assert high == "mmlu subtask anatomy: acc 5 is outside 0..1"
    assert low == "mmlu subtask anatomy: acc -2 is outside 0..1"
    one = {"anatomy": 0.5}
    part = v1_file_scores(json.loads(v1_results("org/m", {}, one)))["mmlu"]
    assert isinstance(part, Refusal) and part.startswith("mmlu: 1 of 57 subtasks")


def _v2(tasks: dict[str, float]) -> dict:
    return {t: {"acc_norm,none": v, "alias": f"  - {t}"} for t, v in tasks.items()}


def test_a_partial_v2_group_is_not_a_score():
    one_bbh = _v2({"leaderboard_bbh_navigate": 0.9})
    got = v2_file_scores(one_bbh, {"leaderboard_bbh_navigate": 2})["bbh"]
    assert got == ("bbh: 1 of 24 subtasks in the results file (no boolean_expressions): a"
                   " partial group is not a score")  # fmt: skip
    musr = _v2({"leaderboard_musr_murder_mysteries": 0.6})
    got = v2_file_scores(musr, {"leaderboard_musr_murder_mysteries": 2})["musr"]
    assert isinstance(got, Refusal) and got.startswith("musr: 1 of 3 subtasks")
    full = _v2({f"leaderboard_musr_{s}": 0.5 for s in MUSR_SUBTASKS})
    score, how = v2_file_scores(full, dict.fromkeys(full, 2))["musr"]
    assert score == 0.0 and how.endswith("mean of 3 subtasks")
    bbh = _v2({f"leaderboard_bbh_{s}": 1.0 for s in BBH_SUBTASKS})
    assert v2_file_scores(bbh, dict.fromkeys(bbh, 2))["bbh"][0] == 1.0


def test_a_v2_part_outside_0_1_is_refused_not_normalized():
    full = _v2({f"leaderboard_musr_{s}": 0.5 for s in MUSR_SUBTASKS})
    full["leaderboard_musr_team_allocation"]["acc_norm,none"] = 5.0
    got = v2_file_scores(full, dict.fromkeys(full, 2))["musr"]
    assert got == "musr subtask team_allocation: acc_norm 5 is outside 0..1"
    gpqa = {"leaderboard_gpqa": {"acc_norm,none": -2.0}}  # normalized, it read as 0.0
    assert v2_file_scores(gpqa, {})["gpqa"] == (
        "gpqa subtask leaderboard_gpqa: acc_norm -2 is outside 0..1"
    )


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_one_bad_results_file_fails_alone(tmp_path, version):
    nested = tmp_path / "results_2024-01-01T00-00-00.json"
    nested.write_text('{"results": ' + "[" * 100_000)
    good = tmp_path / "results_2024-02-01T00-00-00.json"
    if version == "v1":
        good.write_text(v1_results("org/m", {"harness_arc_challenge_25": 0.5}, None))
        frame = v1_scores([(nested, 0), (good, 1)], "org/m")
    else:
        good.write_text(json.dumps({"results": {"leaderboard_gpqa": {"acc_norm,none": 0.4}}}))
        frame = v2_scores([(nested, 0), (good, 1)], {}, "org/m")
    rows = {r["benchmark"]: r for r in frame.to_dicts()}
    assert rows[""]["refusal"] == (
        "results file results_2024-01-01T00-00-00.json: not readable JSON (nested too deeply)"
    )
    assert rows[""]["ref_no"] == 0
    assert rows["arc" if version == "v1" else "gpqa"]["refusal"] is None
