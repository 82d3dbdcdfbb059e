"""Leaderboard details in their real layouts (tests/leaderboard_layouts.py), ingested through
the Hub stand-in with the real `huggingface_hub` client: the reported score and the items
(and their hashes) against values computed by hand."""

from __future__ import annotations

import pytest

from sparseeval.consume.answers.identity import LM_EVAL_DOC, ROW_INDEX
from sparseeval.pipeline.store import (
    OpenLLMLeaderboard,
    build_matrix,
    default_hub_client,
    ingest,
    reported_scores,
)
from sparseeval.pipeline.store import retries as retries_module
from sparseeval.pipeline.store.hub import repo_for
from sparseeval.pipeline.store.item_identity import item_identity
from sparseeval.pipeline.store.scores import v1_definitions
from tests.hub_standin import serve_hub
from tests.leaderboard_layouts import (
    TAGS,
    TS_NEW,
    TS_OLD,
    example_hash,
    mmlu_accs,
    v1_card_for,
    v1_results,
    v1_run,
    v2_doc_hash,
    v2_files,
)

ARC, TQA = "harness_arc_challenge_25", "harness_truthfulqa_mc_0"
ANATOMY = "harness_hendrycksTest_anatomy_5"
OLD_SCORES = {ARC: 0.40, "harness_hellaswag_10": 0.61, TQA: 0.45, "harness_winogrande_5": 0.70,
              "harness_gsm8k_5": 0.10}  # fmt: skip


@pytest.fixture
def hub(monkeypatch, tmp_path):
    monkeypatch.setattr(retries_module, "RETRY_BASE_S", 0.01)
    with serve_hub(monkeypatch, tmp_path) as h:
        yield h


def pull(store, spec: str):
    source = OpenLLMLeaderboard.from_spec(spec, default_hub_client())
    return ingest(store, source)


def scores(store) -> dict[str, tuple[float, str]]:
    rows = reported_scores(store).to_dicts()
    return {r["benchmark"]: (r["score"], r["definition"]) for r in rows}


def test_v1_flat_layout_two_runs_the_newest_wins(hub, store):
    answers = {cfg: [1.0, 0.0, 1.0, 1.0] for cfg in TAGS}
    old = v1_run(TS_OLD, "flat", answers)
    new = v1_run(TS_NEW, "flat", {ARC: [0.0, 0.0, 1.0, 1.0]})
    runs = {cfg: [TS_OLD] for cfg in TAGS} | {ARC: [TS_OLD, TS_NEW]}
    hub.commit(repo_for("org/flat", "v1", "open-llm-leaderboard"), old | new | {
        f"results_{TS_OLD}.json": v1_results("org/flat", OLD_SCORES, mmlu_accs(0.9, 0.4)),
        f"results_{TS_NEW}.json": v1_results("org/flat", {ARC: 0.55}, None),
        "README.md": v1_card_for(runs),
    })  # fmt: skip
    (r,) = pull(store, "org/flat")
    assert r.status == "ok", r.message
    assert "reported scores: read 6; new 6" in r.message
    # items: the latest ARC file (acc_norm, not acc), the others' only run, in row order
    assert build_matrix(store, "arc")[0].values.tolist() == [[-1, -1, 1, 1]]
    assert build_matrix(store, "truthfulqa")[0].values.tolist() == [[1, -1, 1, 1]]  # mc1
    assert build_matrix(store, "mmlu")[0].item_ids.tolist() == [
        *(f"anatomy:{i}" for i in range(4)), *(f"virology:{i}" for i in range(4))
    ]  # fmt: skip
    assert item_identity(store, "arc")["3"] == {"hash": None, "id_kind": ROW_INDEX}
    got = scores(store)
    expected = {"arc": 0.55, "hellaswag": 0.61, "truthfulqa": 0.45, "winogrande": 0.70,
                "gsm8k": 0.10, "mmlu": (0.9 + 56 * 0.4) / 57}  # fmt: skip
    assert {b: s for b, (s, _) in got.items()} == pytest.approx(expected)
    assert {b: d for b, (_, d) in got.items()} == {b: v1_definitions()[b] for b in expected}


def test_v1_mmlu_needs_all_57_subjects(hub, store):
    files = v1_run(TS_OLD, "flat", {ANATOMY: [1.0, 0.0]})
    partial = {s: a for s, a in mmlu_accs(0.9, 0.4).items() if s != "virology"}
    hub.commit(repo_for("org/part", "v1", "open-llm-leaderboard"), files | {
        f"results_{TS_OLD}.json": v1_results("org/part", {}, partial),
        "README.md": v1_card_for({ANATOMY: [TS_OLD]}),
    })  # fmt: skip
    (r,) = pull(store, "org/part")
    assert r.status == "ok" and scores(store) == {}


