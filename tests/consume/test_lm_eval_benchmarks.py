"""The estimate inside lm-eval for MMLU, BBH, GSM8K, Winogrande, MuSR, MMLU-Pro and the suite.

Sets whose item ids are doc ids of tiny local datasets (JSONL in each original's schema,
written here) are published; `sparseeval export-lm-eval --tasks-dir` writes their tasks
and `lm_eval --model dummy` (offline) runs them with `--log_samples`, two runs in all:

1. `sparseeval_mmlu` (anchors over two subject configs, one task: each doc carries its
   subject's description and dev docs, drawn by our `first_n` sampler; lm-eval 0.4.13
   takes a ContextSampler subclass as `fewshot_config.sampler` and resolves `description`
   per doc: lm_eval/api/task.py `ConfigurableTask.__init__`, `fewshot_context`),
   `sparseeval_bbh` (two subtasks: each its description, choices and shots from lm-eval's
   installed leaderboard/bbh_mc YAML), `sparseeval_gsm8k` (generation, exact_match after
   the strict-match filter),
   `sparseeval_winogrande` (one context per choice) and `sparseeval_mmlu_pro`, 2-shot,
   next to lm-eval's own MMLU, BBH, GSM8K and Winogrande YAMLs pointed at the same data and
   run with `--samples` on the anchors: the prompts must be the same;
2. the group `sparseeval_suite` (lm-eval group YAML: lm_eval/config/group.py; its
   aggregation is a mean of the members' values, lm_eval/api/group.py `Group.aggregate`)
   and `sparseeval_musr`, each at the shots its YAML pins (the leaderboard's: MMLU and
   GSM8K 5, MuSR 0).

Each estimate in lm-eval's results JSON must equal `sparseeval predict` on the samples
lm-eval logged (the suite: `predict --benchmark suite`, every benchmark's estimate and the
suite average, with their intervals).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from sparseeval.cli import main
from sparseeval.consume.lm_eval.task import ITEM_FIELD
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.suite_set import load_suite
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.pipeline.versions import set_latest
from tests.helpers import published, tiny_fit
from tests.lm_eval_cli import lm_eval, load_module, needs_lm_eval, original_task, read_jsonl

pytestmark = [needs_lm_eval, pytest.mark.slow]  # real lm-eval runs

SUBJECTS = ("abstract_algebra", "anatomy")
MUSR = ("murder_mysteries", "team_allocation")
BBH = ("navigate", "date_understanding")
ITEMS = {
    "mmlu": [f"{s}:{j}" for s in SUBJECTS for j in range(30)],
    "gsm8k": [str(j) for j in range(60)],
    "winogrande": [str(j) for j in range(60)],
    "mmlu_pro": [str(j) for j in range(60)],
    "musr": [f"{s}:{j}" for s in MUSR for j in range(30)],
    "bbh": [f"{s}:{j}" for s in BBH for j in range(30)],
}


def mmlu_doc(subject: str, j: int) -> dict:
    choices = [f"{subject} {j}.{k}" for k in range(4)]
    return {
        "question": f" {subject} question {j}? ",
        "subject": subject,
        "choices": choices,
        "answer": j % 4,
    }


def gsm8k_doc(j: int) -> dict:
    return {
        "question": f"Tom has {j} pens and finds one. How many now?",
        "answer": f"{j} + 1 = {j + 1}, so {j + 1:,}.\n#### {j + 1:,}",
    }


def winogrande_doc(j: int) -> dict:
    return {
        "sentence": f"Ann lent Beth {j} pens because _ had {j % 3 + 2} spare.",
        "option1": "Ann",
        "option2": "Beth",
        "answer": "12"[j % 2],
    }


def musr_doc(j: int) -> dict:
    choices = [f"suspect {k}" for k in range(2 + j % 2)]
    return {
        "narrative": f"Story {j}.",
        "question": "Who did it?",
        "choices": str(choices),
        "answer_index": j % len(choices),
        "answer_choice": choices[j % len(choices)],
    }


def bbh_doc(subtask: str, j: int) -> dict:
    if subtask == "navigate":
        return {"input": f"Take {j} steps, turn around. Back?", "target": ["Yes", "No"][j % 2]}
    return {
        "input": f"Which day is {j}?\nOptions:\n(A) one\n(B) two",
        "target": "(A)(B)"[j % 2 * 3 :][:3],
    }


def mmlu_pro_doc(j: int) -> dict:
    options = [f"option {j}.{k}" for k in range(4 + j % 3)]
    return {
        "question": f"Pro question {j}?",
        "options": options,
        "category": "math",
        "answer": "ABCDEFG"[j % len(options)],
        "answer_index": j % len(options),
    }


def datasets(tmp) -> dict[str, str]:
    """The local copies of every original's splits, as `--dataset TASK:SPLIT=FILE` keys."""
    splits = {
        "gsm8k:test": [gsm8k_doc(j) for j in range(60)],
        "gsm8k:train": [gsm8k_doc(100 + j) for j in range(8)],
        "winogrande:validation": [winogrande_doc(j) for j in range(60)],
        "winogrande:train": [winogrande_doc(100 + j) for j in range(8)],
        "leaderboard_mmlu_pro:test": [mmlu_pro_doc(j) for j in range(60)],
        "leaderboard_mmlu_pro:validation": [mmlu_pro_doc(100 + j) for j in range(5)],
    }
    for s in SUBJECTS:
        splits[f"mmlu_{s}:test"] = [mmlu_doc(s, j) for j in range(30)]
        splits[f"mmlu_{s}:dev"] = [mmlu_doc(s, 100 + j) for j in range(5)]
    for s in MUSR:
        splits[f"{s}:{s}"] = [musr_doc(j) for j in range(30)]
    for s in BBH:
        splits[f"{s}:test"] = [bbh_doc(s, j) for j in range(30)]
    out = {}
    for key, docs in splits.items():
        path = tmp / f"{key.replace(':', '.')}.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        out[key] = str(path)
    return out


