"""The SparseEval estimate inside lm-eval: `export-lm-eval --tasks-dir` run by the real harness.

An ARC-like set whose item ids are doc ids of a small local multiple-choice dataset (JSONL,
written here) is published; `sparseeval export-lm-eval --tasks-dir` writes `sparseeval_arc`
over that dataset; `lm_eval --model dummy` (random answers, offline) runs it with
`--log_samples`. The estimate lm-eval's results report must equal `sparseeval predict` on
the logged samples, and the task must ask exactly what the original ARC task (lm-eval's own
YAML, pointed at the same data, run with `--samples` on the anchors) asks, and score alike.
The end-to-end tests need the `test` extra (lm-eval, pinned); the others run everywhere.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparseeval.cli import main
from sparseeval.consume.lm_eval.harness import LmEvalError
from sparseeval.consume.lm_eval.task import ITEM_FIELD, write_task
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit, published, tiny_fit
from tests.lm_eval_cli import (
    LM_EVAL,
    arc_doc,
    lm_eval,
    load_module,
    needs_lm_eval,
    original_arc_task,
    read_jsonl,
)

pytestmark = pytest.mark.slow  # real lm-eval runs: the slow group
N_DOCS = 60


@pytest.fixture(scope="module")
def harness_data(tmp_path_factory):
    """A published ARC set (v1, latest) over doc ids 0..59, the local test and train splits."""
    tmp = tmp_path_factory.mktemp("harness")
    fitted = tiny_fit(seed=2, n_test=60, n_valid=80, item_ids=[str(j) for j in range(N_DOCS)])
    root = published(tmp / "published", "arc", fitted)
    data, train = tmp / "arc_test.jsonl", tmp / "arc_train.jsonl"
    data.write_text("".join(json.dumps(arc_doc(j)) + "\n" for j in range(N_DOCS)))
    train.write_text("".join(json.dumps(arc_doc(100 + j)) + "\n" for j in range(20)))
    return tmp, root, data, train


def export(argv, capsys) -> tuple[int, str, str]:
    rc = main(["export-lm-eval", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_export_writes_task_folder(harness_data, tmp_path, capsys):
    _, root, data, _ = harness_data
    tasks = tmp_path / "tasks"
    rc, out, err = export(["--anchor-set", root, "--benchmark", "arc", "--tasks-dir", tasks,
                           "--dataset", data], capsys)  # fmt: skip
    assert rc == 0, err
    folder = tasks / "sparseeval_arc"
    assert out.startswith(f"wrote lm-eval task sparseeval_arc (8 anchors, arc v1) to {folder}")
    assert f"--include_path {tasks}" in err
    yaml_text = (folder / "sparseeval_arc.yaml").read_text()
    utils = (folder / "utils.py").read_text()
    assert "task: sparseeval_arc\n" in yaml_text and f'"test": "{data.resolve()}"' in yaml_text
    compile(utils, "utils.py", "exec")
    for fn in re.findall(r"!function utils\.(\w+)", yaml_text):
        assert f"\ndef {fn}(" in utils
    aset = load_anchor_set(root, "arc")
    assert f'ANCHOR_SET = "{root.resolve()}"' in utils and "VERSION = 1\n" in utils
    for item, src in aset.item_sources.items():
        assert f'    {src["doc_id"]}: "{item}",\n' in utils
    assert f'"{ITEM_FIELD}"' in utils and "fewshot_split" not in yaml_text


def test_a_local_shot_split_too_small_for_the_shots_is_said_at_export(
    harness_data, tmp_path, capsys
):
    """ARC's 25 shots from a 20- or 25-doc local train split: lm-eval's default sampler draws
    shots + 1 (lm_eval/api/samplers.py `ContextSampler.sample`) and the run ended in its
    traceback `Sample larger than population`; export says so, with what to do."""
    _, root, data, train = harness_data
    argv = ["--anchor-set", root, "--benchmark", "arc", "--tasks-dir", tmp_path / "t",
            "--dataset", f"test={data}"]  # fmt: skip
    rc, _, err = export([*argv, f"train={train}"], capsys)
    assert rc == 0
    assert (f"note: {train}: 20 doc(s) in arc_challenge's 'train' split; its 25 shots need 26"
            in err and "--num_fewshot 19 or fewer" in err), err  # fmt: skip
    big = tmp_path / "train26.jsonl"
    big.write_text("".join(json.dumps(arc_doc(100 + j)) + "\n" for j in range(26)))
    rc, _, err = export([*argv, f"train={big}"], capsys)
    assert rc == 0 and "shots need" not in err, err


def test_hub_dataset_by_default(harness_data, tmp_path):
    _, root, _, _ = harness_data
    folder = write_task(tmp_path, load_anchor_set(root, "arc"), root)
    text = (folder / "sparseeval_arc.yaml").read_text()
    assert 'dataset_path: "allenai/ai2_arc"\ndataset_name: "ARC-Challenge"\n' in text
    assert 'test_split: "test"' in text and 'fewshot_split: "train"' in text


def test_unsupported_sets_say_what_to_do(harness_data, tmp_path, capsys):
    tmp, _, data, _ = harness_data
    root = tmp / "other"
    items = [f"leaderboard_gpqa_main:{j}" for j in range(N_DOCS)]
    publish_fit(root, "gpqa", tiny_fit(seed=1, item_ids=items))
    set_latest(root, "gpqa", 1)
    with pytest.raises(LmEvalError, match=r"no generated lm-eval task for 'leaderboard_gpqa_main'"
                       r".*shuffles.*--out"):  # fmt: skip
        write_task(tmp_path, load_anchor_set(root, "gpqa"), root)
    publish_fit(root, "arc", tiny_fit(seed=1))  # synthetic item ids
    set_latest(root, "arc", 1)
    rc, _, err = export(["--anchor-set", root, "--benchmark", "arc", "--tasks-dir", tmp_path],
                        capsys)  # fmt: skip
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "item-" in err
    rc, _, err = export(["--anchor-set", root, "--benchmark", "arc"], capsys)
    assert rc == 2 and "--out FILE" in err and "--tasks-dir DIR" in err
    rc, _, err = export(["--anchor-set", root, "--benchmark", "arc", "gpqa", "--tasks-dir",
                         tmp_path, "--dataset", data], capsys)  # fmt: skip
    assert rc == 2 and "single --benchmark" in err


def fake(benchmark, items=("3", "5")):
    """What write_task reads of an AnchorSet."""
    return SimpleNamespace(items=list(items), benchmark=benchmark, item_sources=None,
                           version=2, level=0.9, folder=None)  # fmt: skip


def test_mmlu_sources_default_to_the_hub_configs(tmp_path):
    """One task over MMLU's subject configs (cais/mmlu), 5-shot from each subject's dev."""
    folder = write_task(tmp_path, fake("mmlu", ["anatomy:3", "abstract_algebra:5", "anatomy:1"]),
                        ".")  # fmt: skip
    text = (folder / "sparseeval_mmlu.yaml").read_text()
    assert "custom_dataset: !function utils.load\n" in text and "num_fewshot: 5\n" in text
    assert (
        "sampler: !function utils.Shots" in text and "description: sparseeval_description" in text
    )
    utils = (folder / "utils.py").read_text()
    compile(utils, "utils.py", "exec")
    sources = ast.literal_eval(utils.split("SOURCES = ", 1)[1].split("\n\n", 1)[0])
    assert list(sources) == ["mmlu_abstract_algebra", "mmlu_anatomy"]
    assert sources["mmlu_anatomy"] == {
        "name": "anatomy", "split": "test", "fewshot": "dev", "files": None, "original": None,
        "description": "The following are multiple choice questions (with answers) about "
                       "anatomy.\n\n",
        "anchors": {"1": "anatomy:1", "3": "anatomy:3"},
    }  # fmt: skip
    assert 'DATASET = "cais/mmlu"' in utils


def test_mixed_or_unmapped_tasks_are_refused(tmp_path):
    with pytest.raises(LmEvalError, match=r"2 lm-eval tasks \(arc_challenge, arc_easy\)"):
        write_task(tmp_path, fake("arc", ["arc_challenge:1", "arc_easy:2"]), ".")
    with pytest.raises(LmEvalError, match=r"'leaderboard_gpqa_main' yet \(lm-eval shuffles"):
        write_task(tmp_path, fake("gpqa", ["leaderboard_gpqa_main:1"]), ".")


@needs_lm_eval
def test_prompts_match_the_original_tasks(tmp_path):
    """HellaSwag and TruthfulQA MC1: the generated doc() equals lm-eval's own processing."""
    import datasets
    import yaml
    from lm_eval.tasks.hellaswag.utils import process_docs
    from lm_eval.utils import apply_template

    from sparseeval.consume.lm_eval.runtime import keep_anchors

    hs = {"activity_label": "Baking cookies", "ctx_a": "A woman [title] mixes dough.",
          "ctx_b": "she adds  flour [step] slowly", "label": "2",
          "endings": ["eats it.", "bakes [header] them.", "stops ", "sings."]}  # fmt: skip
    utils = load_module(write_task(tmp_path, fake("hellaswag"), ".") / "utils.py")
    want = process_docs(datasets.Dataset.from_list([hs]))[0]
    assert utils.doc(hs) == {k: want[k] for k in ("query", "choices", "gold")}
    (kept,) = keep_anchors(datasets.Dataset.from_list([hs]), {0: "0"}, utils.doc, "hellaswag",
                           processed=True)  # as its utils.process_docs calls it  # fmt: skip
    assert kept[HASH_FIELD] == doc_hash(want)  # the doc lm-eval's hellaswag logs is processed
    assert "processed=True" in (tmp_path / "sparseeval_hellaswag" / "utils.py").read_text()

    tq = {"question": "Is the sky green?",
          "mc1_targets": {"choices": ["No.", "Yes."], "labels": [1, 0]}}  # fmt: skip
    utils = load_module(write_task(tmp_path, fake("truthfulqa"), ".") / "utils.py")
    yaml_file = Path(LM_EVAL.submodule_search_locations[0]) / "tasks/truthfulqa/truthfulqa_mc1.yaml"
    original = yaml.safe_load(yaml_file.read_text())
    assert utils.doc(tq)["query"] == apply_template(original["doc_to_text"], tq)
    assert utils.doc(tq)["choices"] == tq["mc1_targets"]["choices"] and utils.doc(tq)["gold"] == 0


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def ran(harness_data):
    """`sparseeval_arc` exported over the local data and run by lm-eval beside the original
    task (`arc_local`, on the anchors' docs): (tasks dir, results, {task: samples}, stdout)."""
    tmp, root, data, train = harness_data
    tasks = tmp / "tasks"
    assert main(["export-lm-eval", "--anchor-set", str(root), "--benchmark", "arc",
                 "--tasks-dir", str(tasks), "--dataset", f"test={data}",
                 f"train={train}"]) == 0  # fmt: skip
    aset = load_anchor_set(root, "arc")
    doc_items = {src["doc_id"]: item for item, src in aset.item_sources.items()}
    original_arc_task(tasks / "arc_local", data, train)
    return tasks, *lm_eval(
        tmp, "--tasks", "sparseeval_arc", "arc_local", "--include_path", tasks,
        "--num_fewshot", "2", "--samples", json.dumps({"arc_local": sorted(doc_items)}),
        own_tasks_only=True,  # both tasks are under --include_path: skip indexing lm-eval's
    )  # fmt: skip