def test_v1_lighteval_layout_keeps_each_items_hash(hub, store):
    answers = {ARC: [0.0, 1.0, 1.0], TQA: [1.0, 0.0], ANATOMY: [1.0, 1.0, 0.0]}
    hub.commit(repo_for("org/light", "v1", "open-llm-leaderboard"),
               v1_run(TS_NEW, "lighteval", answers) | {
        f"results_{TS_NEW}.json": v1_results("org/light", {ARC: 2 / 3, TQA: 0.52}, None),
        "README.md": v1_card_for({cfg: [TS_NEW] for cfg in answers}),
    })  # fmt: skip
    (r,) = pull(store, "org/light")
    assert r.status == "ok", r.message
    assert build_matrix(store, "arc")[0].values.tolist() == [[-1, 1, 1]]  # metrics.acc_norm
    assert build_matrix(store, "truthfulqa")[0].values.tolist() == [[1, -1]]  # metrics.mc1
    arc = item_identity(store, "arc")
    assert arc == {str(i): {"hash": f"example:{example_hash(ARC, i)}", "id_kind": ROW_INDEX}
                   for i in range(3)}  # fmt: skip
    mmlu = item_identity(store, "mmlu")
    assert mmlu["anatomy:2"]["hash"] == f"example:{example_hash(ANATOMY, 2)}"
    assert {b: s for b, (s, _) in scores(store).items()} == pytest.approx(
        {"arc": 2 / 3, "truthfulqa": 0.52}
    )


def test_v2_samples_with_doc_hash_and_normalized_scores(hub, store):
    bbh_bool, bbh_date = "leaderboard_bbh_boolean_expressions", "leaderboard_bbh_date_understanding"
    murder, objects = "leaderboard_musr_murder_mysteries", "leaderboard_musr_object_placements"
    team = "leaderboard_musr_team_allocation"
    answers = {bbh_bool: [1.0, 0.0, 1.0], bbh_date: [1.0, 1.0, 0.0], murder: [1.0, 0.0],
               objects: [0.0, 1.0], team: [1.0, 0.0, 0.0],
               "leaderboard_gpqa_main": [1.0, 0.0, 0.0, 1.0]}  # fmt: skip
    results = {
        "leaderboard": {"acc_norm,none": 0.5, "alias": "leaderboard"},
        "leaderboard_bbh": {"acc_norm,none": 0.6, "alias": " - leaderboard_bbh"},
        bbh_bool: {"acc_norm,none": 0.75, "alias": "  - leaderboard_bbh_boolean_expressions"},
        bbh_date: {"acc_norm,none": 0.5, "alias": "  - leaderboard_bbh_date_understanding"},
        "leaderboard_gpqa": {"acc_norm,none": 0.4, "alias": " - leaderboard_gpqa"},
        "leaderboard_gpqa_main": {"acc_norm,none": 0.4, "alias": "  - leaderboard_gpqa_main"},
        "leaderboard_math_hard": {"exact_match,none": 0.12, "alias": " - leaderboard_math_hard"},
        "leaderboard_mmlu_pro": {"acc,none": 0.37, "alias": " - leaderboard_mmlu_pro"},
        "leaderboard_musr": {"acc_norm,none": 0.45, "alias": " - leaderboard_musr"},
        murder: {"acc_norm,none": 0.6, "alias": "  - leaderboard_musr_murder_mysteries"},
        objects: {"acc_norm,none": 0.3, "alias": "  - leaderboard_musr_object_placements"},
        team: {"acc_norm,none": 0.5, "alias": "  - leaderboard_musr_team_allocation"},
    }
    hub.commit("open-llm-leaderboard/org__v2-details", v2_files("org/v2", answers, results))
    (r,) = pull(store, "v2:*")
    assert r.status == "ok", r.message
    assert build_matrix(store, "bbh")[0].item_ids.tolist() == [
        *(f"boolean_expressions:{i}" for i in range(3)),
        *(f"date_understanding:{i}" for i in range(3)),
    ]
    bbh = item_identity(store, "bbh")
    assert bbh["date_understanding:1"] == {
        "hash": f"doc_hash:{v2_doc_hash(bbh_date, 1)}", "id_kind": LM_EVAL_DOC
    }  # fmt: skip
    got = scores(store)
    # (raw - 1/choices) / (1 - 1/choices), per subtask then averaged (MuSR 2, 5 and 3
    # choices); GPQA 4 choices, MMLU-Pro 10; MATH not rescaled. BBH has 2 of its 24
    # subtasks here: a partial group is not a score (quarantined, saying so).
    expected = {"musr": ((0.6 - 1 / 2) / (1 / 2) + (0.3 - 1 / 5) / (4 / 5)
                         + (0.5 - 1 / 3) / (2 / 3)) / 3,
                "gpqa": (0.4 - 0.25) / 0.75, "mmlu_pro": (0.37 - 0.1) / 0.9,
                "math_hard": 0.12}  # fmt: skip
    assert {b: s for b, (s, _) in got.items()} == pytest.approx(expected)
    assert got["musr"][1] == (
        "Open LLM Leaderboard v2 MuSR: acc_norm normalized from 1/choices (random) to 1 per"
        " subtask, mean of 3 subtasks"
    )
    (why,) = store.con.execute("SELECT reason FROM quarantine WHERE raw LIKE '%,bbh,%'").fetchone()
    assert why.startswith("bbh: 2 of 24 subtasks in the results file")
    assert (
        got["gpqa"][1] == "Open LLM Leaderboard v2 GPQA: acc_norm normalized from 1/4 (random) to 1"
    )