@pytest.fixture(scope="module")
def benchmark_sets(tmp_path_factory):
    """Published sets of every benchmark (v1, latest), a suite (mmlu + gsm8k), the data."""
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite

    tmp = tmp_path_factory.mktemp("benchmarks")
    root = tmp / "published"
    for seed, (benchmark, items) in enumerate(ITEMS.items()):
        published(root, benchmark, tiny_fit(seed=seed, n_test=60, n_valid=80, item_ids=items))
    lb = {
        b: ResponseMatrix(m.values, m.model_ids, ITEMS[b])
        for b, m in make_leaderboard(360, {"mmlu": 60, "gsm8k": 60}, seed=4).items()
    }
    settings = Settings.of(
        home=root,
        n_anchors=8,
        n_test=60,
        n_valid=60,
        n_calib=60,
        refine_steps=2,
        epochs=60,
        patience=10,
        ensemble=1,
    )
    write_suite(root, fit_suite(lb, settings), settings)
    set_latest(root, "suite", 1)
    return tmp, root, datasets(tmp)


def export(root, tasks, benchmarks, files: dict) -> str:
    """`sparseeval export-lm-eval --tasks-dir` with every local split; what it printed."""
    argv = [
        "export-lm-eval",
        "--anchor-set",
        str(root),
        "--benchmark",
        *benchmarks,
        "--tasks-dir",
        str(tasks),
        "--dataset",
        *(f"{k}={v}" for k, v in files.items()),
    ]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    assert rc == 0, err.getvalue()
    return out.getvalue()


def predict(root, benchmark: str, files, capsys) -> dict:
    argv = [
        "predict",
        "--anchor-set",
        str(root),
        "--benchmark",
        benchmark,
        "--json",
        "--responses",
        *map(str, files),
    ]
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def same_estimate(row: dict, filt: str, est: dict, prefix: str = "sparseeval") -> None:
    for key, field in (("", "value"), ("_low", "low"), ("_high", "high")):
        assert abs(row[f"{prefix}{key},{filt}"] - est[field]) < 1e-9, (prefix, key)


def originals(files: dict) -> dict[str, tuple]:
    """lm-eval's own tasks on the local data: {name: (benchmark, YAMLs, {split: file}, copy,
    subtask or None)}; a subtask's anchors are `subtask:doc`."""
    out = {}
    for s in SUBJECTS:
        yamls = ["mmlu/default/_default_template_yaml", f"mmlu/default/mmlu_{s}.yaml"]
        splits = {k: files[f"mmlu_{s}:{k}"] for k in ("test", "dev")}
        out[f"mmlu_local_{s}"] = ("mmlu", yamls, splits, (), s)
    for s in BBH:
        yamls = ["leaderboard/bbh_mc/_fewshot_template_yaml", f"leaderboard/bbh_mc/{s}.yaml"]
        out[f"bbh_local_{s}"] = ("bbh", yamls, {"test": files[f"{s}:test"]}, (), s)
    out["gsm8k_local"] = (
        "gsm8k",
        ["gsm8k/gsm8k.yaml"],
        {k: files[f"gsm8k:{k}"] for k in ("test", "train")},
        (),
        None,
    )
    out["winogrande_local"] = ("winogrande", ["winogrande/default.yaml"],
                               {k: files[f"winogrande:{k}"] for k in ("validation", "train")},
                               ["winogrande/preprocess_winogrande.py"], None)  # fmt: skip
    return out