@needs_lm_eval
def test_estimate_in_lm_eval_equals_predict_on_its_samples(harness_data, ran, capsys):
    _, root, _, _ = harness_data
    tasks, results, files, stdout = ran
    capsys.readouterr()
    aset = load_anchor_set(root, "arc")
    doc_items = {src["doc_id"]: item for item, src in aset.item_sources.items()}

    # lm-eval's table and results JSON carry the estimate and its interval ...
    row = results["sparseeval_arc"]
    table = [line for line in stdout.splitlines() if re.search(r"\|\s*sparseeval\s*\|", line)]
    assert table and f"{row['sparseeval,none']:.4f}" in table[0], stdout[-2000:]
    samples = read_jsonl(files["sparseeval_arc"])
    assert sorted(s["doc"][ITEM_FIELD] for s in samples) == sorted(aset.items)
    assert abs(row["acc_norm,none"] - sum(s["acc_norm"] for s in samples) / 8) < 1e-12

    # ... equal to `sparseeval predict` on the samples lm-eval logged.
    assert main(["predict", "--anchor-set", str(root), "--benchmark", "arc",
                 "--responses", str(files["sparseeval_arc"]), "--json"]) == 0  # fmt: skip
    est = json.loads(capsys.readouterr().out)
    assert est["n_answered"] == est["n_anchors"] == 8
    assert abs(est["value"] - row["sparseeval,none"]) < 1e-9
    assert abs(est["low"] - row["sparseeval_low,none"]) < 1e-9
    assert abs(est["high"] - row["sparseeval_high,none"]) < 1e-9

    # The task asks what lm-eval's own ARC task asks on those docs (few-shot examples
    # included), and scores alike.
    utils = load_module(tasks / "sparseeval_arc" / "utils.py")
    ours = {s["doc"][ITEM_FIELD]: s for s in samples}
    original = read_jsonl(files["arc_local"])
    assert sorted(o["doc_id"] for o in original) == sorted(doc_items)
    for o in original:
        item = doc_items[o["doc_id"]]
        assert ours[item]["arguments"] == o["arguments"]  # 2-shot prompt and continuations
        assert ours[item]["arguments"]["gen_args_0"]["arg_0"].count("Question: ") == 3
        assert ours[item]["target"] == o["target"]
        lls = [(float(ll), greedy == "True") for ll, greedy in o["filtered_resps"]]
        doc = utils.doc(o["doc"]) | {ITEM_FIELD: item}
        assert utils.process_results(doc, lls)["acc_norm"] == o["acc_norm"]


