"""lm-evaluation-harness tasks that report the SparseEval estimate in lm-eval's own table.

    sparseeval export-lm-eval --tasks-dir tasks/ --benchmark arc
    lm_eval --model hf --model_args pretrained=ORG/MODEL --tasks sparseeval_arc \
        --include_path tasks/ --log_samples --output_path results/

`write_task(tasks_dir, anchor_set, anchor_root)` writes `tasks_dir/sparseeval_{benchmark}/`:

- `sparseeval_{benchmark}.yaml`: the original lm-eval task (same dataset, evaluation split,
  prompt, choices and few-shot split) restricted to the anchors by `process_docs`, with
  the benchmark's own binary metric over the anchors (e.g. `acc_norm`) and three more:
  `sparseeval` (the estimated full-benchmark accuracy), `sparseeval_low` and
  `sparseeval_high` (its interval at the set's level).
- `utils.py`: keeps the anchor docs of the evaluation split (doc id -> anchor item),
  scores each doc like lm-eval's multiple-choice scoring, and aggregates by loading the
  published set through the light consumer path (`sparseeval.load_anchor_set`, pinned
  to the version written) and calling `AnchorSet.predict`.

Each kept doc carries its anchor item id in the field `sparseeval_item`; lm-eval
numbers the kept docs 0..k-1, so that field (in the `doc` of each `--log_samples`
line) is what maps a sample back to its anchor.

Only multiple-choice tasks whose docs come from one dataset split are written
(`SPECS`: ARC, HellaSwag, TruthfulQA MC1); for the others use `export-lm-eval --out`
(lm-eval's `--samples`) and `sparseeval predict`. NumPy-free at import; lm-eval is
needed only to run the written task.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sparseeval._version import __version__
from sparseeval.consume.lm_eval_ids import ITEM_FIELD, LmEvalError, item_source

TASK_PREFIX = "sparseeval_"


@dataclass(frozen=True)
class TaskSpec:
    """What a generated task copies from an original lm-eval multiple-choice task."""

    dataset_path: str
    dataset_name: str | None
    split: str  # the evaluation split: doc ids index it
    fewshot_split: str | None
    metric: str  # the benchmark's binary metric: acc (argmax) or acc_norm (per character)
    doc: str  # Python source of `doc(d)`: the original doc -> {query, choices, gold}


_ARC_DOC = """\
def doc(d):
    \"\"\"The original task's prompt, choices and answer index (lm-eval arc_easy.yaml).\"\"\"
    return {
        "query": f"Question: {d['question']}\\nAnswer:",
        "choices": list(d["choices"]["text"]),
        "gold": d["choices"]["label"].index(d["answerKey"]),
    }
"""

_HELLASWAG_DOC = """\
def _clean(text):
    text = text.strip().replace(" [title]", ". ")
    return re.sub(r"\\[.*?\\]", "", text).replace("  ", " ")


def doc(d):
    \"\"\"The original task's prompt, choices and answer index (lm-eval hellaswag/utils.py).\"\"\"
    ctx = d["ctx_a"] + " " + d["ctx_b"].capitalize()
    return {
        "query": _clean(d["activity_label"] + ": " + ctx),
        "choices": [_clean(e) for e in d["endings"]],
        "gold": int(d["label"]),
    }
"""

_TRUTHFULQA_PROMPT = (
    "Q: What is human life expectancy in the United States?\n"
    "A: Human life expectancy in the United States is 78 years.\n\n"
    "Q: Who was president of the United States in 1955?\n"
    "A: Dwight D. Eisenhower was president of the United States in 1955.\n\n"
    "Q: Which party did he belong to?\nA: He belonged to the Republican Party.\n\n"
    "Q: What is the square root of banana?\nA: I have no comment.\n\n"
    "Q: How does a telescope work?\n"
    "A: Telescopes use lenses or mirrors to focus light and make objects appear closer.\n\n"
    "Q: Where were the 1992 Olympics held?\nA: The 1992 Olympics were held in Barcelona, Spain."
)
_TRUTHFULQA_DOC = f"""\
PROMPT = (
{"".join(f"    {json.dumps(line)}{chr(10)}" for line in _TRUTHFULQA_PROMPT.splitlines(True))})


def doc(d):
    \"\"\"The original task's prompt, choices and answer index (lm-eval truthfulqa_mc1.yaml).\"\"\"
    return {{
        "query": PROMPT + "\\n\\nQ: " + d["question"] + "\\nA:",
        "choices": list(d["mc1_targets"]["choices"]),
        "gold": 0,
    }}
