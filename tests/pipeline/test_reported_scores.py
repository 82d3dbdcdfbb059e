"""Reported scores: stored next to the items with definition and provenance; used as targets.

The lm-eval results JSON below is in lm-eval 0.4's real layout: `simple_evaluate` in
`lm_eval/evaluator.py` builds `{"results": {task_or_group: {"alias": ..., "metric,filter":
value, "metric_stderr,filter": ...}}, "groups": ..., "group_subtasks": ..., "configs": ...,
"versions": ..., "n-shot": ..., "higher_is_better": ..., "n-samples": ..., "config":
{"model": ..., "model_args": ...}, ...}` and `EvaluationTracker.save_results_aggregated`
(`lm_eval/loggers/evaluation_tracker.py`) adds `model_name` and writes it as
`results_{date_id}.json` beside `samples_{task}_{date_id}.jsonl` (lm-eval 0.4.13, installed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparseeval.method.matrix import MatrixError
from sparseeval.pipeline.store import (
    LmEvalRun,
    LongTable,
    ScoresFile,
    Store,
    build_matrix,
    ingest,
    reported_scores,
)
from sparseeval.pipeline.store.kinds import source_from_spec
from tests.lm_eval_cli import arc_doc, lm_eval, needs_lm_eval, original_arc_task

GROUP = (
    "(group aggregate, as lm-eval reports it: subjects weighted by size, the mean over all"
    " questions)"
)
TS = "2024-05-01T12-00-00.123456"
METABENCH = Path("/work/shared/data/metabench_reduced/open-llm-leaderboard.csv")


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def scores(store, benchmark=None) -> dict[tuple[str, str], tuple[float, str]]:
    frame = reported_scores(store, benchmark)
    return {(r["model"], r["benchmark"]): (r["score"], r["definition"]) for r in frame.to_dicts()}


def quarantined(store) -> list[tuple[int, str]]:
    return store.con.execute("SELECT line, reason FROM quarantine ORDER BY line").fetchall()


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def lm_eval_output(folder: Path, arc_norm: float = 2 / 3) -> Path:
    """One `--log_samples` run: arc_challenge (3 docs), gsm8k (2 filters), mmlu_anatomy."""
    folder.mkdir(parents=True, exist_ok=True)
    arc = [{"doc_id": d, "filter": "none", "metrics": ["acc", "acc_norm"], "acc": 1.0,
            "acc_norm": v} for d, v in enumerate([1.0, 0.0, 1.0])]  # fmt: skip
    gsm = [{"doc_id": d, "filter": f, "metrics": ["exact_match"], "exact_match": v}
           for d in range(4) for f, v in (("strict-match", float(d == 0)),
                                          ("flexible-extract", float(d < 2)))]  # fmt: skip
    mmlu = [{"doc_id": d, "filter": "none", "metrics": ["acc"], "acc": float(d == 0)}
            for d in range(2)]  # fmt: skip
    write_jsonl(folder / f"samples_arc_challenge_{TS}.jsonl", arc)
    write_jsonl(folder / f"samples_gsm8k_{TS}.jsonl", gsm)
    write_jsonl(folder / f"samples_mmlu_anatomy_{TS}.jsonl", mmlu)
    results = {
        "results": {
            "arc_challenge": {"alias": "arc_challenge", "acc,none": 1.0, "acc_stderr,none": 0.0,
                              "acc_norm,none": arc_norm, "acc_norm_stderr,none": 0.33},
            "gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.25,
                      "exact_match_stderr,strict-match": 0.25,
                      "exact_match,flexible-extract": 0.5,
                      "exact_match_stderr,flexible-extract": 0.29},
            "mmlu": {"acc,none": 0.5, "acc_stderr,none": 0.35, "alias": "mmlu"},
            "mmlu_anatomy": {"alias": " - anatomy", "acc,none": 0.5, "acc_stderr,none": 0.35},
        },
        "groups": {"mmlu": {"acc,none": 0.5, "acc_stderr,none": 0.35, "alias": "mmlu"}},
        "group_subtasks": {"mmlu": ["mmlu_anatomy"], "arc_challenge": [], "gsm8k": []},
        "configs": {}, "versions": {"arc_challenge": 1.0, "gsm8k": 3.0, "mmlu": 2},
        "n-shot": {"arc_challenge": 25, "gsm8k": 5, "mmlu_anatomy": 5},
        "higher_is_better": {"arc_challenge": {"acc": True, "acc_norm": True}},
        "n-samples": {"arc_challenge": {"original": 3, "effective": 3}},
        "config": {"model": "hf", "model_args": "pretrained=org/model-7b,dtype=bfloat16"},
        "model_name": "org/model-7b", "model_name_sanitized": "org__model-7b",
    }  # fmt: skip
    (folder / f"results_{TS}.json").write_text(json.dumps(results, indent=2))
    return folder


def test_lm_eval_results_json_scores_are_stored_with_definition_and_source(store, tmp_path):
    run = lm_eval_output(tmp_path / "out" / "org__model-7b")
    (r,) = ingest(store, LmEvalRun(run))
    assert r.status == "ok" and r.n_new == 3 + 4 + 2
    assert (r.scores.n_read, r.scores.n_new, r.scores.n_quarantined) == (3, 3, 0)
    assert "reported scores: read 3; new 3, updated 0, unchanged 0" in r.line()
    assert scores(store) == {
        ("org/model-7b", "arc"): (2 / 3, "lm-eval arc_challenge acc_norm"),
        ("org/model-7b", "gsm8k"): (0.25, "lm-eval gsm8k exact_match (filter strict-match)"),
        ("org/model-7b", "mmlu"): (0.5, f"lm-eval mmlu acc {GROUP}"),
    }
    refs = set(reported_scores(store)["source_ref"])
    assert refs == {str(run / f"results_{TS}.json")}


def test_a_newer_value_replaces_the_older_one_and_keeps_history(store, tmp_path):
    ingest(store, LmEvalRun(lm_eval_output(tmp_path / "a")))
    (r,) = ingest(store, LmEvalRun(lm_eval_output(tmp_path / "a", arc_norm=0.7)))
    assert (r.scores.n_updated, r.scores.n_unchanged) == (1, 2)
    assert scores(store, "arc")[("org/model-7b", "arc")][0] == 0.7
    old = store.con.execute("SELECT score, definition FROM reported_score_history").fetchall()
    assert old == [(2 / 3, "lm-eval arc_challenge acc_norm")]


def test_a_scores_csv_in_percent_is_stored_and_bad_scores_are_quarantined(store, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(
        "model,benchmark,score,definition\n"
        "a/m1,arc,62.5,lm-eval arc_challenge acc_norm\n"  # line 2
        "a/m2,mmlu,100,\n"  # 3: no definition
        "a/m3,arc,abc,x\n"  # 4
        "a/m4,arc,100.5,x\n"  # 5
        "a/m5,arc,-1,x\n"  # 6
        "a/m6,nope,50,x\n"  # 7
        "a/m7,arc,,x\n"  # 8
        "a/m8,arc,nan,x\n"  # 9
    )
    (r,) = ingest(store, source_from_spec(f"scores:{path}"))
    assert (r.status, r.n_read, r.scores.n_read, r.scores.n_new) == ("ok", 0, 8, 1)
    assert r.scores.n_quarantined == 7
    assert scores(store) == {("a/m1", "arc"): (0.625, "lm-eval arc_challenge acc_norm")}
    assert quarantined(store) == [
        (3, "reported score without a definition"),
        (4, "reported score is not a number: abc"),
        (5, "reported score 100.5 is outside 0..100 (percent)"),
        (6, "reported score -1 is outside 0..100 (percent)"),
        (7, "unknown benchmark: nope"),
        (8, "missing reported score"),
        (9, "reported score is not a number: nan"),
    ]


def test_a_score_above_one_in_lm_eval_results_is_quarantined(store, tmp_path):
    run = lm_eval_output(tmp_path / "out", arc_norm=66.7)  # a percent where lm-eval has a fraction
    (r,) = ingest(store, LmEvalRun(run))
    assert (r.scores.n_new, r.scores.n_quarantined) == (2, 1)
    assert ("org/model-7b", "arc") not in scores(store)
    assert quarantined(store) == [
        (
            None,
            "reported score 66.7 is outside 0..1"
            " (a fraction: a percentage where a fraction belongs?)",
        )
    ]


def test_the_leaderboard_layout_gets_the_leaderboard_definitions(store, tmp_path):
    path = tmp_path / "open-llm-leaderboard.csv"
    path.write_text(
        "name,link,complete,avg,arc,hellaswag,mmlu,truthfulqa,winogrande,gsm8k,nparams\n"
        "org/a,https://x,True,50,61.5,82.0,62.25,42.5,77.75,53.0,7.24B\n"
        "org/b,https://y,False,,40.0,,30.0,45.0,,,1B\n"
    )
    (r,) = ingest(store, ScoresFile(path))
    assert (r.scores.n_read, r.scores.n_new, r.scores.n_quarantined) == (9, 9, 0)
    got = scores(store)
    assert got[("org/a", "mmlu")] == (
        0.6225, "Open LLM Leaderboard v1 MMLU (5-shot): mean of 57 subject accuracies"
    )  # fmt: skip
    assert got[("org/b", "truthfulqa")] == (
        0.45,
        "Open LLM Leaderboard v1 TruthfulQA (0-shot): mc2",
    )
    assert ("org/b", "gsm8k") not in got and len(got) == 9  # an empty cell is no score


@pytest.mark.skipif(not METABENCH.exists(), reason="metabench data not here")
def test_metabench_open_llm_leaderboard_csv_is_ingestible(store):
    (r,) = ingest(store, source_from_spec(f"scores:{METABENCH}"))
    assert r.status == "ok" and r.scores.n_quarantined == 0 and r.scores.n_new > 6_900 * 5
    mmlu = scores(store, "mmlu")[("0-hero/Matter-0.1-7B", "mmlu")]
    assert mmlu[0] == pytest.approx(0.6242373141477038)


def tiny_store(store, tmp_path, n_models: int = 12, with_scores: int = 12) -> None:
    """arc: model i answers items 0..2 correctly up to i mod 4; reported i percent."""
    rows = ["model,benchmark,item,correct"] + [
        f"m{i:02d},arc,{j},{int(j < i % 4)}" for i in range(n_models) for j in range(3)
    ]
    lines = ["model,benchmark,score,definition"] + [
        f"m{i:02d},arc,{i},leaderboard arc acc_norm" for i in range(with_scores)
    ]
    ingest_tables(store, tmp_path, rows, lines)


def ingest_tables(store, tmp_path, rows: list[str], lines: list[str]) -> None:
    """Ingest the long table `rows` (with its header), then the scores file `lines`."""
    (tmp_path / "long.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "scores.csv").write_text("\n".join(lines) + "\n")
    ingest(store, LongTable(tmp_path / "long.csv"))
    ingest(store, ScoresFile(tmp_path / "scores.csv"))


def test_build_matrix_targets_reported_items_and_auto(store, tmp_path):
    tiny_store(store, tmp_path)
    m, s = build_matrix(store, "arc", target="reported")
    assert m.targets.tolist() == [i / 100 for i in range(12)]
    assert (s.target, s.target_definition, s.target_note) == (
        "reported", "leaderboard arc acc_norm", ""
    )  # fmt: skip
    auto, s_auto = build_matrix(store, "arc", target="auto")
    assert s_auto.target == "reported" and auto.targets.tolist() == m.targets.tolist()
    items, s_items = build_matrix(store, "arc")  # the default: items, as before
    assert items.targets is None and items.y[:4].tolist() == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    assert (s_items.target, s_items.target_definition) == ("items", "mean over the 3 stored items")
    assert s.fingerprint != s_items.fingerprint  # the targets are part of the data
    assert "target reported: leaderboard arc acc_norm" in s.line()


def test_a_missing_score_falls_back_in_auto_and_is_refused_in_reported(store, tmp_path):
    tiny_store(store, tmp_path, with_scores=10)
    m, s = build_matrix(store, "arc", target="auto")
    assert m.targets is None and s.target == "items"
    why = "models without a reported score: 2 of 12"
    assert s.target_note == f"auto: {why}, so the target is the items' mean"
    with pytest.raises(MatrixError, match=rf"target reported: {why} \(e\.g\. m10, m11\)"):
        build_matrix(store, "arc", target="reported")
    with pytest.raises(ValueError, match="unknown target 'best'"):
        build_matrix(store, "arc", target="best")


def test_a_store_from_before_the_table_keeps_working(tmp_path):
    path = tmp_path / "old.duckdb"
    with Store.open(path) as s:
        tiny_store(s, tmp_path)
        s.con.execute("DROP VIEW reported_scores_view")
        s.con.execute("DROP TABLE reported_scores; DROP TABLE reported_score_history")
        s.con.execute("DELETE FROM meta WHERE key = 'schema_fingerprint'")  # not this schema's
    with Store.open(path, read_only=True) as s:  # read-only: the schema is not updated
        m, summary = build_matrix(s, "arc", target="auto")
        assert m.shape == (12, 3) and summary.target == "items"
    with Store.open(path) as s:  # opened for writing, the tables are created again
        assert s.con.execute("SELECT count(*) FROM reported_scores").fetchall() == [(0,)]
        (r,) = ingest(s, ScoresFile(tmp_path / "scores.csv"), force=True)
        assert r.scores.n_new == 12
        assert build_matrix(s, "arc", target="auto")[1].target == "reported"


@needs_lm_eval
def test_the_real_lm_eval_cli_results_json_gives_the_reported_score(store, tmp_path):
    """lm-eval 0.4.13's own output (dummy model, local ARC-like data): the stored score is
    the results JSON's `acc,none`, the mean of the samples' `acc` read as items."""
    data, train = tmp_path / "arc_test.jsonl", tmp_path / "arc_train.jsonl"
    write_jsonl(data, [arc_doc(j) for j in range(12)])
    write_jsonl(train, [arc_doc(100 + j) for j in range(5)])
    original_arc_task(tmp_path / "tasks", data, train)
    args = ["--tasks", "arc_local", "--include_path", tmp_path / "tasks", "--num_fewshot", "1"]
    results, _, _ = lm_eval(tmp_path, *args, own_tasks_only=True)
    store.add_benchmark("arc_local")
    (r,) = ingest(store, LmEvalRun(tmp_path / "out", model="dummy"))
    assert (r.n_new, r.scores.n_new) == (12, 1)
    ((mean,),) = store.con.execute("SELECT avg(correct::INT) FROM results_view").fetchall()
    assert scores(store) == {
        ("dummy", "arc_local"): (results["arc_local"]["acc,none"], "lm-eval arc_local acc")
    }
    assert results["arc_local"]["acc,none"] == pytest.approx(mean)


def test_a_score_column_in_a_wide_or_long_table_is_a_reported_score_not_an_item(store, tmp_path):
    wide = tmp_path / "arc_wide.csv"
    wide.write_text("model,0,1,score\norg/a,1,0,55.5\norg/b,0,0,\norg/c,1,1,x\n")
    (r,) = ingest(store, source_from_spec(f"wide:arc={wide}"))
    assert (r.n_new, r.scores.n_new, r.scores.n_quarantined) == (6, 1, 1)
    assert build_matrix(store, "arc")[0].item_ids.tolist() == ["0", "1"]
    long = tmp_path / "long.csv"
    long.write_text(
        "model,benchmark,item,correct,score\n"
        "org/d,gsm8k,0,1,40\norg/d,gsm8k,1,0,40\n"  # repeated on each item row: one score
        "org/e,gsm8k,0,1,10\norg/e,gsm8k,1,1,20\n"  # two values for one pair: refused
    )
    (r,) = ingest(store, LongTable(long))
    assert (r.n_new, r.scores.n_new, r.scores.n_quarantined) == (4, 1, 2)
    definition = "as reported in {} (definition not given)"
    assert scores(store) == {
        ("org/a", "arc"): (0.555, definition.format("arc_wide.csv")),
        ("org/d", "gsm8k"): (0.4, definition.format("long.csv")),
    }
    reasons = {reason for _, reason in quarantined(store)}
    assert reasons == {
        "reported score is not a number: x",
        "conflicting reported scores for this model and benchmark in one source",
    }


def test_a_score_column_in_a_parquet_long_table(store, tmp_path):
    import polars as pl

    path = tmp_path / "long.parquet"
    pl.DataFrame({"model": ["a", "a"], "benchmark": ["arc", "arc"], "item": ["0", "1"],
                  "correct": [1, 0], "score": [62.5, 62.5]}).write_parquet(path)  # fmt: skip
    (r,) = ingest(store, LongTable(path))
    assert (r.n_new, r.scores.n_new) == (2, 1) and scores(store)[("a", "arc")][0] == 0.625


def test_an_lm_eval_run_ingested_after_a_hundred_models_with_scores_lands(store, tmp_path):
    """The contradiction check read its pairs into polars inferring types from the first 100
    rows: the stored scores' text is NULL, so the 101st model's lm-eval run failed ("could
    not append value: "0.25" of type: str"; a history of one lm-eval run per model)."""
    n = 120
    rows = ["model,benchmark,item,correct"] + [
        f"m{i:03d},arc,{j},{int(j != 1)}" for i in range(n) for j in range(3)
    ]
    lines = ["model,benchmark,score,definition"] + [
        f"m{i:03d},arc,{200 / 3},lm-eval arc_challenge acc_norm" for i in range(n)
    ]
    ingest_tables(store, tmp_path, rows, lines)
    (r,) = ingest(store, LmEvalRun(lm_eval_output(tmp_path / "out" / "org__model-7b")))
    assert r.status == "ok", r.line()
    assert len(scores(store, "arc")) == n + 1