# ------------------------------------------------------- the doc_hash of generated tasks

HASH_FIELD = "sparseeval_doc_hash"  # a generated doc's original doc_hash


def doc_hash(doc) -> str:
    """lm-eval's doc_hash (lm_eval/evaluator.py: sha256 of the doc's JSON, indent 2)."""
    import hashlib

    text = json.dumps(doc, indent=2, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def hashed_set(tmp_path, original: list[dict], change=None):
    """The harness_data's ARC set published again with item sources carrying the original task's
    `doc_hash` of each anchor (as a set from a store with lm-eval samples does); `change`:
    the items whose stored hash is another (a set of other questions)."""
    fitted = tiny_fit(seed=2, n_test=60, n_valid=80, item_ids=[str(j) for j in range(N_DOCS)])
    sources = {}
    for o in original:
        item, digest = str(o["doc_id"]), o["doc_hash"]
        digest = digest[::-1] if item in (change or ()) else digest
        sources[item] = {"task": "arc_challenge", "doc_id": o["doc_id"],
                         "hash": f"doc_hash:{digest}", "id_kind": "lm-eval doc id"}  # fmt: skip
    root = tmp_path / "hashed"
    publish_fit(root, "arc", fitted, item_sources=sources)
    set_latest(root, "arc", 1)
    return root


def predict_samples(root, path, capsys) -> tuple[int, str, str]:
    rc = main(["predict", "--anchor-set", str(root), "--benchmark", "arc", "--responses",
               str(path)])  # fmt: skip
    out, err = capsys.readouterr()
    return rc, out, err


@needs_lm_eval
def test_a_generated_doc_carries_the_original_tasks_doc_hash(ran, tmp_path, capsys):
    """Each doc of `sparseeval_arc` carries the doc_hash lm-eval logs for that doc in the
    original task, so `predict` checks it against the set's as for the original's samples."""
    _, _, files, _ = ran
    original = read_jsonl(files["arc_local"])
    ours = {s["doc"][ITEM_FIELD]: s["doc"][HASH_FIELD] for s in read_jsonl(files["sparseeval_arc"])}
    assert ours == {str(o["doc_id"]): o["doc_hash"] for o in original}
    rc, out, err = predict_samples(hashed_set(tmp_path, original), files["sparseeval_arc"], capsys)
    assert rc == 0 and "from 8/8 anchors" in out, err


@needs_lm_eval
def test_generated_samples_of_other_questions_or_edited_are_refused(ran, tmp_path, capsys):
    _, _, files, _ = ran
    original = read_jsonl(files["arc_local"])
    lines = read_jsonl(files["sparseeval_arc"])
    first = lines[0]["doc"][ITEM_FIELD]
    root = hashed_set(tmp_path, original, change={first})
    rc, out, err = predict_samples(root, files["sparseeval_arc"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert f"{files['sparseeval_arc']}: arc: 1 answered anchor(s) have another doc_hash" in err
    assert f"({first})" in err

    root = hashed_set(tmp_path / "good", original)
    edited = tmp_path / "samples_sparseeval_arc_2026-01-01T00-00-00.jsonl"
    for what in ("question", "hash", "item"):
        docs = [dict(s, doc=dict(s["doc"])) for s in lines]
        doc = docs[1]["doc"]
        if what == "question":
            doc["query"] = doc["query"].replace("plus", "minus")
        elif what == "hash":
            doc[HASH_FIELD] = lines[0]["doc"][HASH_FIELD]
        else:
            doc[ITEM_FIELD] = "59"
        edited.write_text("".join(json.dumps(s) + "\n" for s in docs))
        rc, out, err = predict_samples(root, edited, capsys)
        assert rc == 2 and out == "" and err.count("\n") == 1, (what, err)
        assert f"{edited}:2: anchor {doc[ITEM_FIELD]}: the doc is not the one lm-eval ran" in err
    doc[ITEM_FIELD] = lines[1]["doc"][ITEM_FIELD]  # the other question, hashed again: a run
    doc["query"], doc[HASH_FIELD] = "Other?", doc_hash({"other": 1})  # on another dataset
    docs[1]["doc_hash"] = doc_hash(doc)
    edited.write_text("".join(json.dumps(s) + "\n" for s in docs))
    rc, out, err = predict_samples(root, edited, capsys)
    assert rc == 2 and f"({doc[ITEM_FIELD]}): the questions differ from the set's" in err