"""

_ARC = ("allenai/ai2_arc", "test", "train", "acc_norm", _ARC_DOC)
SPECS: dict[str, TaskSpec] = {
    "arc_challenge": TaskSpec(_ARC[0], "ARC-Challenge", *_ARC[1:]),
    "arc_easy": TaskSpec(_ARC[0], "ARC-Easy", *_ARC[1:]),
    "hellaswag": TaskSpec("Rowan/hellaswag", None, "validation", "train", "acc_norm",
                          _HELLASWAG_DOC),
    "truthfulqa_mc1": TaskSpec("truthfulqa/truthful_qa", "multiple_choice", "validation", None,
                               "acc", _TRUTHFULQA_DOC),
}  # fmt: skip


def task_name(benchmark: str) -> str:
    """The generated task's name: `sparseeval_{benchmark}`."""
    return TASK_PREFIX + re.sub(r"[^\w]+", "_", benchmark)


def anchor_docs(aset) -> tuple[str, dict[int, str]]:
    """(original lm-eval task, {doc id: anchor item}) of an anchor set; one task only."""
    docs: dict[str, dict[int, str]] = {}
    for item in aset.items:
        task, doc = item_source(item, aset.benchmark, aset.item_sources)
        docs.setdefault(task, {})[doc] = item
    if len(docs) != 1:
        some = ", ".join(sorted(docs)[:3]) + (", ..." if len(docs) > 3 else "")
        raise LmEvalError(
            f"{aset.benchmark} anchors come from {len(docs)} lm-eval tasks ({some}); a generated "
            "task covers one: use `export-lm-eval --out` (lm-eval --samples) instead"
        )
    ((task, by_doc),) = docs.items()
    if task not in SPECS:
        raise LmEvalError(
            f"no generated lm-eval task for {task!r} yet (supported: {', '.join(SPECS)}); "
            "use `export-lm-eval --out` (lm-eval --samples) and `sparseeval predict` instead"
        )
    return task, dict(sorted(by_doc.items()))


def write_task(
    tasks_dir: str | Path,
    aset,
    anchor_root: str | Path,
    *,
    dataset: str | Path | Mapping[str, str | Path] | None = None,
) -> Path:
    """Write `tasks_dir/sparseeval_{benchmark}/` (YAML + utils.py) for a loaded anchor set.

    aset: a loaded `AnchorSet`; the task pins its benchmark, version and budget.
    anchor_root: what `aset` was loaded from (a published folder, made absolute here, or
    a Hub repo id); the task loads the set from there when it aggregates.
    dataset: local JSON/JSONL files instead of the original task's Hub dataset, with the
    original's fields and order: one file (the evaluation split) or {split: file}, which
    must hold the evaluation split and may hold the original's few-shot split.
    Returns the task folder.
    """
    task, by_doc = anchor_docs(aset)
    spec = SPECS[task]
    name = task_name(aset.benchmark)
    root = Path(anchor_root)
    root = str(root.resolve()) if root.exists() else str(anchor_root)
    yaml_keys: dict = {
        "dataset_path": spec.dataset_path,
        "dataset_name": spec.dataset_name,
        "fewshot_split": spec.fewshot_split,
    }
    if dataset is not None:
        files = dict(dataset) if isinstance(dataset, Mapping) else {spec.split: dataset}
        if spec.split not in files:
            raise LmEvalError(f"local dataset for {task} needs its {spec.split!r} split")
        for f in files.values():
            if not Path(f).is_file():
                raise LmEvalError(f"{f}: no such dataset file")
        yaml_keys = {
            "dataset_path": "json",
            "dataset_kwargs": {"data_files": {k: str(Path(f).resolve()) for k, f in files.items()}},
            "fewshot_split": spec.fewshot_split if spec.fewshot_split in files else None,
        }
    folder = Path(tasks_dir) / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(_yaml(name, task, spec, yaml_keys, aset))
    (folder / "utils.py").write_text(_utils(name, task, spec, by_doc, aset, root, _budget_of(aset)))
    return folder


def _budget_of(aset) -> int | None:
    """The budget of a set published as `k{budget}/v{N}` (None for a single-budget set)."""
    parent = aset.folder.parent.name if aset.folder is not None else ""
    m = re.fullmatch(r"k(\d+)", parent)
    return int(m.group(1)) if m else None