def item_of(subtask: str | None, doc: int) -> str:
    return f"{subtask}:{doc}" if subtask else str(doc)


@pytest.fixture(scope="module")
def run_mc(benchmark_sets):
    """Run 1: MMLU, BBH, GSM8K, Winogrande, MMLU-Pro (2-shot) and lm-eval's originals of the
    first four on the same data, run with `--samples` on the anchors."""
    tmp, root, files = benchmark_sets
    tasks = tmp / "tasks"
    out = export(root, tasks, ["mmlu", "bbh", "gsm8k", "winogrande", "mmlu_pro"], files)
    samples = {}
    for name, (benchmark, yamls, splits, copy, sub) in originals(files).items():
        original_task(tasks / name, name, yamls, splits, copy)
        items = set(load_anchor_set(root, benchmark).items)
        samples[name] = sorted(d for d in range(60) if item_of(sub, d) in items)
    names = ["sparseeval_mmlu", "sparseeval_bbh", "sparseeval_gsm8k", "sparseeval_winogrande",
             "sparseeval_mmlu_pro", *samples]  # fmt: skip
    args = ["--include_path", tasks, "--num_fewshot", "2", "--samples", json.dumps(samples)]
    results, logged, stdout = lm_eval(tmp, "--tasks", *names, *args, own_tasks_only=True)
    return root, tasks, out, results, logged, stdout, files


def test_each_benchmark_estimate_in_lm_eval_equals_predict(run_mc, capsys):
    root, _, out, results, logged, stdout, _ = run_mc
    assert "wrote lm-eval task sparseeval_mmlu (8 anchors, mmlu v1)" in out
    for benchmark, filt, metric in (
        ("mmlu", "none", "acc"),
        ("gsm8k", "strict-match", "exact_match"),
        ("winogrande", "none", "acc"),
        ("mmlu_pro", "none", "acc"),
        ("bbh", "none", "acc_norm"),
    ):
        task = f"sparseeval_{benchmark}"
        row, samples = results[task], read_jsonl(logged[task])
        aset = load_anchor_set(root, benchmark)
        assert sorted(s["doc"][ITEM_FIELD] for s in samples) == sorted(aset.items), benchmark
        assert row[f"{metric},{filt}"] == sum(s[metric] for s in samples) / len(samples)
        est = predict(root, benchmark, [logged[task]], capsys)
        assert est["n_answered"] == est["n_anchors"] == 8
        same_estimate(row, filt, est)
    table = [line for line in stdout.splitlines() if "|" in line]
    assert any(f"{results['sparseeval_mmlu']['sparseeval,none']:.4f}" in line for line in table), (
        "\n".join(table)
    )


