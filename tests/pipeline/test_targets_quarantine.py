"""Reported scores that the models' own items contradict, fractions in a percent column and
subject accuracies outside 0..1 are quarantined with their reason, and counted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.pipeline.store import Store, ingest, reported_scores
from sparseeval.pipeline.store.contradiction import MIN_PAIRS, contradicted
from sparseeval.pipeline.store.kinds import source_from_spec
from sparseeval.pipeline.store.scores import Refusal, v1_file_scores, v1_scores
from tests.leaderboard_layouts import mmlu_accs, v1_results


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def test_few_pairs_the_items_mean_alone_speaks():
    # TruthfulQA 0.0 where 100 items say 40%: beyond what 100 items explain
    bad, _ = contradicted([0.4, 0.4, 0.4], [100, 100, 100], [0.0, 0.45, 0.55])
    assert bad.tolist() == [True, False, False]
    assert not contradicted([0.4], [5], [0.0])[0][0]  # 5 items say little


def test_many_pairs_follow_the_relation_not_the_identity():
    rng = np.random.default_rng(0)
    m = rng.uniform(0.05, 0.9, 400)
    s = 0.3 + 0.5 * m + rng.normal(0, 0.01, 400)  # another metric than the items (mc2 on mc1)
    bad, _ = contradicted(m, np.full(400, 136), s)
    assert not bad.any()  # far from the item mean, yet what such items imply
    new_m, new_s = np.array([0.1, 0.5, 0.5, 1.0]), np.array([0.0, 0.55, 0.0, 0.9])
    bad, _ = contradicted(new_m, np.full(4, 136), new_s, m, s)
    # 0.0 contradicts; every item right lies beyond the relation's span: more leeway
    assert bad.tolist() == [True, False, True, False] and len(m) >= MIN_PAIRS


def wide_file(path, means: dict[str, float], n_items: int = 100) -> str:
    rows = ["model," + ",".join(f"i{j}" for j in range(n_items))]
    for model, mean in means.items():
        k = round(mean * n_items)
        rows.append(model + "," + ",".join("1" if j < k else "0" for j in range(n_items)))
    path.write_text("\n".join(rows) + "\n")
    return f"wide:truthfulqa={path}"


def test_a_scores_file_row_the_items_contradict_is_quarantined_and_counted(store, tmp_path):
    ingest(store, source_from_spec(wide_file(tmp_path / "tqa.csv", {"a": 0.4, "b": 0.4, "c": 0.6})))
    scores = tmp_path / "scores.csv"
    scores.write_text("model,truthfulqa\na,0.0\nb,0.41\nc,58.0\n")
    (r,) = ingest(store, source_from_spec(f"scores:{scores}"))
    assert "quarantined 2 (2 contradicted by the model's own items)" in r.line()
    assert reported_scores(store)["model"].to_list() == ["c"]
    reasons = dict(store.con.execute("SELECT line, reason FROM quarantine").fetchall())
    assert reasons[2].startswith("reported score 0.0% contradicts the model's 100 stored items")
    assert "(40.0% correct)" in reasons[2]
    assert "0.41 in a percent column reads as 0.41%" in reasons[3]
    assert "a fraction given as percent? (multiply by 100)" in reasons[3]


def test_a_column_of_fractions_in_a_percent_file_is_quarantined_whole(store, tmp_path):
    scores = tmp_path / "scores.csv"
    scores.write_text("model,arc,gsm8k\n" + "".join(f"m{i},0.{50 + i},0.{i}\n" for i in range(5)))
    (r,) = ingest(store, source_from_spec(f"scores:{scores}"))
    assert r.scores.n_quarantined == 10
    (why,) = {w for (w,) in store.con.execute("SELECT DISTINCT reason FROM quarantine").fetchall()
              if "arc" in w}  # fmt: skip
    assert why == ("every arc score in scores.csv is at most 1 (5 rows): fractions in a percent"
                   " column? (multiply by 100)")  # fmt: skip
    scores.write_text("model,gsm8k\n" + "".join(f"m{i},{0.2 * i}\n" for i in range(5)) + "x,12\n")
    (r,) = ingest(store, source_from_spec(f"scores:{scores}"))  # weak models' GSM8K: kept
    assert r.scores.n_quarantined == 0 and r.scores.n_new == 6


def test_a_hub_subject_accuracy_outside_0_1_is_a_refusal(tmp_path):
    data = json.loads(v1_results("org/m", {}, mmlu_accs(anatomy=45.0, others=0.5)))
    got = v1_file_scores(data)["mmlu"]
    assert isinstance(got, Refusal) and got == "mmlu subtask anatomy: acc 45 is outside 0..1"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    frame = v1_scores([(path, 0)], "org/m")
    assert frame.filter(frame["benchmark"] == "mmlu")["refusal"].to_list() == [got]
    good = v1_file_scores(json.loads(v1_results("org/m", {}, mmlu_accs(0.9, 0.4))))["mmlu"]
    assert good == pytest.approx((0.9 + 56 * 0.4) / 57)


def test_the_ingest_summary_and_its_table_count_quarantined_targets(tmp_path):
    from sparseeval.pipeline.sources import ingest_sources

    wide = wide_file(tmp_path / "tqa.csv", {"a": 0.4, "b": 0.5})
    scores = tmp_path / "scores.csv"
    scores.write_text("model,truthfulqa\na,0.0\nb,52.0\n")
    summary = ingest_sources(tmp_path / "s.duckdb", [wide, f"scores:{scores}"], False)
    assert summary.targets_quarantined == 1 and summary.quarantined == 0
    assert summary.scores == 1 and "(2 new model(s)), 1 reported score(s), 0 quarantined" in (
        summary.line()
    )  # the stored score is counted, not only the refused one
    assert summary.line().endswith("0 quarantined, 1 reported score(s) quarantined")
    head, rule = summary.markdown().splitlines()[:2]
    assert "targets quarantined" in head and rule.count("|") == head.count("|")
    assert "reported scores" in head