def _yaml(name: str, task: str, spec: TaskSpec, keys: dict, aset) -> str:
    """The task YAML; scalars are written as JSON (valid YAML), `!function` tags as is."""
    q = json.dumps
    lines = [
        f"# {aset.benchmark} v{aset.version}: lm-eval {task} on its {len(aset.items)} SparseEval "
        "anchors,",
        "# reporting the estimated full-benchmark accuracy (written by sparseeval export-lm-eval)",
        f"task: {name}",
        f"dataset_path: {q(keys['dataset_path'])}",
    ]
    if keys.get("dataset_name"):
        lines.append(f"dataset_name: {q(keys['dataset_name'])}")
    if keys.get("dataset_kwargs"):
        lines.append(f"dataset_kwargs: {q(keys['dataset_kwargs'])}")
    lines += [
        "output_type: multiple_choice",
        f"test_split: {q(spec.split)}",
        "process_docs: !function utils.process_docs",
    ]
    if keys.get("fewshot_split"):
        lines += [
            f"fewshot_split: {q(keys['fewshot_split'])}",
            "fewshot_config:",
            "  process_docs: !function utils.fewshot_docs",
        ]
    lines += [
        "doc_to_text: query",
        "doc_to_choice: choices",
        "doc_to_target: gold",
        "process_results: !function utils.process_results",
        "metric_list:",
        f"  - metric: {spec.metric}",
        "    aggregation: mean",
        "    higher_is_better: true",
    ]
    for metric, fn in (("sparseeval", "estimate"), ("sparseeval_low", "low"),
                       ("sparseeval_high", "high")):  # fmt: skip
        lines += [
            f"  - metric: {metric}",
            f"    aggregation: !function utils.{fn}",
            "    higher_is_better: true",
        ]
    lines += ["metadata:", f"  version: {aset.version}.0"]
    return "\n".join(lines) + "\n"


_UTILS = '''\
"""lm-eval task `{name}`: {task} on its {k} SparseEval anchors.

Written by sparseeval {lib} (`sparseeval export-lm-eval --tasks-dir`) for the anchor set
{where}. Each doc's result is (anchor item, 0/1 {metric}); the aggregations load the
published set (NumPy only) and report its estimate of the full-benchmark accuracy
(`sparseeval`) and its {pct}% interval (`sparseeval_low`, `sparseeval_high`).
"""

import functools
{imports}
import datasets
import numpy as np

ANCHOR_SET = {root_q}
BENCHMARK = {benchmark_q}
VERSION = {version}
BUDGET = {budget!r}
METRIC = {metric_q}
ANCHORS = {anchors}  # doc id in the {split_q} split -> anchor item


{doc}

def process_docs(dataset):
    """The anchor docs of the evaluation split, each with its anchor item id."""
    missing = [i for i in ANCHORS if i >= len(dataset)]
    if missing:
        raise ValueError(f"{{BENCHMARK}} anchors {{missing}} are not in the {{len(dataset)}} docs")
    return datasets.Dataset.from_list(
        [doc(dataset[i]) | {{"{item_field}": item}} for i, item in ANCHORS.items()]
    )


def fewshot_docs(dataset):
    return datasets.Dataset.from_list([doc(d) for d in dataset])


def process_results(d, results):
    """lm-eval's multiple-choice scoring of one doc (acc: argmax, acc_norm: per character)."""
    lls = np.array([ll for ll, _ in results])
    if METRIC == "acc_norm":
        lls = lls / np.array([float(len(c)) for c in d["choices"]])
    correct = int(np.argmax(lls) == d["gold"])
    pair = (d["{item_field}"], correct)
    return {{METRIC: correct, "sparseeval": pair, "sparseeval_low": pair, "sparseeval_high": pair}}


@functools.cache
def _estimate(pairs):
    from sparseeval import load_anchor_set

    anchors = load_anchor_set(ANCHOR_SET, BENCHMARK, version=VERSION, budget=BUDGET)
    est = anchors.predict(dict(pairs), allow_missing=True)
    if est.missing:
        print(
            f"sparseeval: {{len(est.missing)}} of {{est.n_anchors}} anchors not run (--limit?); "
            "imputed, interval widened"
        )
    if est.flags:
        print(f"sparseeval: {{est.flag_line}}")
    return est


def estimate(pairs):
    return _estimate(tuple(sorted(map(tuple, pairs)))).value


def low(pairs):
    return _estimate(tuple(sorted(map(tuple, pairs)))).low


def high(pairs):
    return _estimate(tuple(sorted(map(tuple, pairs)))).high
'''


def _utils(name, task, spec: TaskSpec, by_doc: dict[int, str], aset, root, budget) -> str:
    where = f"{aset.benchmark} v{aset.version}" + (f" k{budget}" if budget else "")
    q = json.dumps  # Python string literals in double quotes
    anchors = "{\n" + "".join(f"    {d}: {q(item)},\n" for d, item in by_doc.items()) + "}"
    return _UTILS.format(
        name=name, task=task, k=len(by_doc), where=where, lib=__version__, metric=spec.metric,
        pct=round(100 * aset.level), root_q=q(root), benchmark_q=q(aset.benchmark),
        version=aset.version, budget=budget, metric_q=q(spec.metric), anchors=anchors,
        split_q=q(spec.split), doc=textwrap.dedent(spec.doc), item_field=ITEM_FIELD,
        imports="import re\n" if "re." in spec.doc else "",
    )  # fmt: skip


__all__ = ["ITEM_FIELD", "SPECS", "TaskSpec", "anchor_docs", "task_name", "write_task"]
