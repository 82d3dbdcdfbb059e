"""File sources (long CSV/Parquet, wide CSV, lm-eval folders) and every bad-input case."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from sparseeval.consume.lm_eval.taskmap import map_lm_eval_task, map_v1_config
from sparseeval.pipeline.store import (
    LmEvalRun,
    LongTable,
    SourceError,
    Store,
    WideTable,
    build_matrix,
    ingest,
)

HEADER = "model,benchmark,item,correct\n"


def one(store: Store, source):
    (report,) = ingest(store, source)
    assert report.n_read == report.n_stored + report.n_quarantined + report.n_duplicates
    return report


def reasons(store: Store) -> list[str]:
    return store.quarantine()["reason"].to_list()


def test_long_csv_accepts_every_correctness_spelling(store, tmp_path):
    values = ["0", "1", "true", "FALSE", "-1", "+1", "1.0", "0.0"]
    body = "".join(f"org/m,arc,{i},{v}\n" for i, v in enumerate(values))
    r = one(store, LongTable(_write(tmp_path / "a.csv", HEADER + body)))
    assert r.n_new == 8 and r.n_quarantined == 0
    (row,) = build_matrix(store, "arc")[0].values
    assert row.tolist() == [-1, 1, 1, -1, -1, 1, 1, -1]


def test_long_parquet_with_typed_columns(store, tmp_path):
    path = tmp_path / "a.parquet"
    pl.DataFrame({
        "model": ["org/a", "org/a", "org/b", "org/b"],
        "benchmark": ["gsm8k"] * 4,
        "item": [0, 1, 0, 1],
        "correct": [True, False, True, None],
    }).write_parquet(path)  # fmt: skip
    r = one(store, LongTable(path))
    assert (r.n_new, r.n_quarantined) == (3, 1)
    q = store.quarantine().row(0, named=True)
    assert q["reason"] == "missing correctness value" and q["line"] == 4


def test_malformed_csv_line_is_quarantined_with_line_and_raw(store, tmp_path):
    body = "org/a,arc,0,1\norg/a,arc,1\norg/a,arc,2,1,extra\norg/a,arc,3,0\n"
    r = one(store, LongTable(_write(tmp_path / "a.csv", HEADER + body)))
    assert (r.n_read, r.n_new, r.n_quarantined) == (4, 2, 2)
    q = store.quarantine()
    assert q["line"].to_list() == [3, 4]
    assert q["raw"].to_list() == ["org/a,arc,1", "org/a,arc,2,1,extra"]
    assert all(x.startswith("malformed CSV line") for x in q["reason"])


def test_missing_column_is_an_error_naming_file_and_line(store, tmp_path):
    path = _write(tmp_path / "a.csv", "model,benchmark,item\norg/a,arc,0\n")
    with pytest.raises(SourceError, match=r"a\.csv: line 1: missing column\(s\) correct"):
        ingest(store, LongTable(path))
    assert store.runs()["status"].to_list() == ["failed"]


def test_non_correctness_values_are_quarantined(store, tmp_path):
    """A score outside [0, 1] is not one (0.5 is a graded score, stored: test_graded_store)."""
    body = "org/a,arc,0,1.5\norg/a,arc,1,yes\norg/a,arc,2,\norg/a,arc,3,1\n"
    r = one(store, LongTable(_write(tmp_path / "a.csv", HEADER + body)))
    assert (r.n_new, r.n_quarantined) == (1, 3)
    assert sorted(reasons(store)) == [
        "missing correctness value",
        "not a correctness value: 1.5",
        "not a correctness value: yes",
    ]


def test_conflicting_duplicates_quarantined_agreeing_counted(store, tmp_path):
    body = "org/a,arc,0,1\norg/a,arc,0,0\norg/a,arc,1,1\norg/a,arc,1,true\norg/a,arc,2,0\n"
    r = one(store, LongTable(_write(tmp_path / "a.csv", HEADER + body)))
    assert (r.n_read, r.n_new, r.n_quarantined, r.n_duplicates) == (5, 2, 2, 1)
    assert reasons(store) == ["conflicting duplicate in one batch"] * 2
    assert build_matrix(store, "arc")[0].item_ids.tolist() == ["1", "2"]


def test_unknown_benchmark_quarantined_until_registered(store, tmp_path):
    path = _write(tmp_path / "a.csv", HEADER + "org/a,mystery,0,1\norg/a,arc,0,1\n")
    r = one(store, LongTable(path))
    assert (r.n_new, r.n_quarantined) == (1, 1)
    assert reasons(store) == ["unknown benchmark: mystery"]
    store.add_benchmark("mystery")
    (again,) = ingest(store, LongTable(path), force=True)
    assert (again.n_new, again.n_unchanged) == (1, 1)


def test_new_benchmarks_the_operator_allows_are_accepted_others_quarantined(store, tmp_path):
    """`new_benchmarks` (globs): a name it matches is registered in the unit's transaction
    and its rows stored, said in the report; one it does not match, or one that cannot be
    published (`latest`, a layout name), is quarantined as before (issue [3/5] item 2)."""
    body = ("org/a,gpqa_diamond,0,1\norg/a,gpqa_diamond,1,0\n"
            "org/a,mystery,0,1\norg/a,latest,0,1\n")  # fmt: skip
    path = _write(tmp_path / "a.csv", HEADER + body)
    (r,) = ingest(store, LongTable(path), new_benchmarks=("gpqa*", "lat*"))
    assert (r.n_new, r.n_quarantined) == (2, 2)
    assert "new benchmark accepted: gpqa_diamond (new_benchmarks)" in r.message
    assert sorted(reasons(store)) == ["unknown benchmark: latest", "unknown benchmark: mystery"]
    assert "gpqa_diamond" in store.benchmarks()["benchmark"].to_list()
    assert build_matrix(store, "gpqa_diamond")[0].shape == (1, 2)


def test_a_failed_unit_registers_no_new_benchmark(store, tmp_path, monkeypatch):
    from sparseeval.pipeline.store import ingestion

    def crash(*a, **k):
        raise RuntimeError("injected crash after validation")

    monkeypatch.setattr(ingestion, "resolve_duplicates", crash)
    path = _write(tmp_path / "a.csv", HEADER + "org/a,newbench,0,1\n")
    with pytest.raises(RuntimeError, match="injected crash"):
        ingest(store, LongTable(path), new_benchmarks=("*",))
    assert "newbench" not in store.benchmarks()["benchmark"].to_list()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_empty_file_is_an_error(store, tmp_path, suffix):
    path = _write(tmp_path / f"empty{suffix}", "")
    with pytest.raises(SourceError, match="empty file"):
        ingest(store, LongTable(path))


def test_header_only_file_reads_zero_rows(store, tmp_path):
    r = one(store, LongTable(_write(tmp_path / "a.csv", HEADER)))
    assert r.status == "ok" and r.n_read == 0


def test_file_not_in_claimed_format(store, tmp_path):
    csv_path = _write(tmp_path / "a.csv", HEADER + "org/a,arc,0,1\n")
    with pytest.raises(SourceError, match="not a Parquet file"):
        ingest(store, LongTable(csv_path, format="parquet"))
    parquet = tmp_path / "b.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(parquet)
    with pytest.raises(SourceError, match=r"b\.parquet: line 1"):
        ingest(store, LongTable(parquet, format="csv"))
    json_file = _write(tmp_path / "c.csv", '{"model": "org/a", "benchmark": "arc"}\n')
    with pytest.raises(SourceError, match="missing column"):
        ingest(store, LongTable(json_file))
    assert store.con.sql("SELECT count(*) FROM results").fetchall() == [(0,)]


def test_wide_table_in_metabench_layout(store, tmp_path):
    text = '"model","660","1067","3"\n"org/a",1,0,1\n"org/b",0,0,\n"org/c",1,2,1\n'
    r = one(store, WideTable(_write(tmp_path / "arc_responses_train.csv", text), "arc"))
    assert (r.n_read, r.n_new, r.n_quarantined) == (8, 7, 1)  # the blank cell is no result
    m, s = build_matrix(store, "arc", max_missing_model_frac=0.5)
    assert (m.item_ids.tolist(), s.cells_missing, s.items_dropped) == (["660"], 2, 2)
    fill = '"model","1067","3"\n"org/b",1,0\n"org/c",1,1\n'
    r = one(store, WideTable(_write(tmp_path / "fill.csv", fill), "arc"))
    assert (r.n_new, r.n_updated, r.n_unchanged) == (2, 1, 1)
    m, s = build_matrix(store, "arc")
    assert m.item_ids.tolist() == ["660", "1067", "3"]  # column order, not sorted
    assert m.values.tolist() == [[1, -1, 1], [-1, 1, -1], [1, 1, 1]]


def test_wide_table_with_repeated_column_is_an_error(store, tmp_path):
    path = _write(tmp_path / "w.csv", "model,1,1\norg/a,1,0\n")
    with pytest.raises(SourceError, match="repeated column"):
        ingest(store, WideTable(path, "arc"))


def test_lm_eval_log_samples_folder(store, tmp_path):
    out = tmp_path / "out" / "org__model"
    ts = "2024-05-01T12-00-00.123456"
    _write_lm_eval(out, ts, "org/model")
    (r,) = ingest(store, LmEvalRun(tmp_path / "out"))
    # gsm8k: 3 docs x 2 filters, strict-match kept; mmlu: 2 subjects; 1 malformed JSON line
    assert (r.n_new, r.n_quarantined) == (3 + 2 + 2, 1)
    assert reasons(store) == [
        "malformed JSON line: Expecting property name enclosed in double quotes"
    ]
    assert build_matrix(store, "gsm8k")[0].values.tolist() == [[1, -1, 1]]
    mmlu = build_matrix(store, "mmlu")[0]
    assert mmlu.item_ids.tolist() == ["anatomy:0", "anatomy:1", "astronomy:0", "astronomy:1"]
    assert mmlu.values.tolist() == [[1, -1, -1, 1]]
    (again,) = ingest(store, LmEvalRun(tmp_path / "out"))
    assert again.status == "skipped"


def test_lm_eval_without_samples_is_a_clear_error(store, tmp_path):
    (tmp_path / "o").mkdir()
    _write(tmp_path / "o" / "results_2024-01-01T00-00-00.0.json", json.dumps({"model_name": "x/y"}))
    with pytest.raises(SourceError, match="no samples"):
        ingest(store, LmEvalRun(tmp_path / "o"))


def test_task_maps():
    mmlu = map_v1_config("harness_hendrycksTest_high_school_physics_5")
    assert (mmlu.benchmark, mmlu.item(3), mmlu.metrics) == (
        "mmlu",
        "high_school_physics:3",
        ("acc",),
    )
    assert map_v1_config("harness_truthfulqa_mc_0").metrics == ("mc1",)
    assert map_v1_config("harness_arc_challenge_25").metrics == ("acc_norm",)
    assert map_v1_config("results") is None
    assert map_lm_eval_task("mmlu_anatomy").item(0) == "anatomy:0"
    assert map_lm_eval_task("leaderboard_math_algebra_hard").benchmark == "math_hard"
    assert map_lm_eval_task("leaderboard_bbh_navigate").item(1) == "navigate:1"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _write_lm_eval(out: Path, ts: str, model: str) -> None:
    results = {
        "results": {},
        "config": {"model": "hf", "model_args": f"pretrained={model},dtype=auto"},
    }
    _write(out / f"results_{ts}.json", json.dumps(results))
    gsm = []
    for doc, (strict, flexible) in enumerate([(1.0, 1.0), (0.0, 1.0), (1.0, 0.0)]):
        gsm.append({"doc_id": doc, "filter": "strict-match", "exact_match": strict})
        gsm.append({"doc_id": doc, "filter": "flexible-extract", "exact_match": flexible})
    _write(out / f"samples_gsm8k_{ts}.jsonl", "\n".join(json.dumps(x) for x in gsm) + "\n")
    anatomy = [{"doc_id": 0, "acc": 1.0, "doc": {"q": "x"}}, {"doc_id": 1, "acc": 0.0}]
    lines = [json.dumps(x) for x in anatomy] + ["{not json"]
    _write(out / f"samples_mmlu_anatomy_{ts}.jsonl", "\n".join(lines) + "\n")
    astronomy = [{"doc_id": 1, "acc": 1.0}, {"doc_id": 0, "acc": 0.0}]
    _write(out / f"samples_mmlu_astronomy_{ts}.jsonl", "\n".join(map(json.dumps, astronomy)))
    _write(out / "samples_gsm8k_2023-01-01T00-00-00.0.jsonl", "{}\n")  # older run: not read


METABENCH = Path(__file__).resolve().parents[3] / "shared" / "data" / "metabench_reduced"


@pytest.mark.skipif(
    not (METABENCH / "arc_responses_train.csv").is_file(), reason="metabench data not present"
)
def test_real_metabench_wide_table(store):
    path = METABENCH / "arc_responses_train.csv"
    r = one(store, WideTable(path, "arc"))
    assert r.n_quarantined == 0 and r.n_duplicates == 0
    m, s = build_matrix(store, "arc")
    assert m.shape == (4280, 100) and s.cells_missing == 0
    assert m.item_ids[0] == "660"  # the file's column order