def test_prompts_and_scores_match_the_original_tasks(run_mc):
    """Our MMLU (per-subject description and dev shots), BBH (per-subtask description,
    choices and shots), GSM8K and Winogrande docs ask what lm-eval's own tasks ask on the
    same docs, 2-shot, score alike and carry the doc_hash the original logs for each."""
    _, tasks, _, _, logged, _, files = run_mc
    for original, (benchmark, *_, sub) in originals(files).items():
        ours = {s["doc"][ITEM_FIELD]: s for s in read_jsonl(logged[f"sparseeval_{benchmark}"])}
        utils = load_module(tasks / f"sparseeval_{benchmark}" / "utils.py")
        theirs = read_jsonl(logged[original])
        assert theirs and all(item_of(sub, o["doc_id"]) in ours for o in theirs)
        for o in theirs:
            mine = ours[item_of(sub, o["doc_id"])]
            assert mine["arguments"] == o["arguments"], original
            assert mine["doc"]["sparseeval_doc_hash"] == o["doc_hash"], original  # as `predict`
            # compares it with the set's (a set from the original's samples keeps that hash)
            target = mine["target"]
            if benchmark == "bbh":  # the original's target is the answer's text, ours its index
                target = mine["doc"]["choices"][int(target)]
            assert target == o["target"]
            if benchmark == "gsm8k":
                assert mine["filtered_resps"] == o["filtered_resps"]
                assert mine["exact_match"] == o["exact_match"]
                continue
            lls = [(float(ll), greedy == "True") for ll, greedy in o["filtered_resps"]]
            assert utils.score(mine["doc"], lls) == o[utils.METRIC], original
    prompt = read_jsonl(logged["sparseeval_mmlu"])[0]["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("The following are multiple choice questions (with answers) about ")
    assert prompt.count("\nAnswer:") == 3  # two dev shots of its subject, then the question
    prompt = read_jsonl(logged["sparseeval_bbh"])[0]["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.count("\nA:") == 3  # two of the subtask's hand-written shots, the question


def test_gsm8k_scores_a_right_answer():
    """The GSM8K score is gsm8k.yaml's exact_match (case, commas, `$` and `#### ` ignored)."""
    from sparseeval.consume.benchmarks import task_specs

    ns: dict = {}
    exec(task_specs()["gsm8k"].doc, ns)
    d = ns["doc"](gsm8k_doc(1234))
    assert ns["score"](d, ["1,235"]) == 1 and ns["score"](d, ["1,234"]) == 0


def test_musr_and_mmlu_pro_prompts_are_the_originals():
    """doc() equals lm-eval's leaderboard musr/mmlu_pro utils (doc_to_text, doc_to_choice)."""
    from lm_eval.tasks.leaderboard.mmlu_pro import utils as pro
    from lm_eval.tasks.leaderboard.musr import utils as musr

    from sparseeval.consume.benchmarks import task_specs

    for key, module, make in (
        ("leaderboard_musr", musr, musr_doc),
        ("leaderboard_mmlu_pro", pro, mmlu_pro_doc),
    ):
        ns: dict = {}
        exec("import ast, string\n" + task_specs()[key].doc, ns)
        for j in range(6):
            d = make(j)
            mine = ns["doc"](d)
            assert mine["query"] == module.doc_to_text(d)
            assert mine["choices"] == module.doc_to_choice(d)
            assert mine["gold"] == j % len(mine["choices"])


@pytest.fixture(scope="module")
def run_suite(benchmark_sets):
    """Run 2: the group sparseeval_suite (mmlu + gsm8k members) and sparseeval_musr, at the
    shots their YAMLs pin."""
    tmp, root, files = benchmark_sets
    tasks = tmp / "suite_tasks"
    out = export(root, tasks, ["suite", "musr"], files)
    (tmp / "run2").mkdir()
    args = ["--tasks", "sparseeval_suite", "sparseeval_musr", "--include_path", tasks]
    results, logged, stdout = lm_eval(tmp / "run2", *args, own_tasks_only=True)
    return root, out, results, logged, stdout


def test_suite_group_reports_each_estimate_and_the_average(run_suite, capsys):
    root, out, results, logged, stdout = run_suite
    assert "wrote lm-eval group sparseeval_suite (2 benchmarks" in out
    suite = load_suite(root)
    members = {b: f"sparseeval_suite_{b}" for b in suite.benchmarks}
    est = predict(root, "suite", [logged[t] for t in members.values()], capsys)
    assert set(est) == {*suite.benchmarks, "average"}
    for b, task in members.items():
        filt = "strict-match" if b == "gsm8k" else "none"
        items = [s["doc"][ITEM_FIELD] for s in read_jsonl(logged[task])]
        assert sorted(items) == sorted(f"{b}/{i}" for i in suite.items(b))
        same_estimate(results[task], filt, est[b])
        same_estimate(results[task], filt, est["average"], prefix="suite_average")
    same_estimate(results["sparseeval_suite"], "none", est["average"], prefix="suite_average")
    groups = stdout[stdout.index("|     Groups") :].splitlines()
    assert f"|suite_average     |↑  |{est['average']['value']:.4f}|" in groups[2]
    (mmlu,) = [ln for ln in stdout.splitlines() if ln.startswith("| - sparseeval_suite_mmlu ")]
    assert mmlu.split("|")[4].strip() == "5"  # n-shot: the leaderboard's, pinned in the YAML

    musr = predict(root, "musr", [logged["sparseeval_musr"]], capsys)
    assert musr["n_answered"] == 8
    same_estimate(results["sparseeval_musr"], "none", musr)
