"""lm-eval round trip on files in lm-evaluation-harness 0.4.x's real output layout.

`lm-eval run ... --log_samples --output_path results/` writes
`results/{model_name_sanitized}/results_{date_id}.json` and, per task,
`samples_{task}_{date_id}.jsonl` with date_id = datetime.now().isoformat() with ':'
replaced by '-'. Each line: doc_id, doc, target, arguments {gen_args_i: {arg_j}},
resps, filtered_resps, filter, metrics (names), doc_hash, prompt_hash, target_hash,
then each metric's value. GSM8K logs every doc once per filter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparseeval.consume.lm_eval.harness import (
    LmEvalError,
    export_samples,
    find_samples_files,
    is_samples_file,
    item_source,
    merge_samples,
    read_responses,
    read_samples_file,
    write_samples_json,
)

STAMP = "2025-03-14T09-26-53.589793"


def sample_record(doc_id: int, metrics: dict, filter_key: str = "none") -> dict:
    return {
        "doc_id": doc_id,
        "doc": {"question": f"q{doc_id}", "choices": {"text": ["a", "b"], "label": ["A", "B"]}},
        "target": "0",
        "arguments": {
            "gen_args_0": {"arg_0": f"Question: q{doc_id}\nAnswer:", "arg_1": " a"},
            "gen_args_1": {"arg_0": f"Question: q{doc_id}\nAnswer:", "arg_1": " b"},
        },
        "resps": [[["-1.25", "False"]], [["-2.5", "False"]]],
        "filtered_resps": [["-1.25", "False"], ["-2.5", "False"]],
        "filter": filter_key,
        "metrics": list(metrics),
        "doc_hash": "a" * 64,
        "prompt_hash": "b" * 64,
        "target_hash": "c" * 64,
        **metrics,
    }


def write_run(out: Path, task: str, rows: list[dict], stamp: str = STAMP) -> Path:
    model_dir = out / "acme__tiny-llm"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / f"results_{stamp}.json").write_text(
        json.dumps({"results": {task: {"alias": task}}, "model_name": "acme/tiny-llm"})
    )
    path = model_dir / f"samples_{task}_{stamp}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_item_id_mapping_rules():
    assert item_source("17", "arc") == ("arc_challenge", 17)
    assert item_source("17", "truthfulqa") == ("truthfulqa_mc1", 17)
    assert item_source("17", "custom", task="my_task") == ("my_task", 17)
    assert item_source("gsm8k:42") == ("gsm8k", 42)
    assert item_source("arc_easy:3", "arc") == ("arc_easy", 3)
    assert item_source("abstract_algebra:5", "mmlu") == ("mmlu_abstract_algebra", 5)
    assert item_source("mmlu_anatomy:0") == ("mmlu_anatomy", 0)
    assert item_source("hendrycksTest-virology:9") == ("mmlu_virology", 9)
    explicit = {"item-7": {"task": "winogrande", "doc_id": 70}, "x": ("hellaswag", 1)}
    assert item_source("item-7", item_sources=explicit) == ("winogrande", 70)
    assert item_source("x", item_sources=explicit) == ("hellaswag", 1)
    with pytest.raises(LmEvalError, match="cannot map anchor 'item-7'"):
        item_source("item-7")
    with pytest.raises(LmEvalError, match="no default lm-eval task"):
        item_source("3", "mmlu")


def test_export_groups_by_task_sorted(tmp_path):
    items = ["abstract_algebra:12", "anatomy:3", "abstract_algebra:1", "anatomy:0"]
    mapping = export_samples(items, "mmlu")
    assert mapping == {"mmlu_abstract_algebra": [1, 12], "mmlu_anatomy": [0, 3]}
    assert export_samples(["5", "2"], "gsm8k") == {"gsm8k": [2, 5]}
    merged = merge_samples(mapping, {"gsm8k": [2, 5]}, {"gsm8k": [5, 9]})
    assert merged["gsm8k"] == [2, 5, 9] and len(merged) == 3
    path = write_samples_json(merged, tmp_path / "anchors.json")
    assert json.loads(path.read_text()) == merged  # what `lm-eval run --samples FILE` reads
    with pytest.raises(LmEvalError, match=r"item-1.*\(and 1 more\)"):
        export_samples(["item-1", "item-2", "3"], "arc")


def test_read_arc_uses_acc_norm(tmp_path):
    rows = [sample_record(d, {"acc": 0.0, "acc_norm": 1.0}) for d in (4, 8)]
    rows.append(sample_record(15, {"acc": 1.0, "acc_norm": 0.0}))
    path = write_run(tmp_path, "arc_challenge", rows)
    assert is_samples_file(path)
    task, docs = read_samples_file(path)
    assert task == "arc_challenge" and docs == {4: 1, 8: 1, 15: 0}
    assert read_samples_file(path, metric="acc")[1] == {4: 0, 8: 0, 15: 1}
    got = read_responses([tmp_path], items=["4", "15", "99"], benchmark="arc")
    assert got == {"4": 1, "15": 0}  # 99 was not run: simply absent


def test_read_gsm8k_picks_strict_match_filter(tmp_path):
    rows = []
    for d, strict, flex in ((1, 0.0, 1.0), (7, 1.0, 1.0)):
        rows.append(sample_record(d, {"exact_match": strict}, "strict-match"))
        rows.append(sample_record(d, {"exact_match": flex}, "flexible-extract"))
    path = write_run(tmp_path, "gsm8k", rows)
    assert read_samples_file(path)[1] == {1: 0, 7: 1}
    assert read_samples_file(path, filter="flexible-extract")[1] == {1: 1, 7: 1}
    with pytest.raises(LmEvalError, match="no filter 'bogus'"):
        read_samples_file(path, filter="bogus")


def test_mmlu_subtasks_map_back_to_subject_items(tmp_path):
    write_run(tmp_path, "mmlu_anatomy", [sample_record(3, {"acc": 1.0})])
    write_run(tmp_path, "mmlu_abstract_algebra", [sample_record(12, {"acc": 0.0})])
    got = read_responses([tmp_path], items=["anatomy:3", "abstract_algebra:12"], benchmark="mmlu")
    assert got == {"anatomy:3": 1, "abstract_algebra:12": 0}
    assert read_responses([tmp_path]) == {"mmlu_anatomy:3": 1, "mmlu_abstract_algebra:12": 0}


def test_newest_run_wins_and_files_can_be_named(tmp_path):
    old = write_run(tmp_path, "winogrande", [sample_record(0, {"acc": 0.0})], STAMP)
    new = write_run(tmp_path, "winogrande", [sample_record(0, {"acc": 1.0})], "2025-04-01T00-00-00")
    assert find_samples_files([tmp_path]) == [new]
    assert read_responses([old], items=["0"], benchmark="winogrande") == {"0": 0}
    assert read_responses([tmp_path], items=["0"], benchmark="winogrande") == {"0": 1}


def test_bad_files_name_file_and_line(tmp_path):
    path = write_run(tmp_path, "hellaswag", [sample_record(0, {"acc": 1.0, "acc_norm": 1.0})])
    with open(path, "a") as f:
        f.write("{not json\n")
    with pytest.raises(LmEvalError, match=rf"{path.name}:2: not valid JSON"):
        read_samples_file(path)
    f1 = write_run(tmp_path / "b", "arc_challenge", [sample_record(0, {"f1": 0.5})])
    with pytest.raises(LmEvalError, match=r":1: no binary metric"):
        read_samples_file(f1)
    with pytest.raises(LmEvalError, match="not a 0/1 result"):
        read_samples_file(f1, metric="f1")
    dup = [sample_record(0, {"acc": 1.0}), sample_record(0, {"acc": 0.0})]
    f2 = write_run(tmp_path / "c", "winogrande", dup)
    with pytest.raises(LmEvalError, match="doc 0 appears twice"):
        read_samples_file(f2)
    loose = tmp_path / "renamed.jsonl"
    loose.write_text(json.dumps(sample_record(2, {"acc": 1.0})) + "\n")
    assert is_samples_file(loose)
    with pytest.raises(LmEvalError, match="cannot tell the task"):
        read_samples_file(loose)
    assert read_responses([loose], items=["2"], benchmark="x", task="winogrande") == {"2": 1}
    (tmp_path / "empty").mkdir()
    with pytest.raises(LmEvalError, match="no lm-eval samples"):
        find_samples_files([tmp_path / "empty"])
