"""lm-evaluation-harness tasks that report the SparseEval estimate in lm-eval's own table.

    sparseeval export-lm-eval --tasks-dir tasks/ --benchmark arc mmlu gsm8k
    lm_eval --model hf --model_args pretrained=ORG/MODEL --tasks sparseeval_arc \
        --include_path tasks/ --log_samples --output_path results/

`write_task(tasks_dir, anchor_set, anchor_root)` writes `tasks_dir/sparseeval_{benchmark}/`:

- `sparseeval_{benchmark}.yaml`: the original lm-eval task (same dataset, evaluation split,
  prompt, choices, few-shot split and sampler; `specs`) restricted to the anchors,
  with the benchmark's own binary metric over the anchors (e.g. `acc_norm`) and three more:
  `sparseeval` (the estimated full-benchmark score), `sparseeval_low` and
  `sparseeval_high` (its interval at the set's level).
- `utils.py` (written by `task_utils`): the original's prompt as `doc(d)`, the
  anchors (doc id -> anchor item), and thin calls into `sparseeval.consume.lm_eval.runtime`,
  which keeps the anchor docs, scores each doc as lm-eval does and aggregates by loading
  the published set through the light consumer path (pinned to the version written) and
  calling `AnchorSet.predict`.

MMLU's anchors are spread over its 57 subject tasks (`mmlu_anatomy`, ...): one generated
task `sparseeval_mmlu` holds all of them, each doc with its subject's description and its
subject's few-shot docs (`first_n` of its dev split, as lm-eval's mmlu tasks), so the estimate
is a task aggregation over the whole group (lm-eval's group aggregation is a mean of
subtask values only: lm_eval/api/group.py). BBH's 24 subtasks (each its own description,
choices and hand-written shots, read from lm-eval's installed YAML when it runs) and MuSR's
three splits work the same way.

`write_suite(tasks_dir, suite, anchor_root)` writes the group `sparseeval_suite`: one member
task per benchmark (`sparseeval_suite_{benchmark}`, the suite's anchors of it) reporting the
suite's estimate of it, plus `suite_average` (and `_low`, `_high`), which the group row
shows (see `runtime` for how members share answers).

Each kept doc carries its anchor item id in the field `sparseeval_item` (suite members:
the suite id `B/item`); lm-eval numbers the kept docs 0..k-1, so that field (in the `doc`
of each `--log_samples` line) is what maps a sample back to its anchor.
NumPy-free at import; lm-eval is needed only to run the written tasks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sparseeval.consume.benchmarks import find_spec, task_specs, why_not
from sparseeval.consume.lm_eval.ids import ITEM_FIELD, LmEvalError, item_source
from sparseeval.consume.lm_eval.runtime import DESCRIPTION_FIELD
from sparseeval.consume.lm_eval.specs import TaskSpec
from sparseeval.consume.lm_eval.task_utils import UtilsContext, utils_py

TASK_PREFIX = "sparseeval_"
SUITE_GROUP = "sparseeval_suite"
Dataset = str | Path | Mapping[str, str | Path] | None


@dataclass(frozen=True)
class TaskPlan:
    """Which original task(s) an anchor set's items come from: {lm-eval task: {doc: item}}."""

    key: str  # the spec's lm-eval task name (`benchmarks.task_specs`)
    spec: TaskSpec
    sources: dict[str, dict[int, str]]
    subtasks: dict[str, str | None]

    def default_split(self) -> str:
        """The split a bare `--dataset FILE` is (single-source tasks only)."""
        return self.spec.split


def task_name(benchmark: str) -> str:
    """The generated task's name: `sparseeval_{benchmark}`."""
    return TASK_PREFIX + re.sub(r"[^\w]+", "_", benchmark)


def plan_task(aset) -> TaskPlan:
    """The original task(s) of a set's anchors; one spec only (LmEvalError otherwise)."""
    found: dict[str, tuple[str, TaskSpec, str | None]] = {}
    sources: dict[str, dict[int, str]] = {}
    for item in aset.items:
        task, doc = item_source(item, aset.benchmark, aset.item_sources)
        spec = found.get(task) or find_spec(task)
        if spec is None:
            raise LmEvalError(
                f"no generated lm-eval task for {task!r} yet{why_not(aset.benchmark)} "
                f"(supported: {', '.join(task_specs())}); use `export-lm-eval --out` (lm-eval "
                "--samples) and `sparseeval predict` instead"
            )
        found[task] = spec
        sources.setdefault(task, {})[doc] = item
    keys = {key for key, _, _ in found.values()}
    if len(keys) != 1 or (len(sources) > 1 and not next(iter(found.values()))[1].grouped):
        some = ", ".join(sorted(sources)[:3]) + (", ..." if len(sources) > 3 else "")
        raise LmEvalError(
            f"{aset.benchmark} anchors come from {len(sources)} lm-eval tasks ({some}); a "
            "generated task covers one (or MMLU's subjects): use `export-lm-eval --out` "
            "(lm-eval --samples) instead"
        )
    key, spec, _ = next(iter(found.values()))
    subs = {t: found[t][2] for t in sorted(sources)}
    return TaskPlan(key, spec, {t: dict(sorted(sources[t].items())) for t in subs}, subs)


def write_task(tasks_dir: str | Path, aset, anchor_root: str | Path, *, dataset: Dataset = None,
               suite=None) -> Path:  # fmt: skip
    """Write `tasks_dir/sparseeval_{benchmark}/` (YAML + utils.py) for a loaded anchor set.

    aset: a loaded `AnchorSet`; the task pins its benchmark, version and budget.
    anchor_root: what `aset` was loaded from (a published folder, made absolute here, or
    a Hub repo id); the task loads the set from there when it aggregates.
    dataset: local JSON/JSONL files instead of the original's Hub dataset, with the
    original's fields and order: one file (the evaluation split) or {split: file}, which
    must hold the evaluation split and may hold the few-shot split; keys `TASK:SPLIT`
    (e.g. `mmlu_anatomy:test`) name one original task's split (MMLU's subjects, a suite).
    suite: a loaded `SuiteAnchorSet` when `aset` is one of its members (`write_suite`).
    Returns the task folder.
    """
    plan = plan_task(aset)
    root = Path(anchor_root)
    root = str(root.resolve()) if root.exists() else str(anchor_root)
    name = task_name(f"suite_{aset.benchmark}" if suite else aset.benchmark)
    files = _local_files(plan, dataset)
    folder = Path(tasks_dir) / (f"{SUITE_GROUP}/{aset.benchmark}" if suite else name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(_yaml(name, plan, files, aset, suite is not None))
    ctx = UtilsContext(name, plan.spec, plan.sources, plan.subtasks, _fewshot_split(plan, files),
                       aset, root, _budget_of(aset), files, suite is not None)  # fmt: skip
    (folder / "utils.py").write_text(utils_py(ctx))
    return folder


def write_suite(tasks_dir: str | Path, suite, anchor_root: str | Path, *,
                dataset: Dataset = None) -> Path:  # fmt: skip
    """Write the group `sparseeval_suite` (a member task per benchmark) under `tasks_dir`."""
    for b in suite.benchmarks:  # check every member before writing any
        plan_task(suite.own[b])
    folder = Path(tasks_dir) / SUITE_GROUP
    members = [write_task(tasks_dir, suite.own[b], anchor_root, dataset=dataset, suite=suite)
               for b in suite.benchmarks]  # fmt: skip
    lines = [
        f"# suite v{suite.version}: every benchmark's SparseEval anchors, each estimate and the",
        "# suite average with its interval (written by sparseeval export-lm-eval)",
        f"group: {SUITE_GROUP}",
        "task:",
        *(f"  - {task_name('suite_' + m.name)}" for m in members),
        "aggregate_metric_list:",  # every member reports the same average: the mean is it
        *(line for m in ("suite_average", "suite_average_low", "suite_average_high")
          for line in (f"  - metric: {m}", "    aggregation: mean", "    weight_by_size: false")),
        "metadata:",
        f"  version: {suite.version}.0",
    ]  # fmt: skip
    (folder / f"{SUITE_GROUP}.yaml").write_text("\n".join(lines) + "\n")
    return folder


def _local_files(plan: TaskPlan, dataset: Dataset) -> dict[str, dict[str, str]] | None:
    """{lm-eval task: {split: absolute file}} of the local dataset, None for the Hub's."""
    if dataset is None:
        return None
    given = dict(dataset) if isinstance(dataset, Mapping) else {plan.default_split(): dataset}
    single = len(plan.sources) == 1
    out: dict[str, dict[str, str]] = {}
    for task, sub in plan.subtasks.items():
        _, split, _ = plan.spec.source(sub)
        out[task] = {}
        for s in filter(None, (split, plan.spec.fewshot_split)):
            f = given.get(f"{task}:{s}") or (given.get(s) if single else None)
            if f is not None:
                if not Path(f).is_file():
                    raise LmEvalError(f"{f}: no such dataset file")
                out[task][s] = str(Path(f).resolve())
        if split not in out[task]:
            raise LmEvalError(f"local dataset for {task} needs its {split!r} split "
                              f"(--dataset {task}:{split}=FILE)")  # fmt: skip
    return out


def short_shot_splits(plan: TaskPlan, dataset: Dataset) -> list[str]:
    """A line per local few-shot split holding no more docs than the task's shots: lm-eval's
    default sampler draws shots + 1 and drops the question itself (lm_eval/api/samplers.py
    `ContextSampler.sample`), so the run would end in `Sample larger than population`."""
    spec = plan.spec
    files = _local_files(plan, dataset)
    split = _fewshot_split(plan, files)
    if not (files and split and spec.num_fewshot and spec.sampler == "default"
            and not spec.grouped and spec.fewshot_key == "fewshot_split"):  # fmt: skip
        return []
    out, k = [], spec.num_fewshot
    for task, given in files.items():
        text = Path(given[split]).read_text(encoding="utf-8-sig")
        try:  # a JSON array, or JSON lines
            n = len(json.loads(text)) if text.lstrip().startswith("[") else None
        except ValueError:
            n = None
        n = n if n is not None else sum(1 for line in text.splitlines() if line.strip())
        if n <= k:
            out.append(f"{given[split]}: {n} doc(s) in {task}'s {split!r} split; its {k} shots"
                       f" need {k + 1} (lm-eval draws shots + 1 and drops the question"
                       f" itself): give a larger split, or run lm-eval with --num_fewshot"
                       f" {max(n - 1, 0)} or fewer")  # fmt: skip
    return out


def _budget_of(aset) -> int | None:
    """The budget of a set published as `k{budget}/v{N}` (None for a single-budget set)."""
    parent = aset.folder.parent.name if aset.folder is not None else ""
    m = re.fullmatch(r"k(\d+)", parent)
    return int(m.group(1)) if m else None


def _yaml(name: str, plan: TaskPlan, files, aset, member: bool) -> str:
    """The task YAML; scalars are written as JSON (valid YAML), `!function` tags as is."""
    q, spec = json.dumps, plan.spec
    shown = "its suite anchors" if member else f"its {len(aset.items)} SparseEval anchors"
    lines = [
        f"# {aset.benchmark} v{aset.version}: lm-eval {', '.join(plan.sources)} on {shown},",
        "# reporting the estimated full-benchmark score (written by sparseeval export-lm-eval)",
        f"task: {name}",
        f"dataset_path: {q('json' if files and not spec.grouped else spec.dataset_path)}",
    ]
    output = f"output_type: {spec.output_type.replace('multiple_input', 'multiple_choice')}"
    fewshot = _fewshot_split(plan, files)
    if spec.grouped:
        lines += ["custom_dataset: !function utils.load", output, 'test_split: "test"',
                  f"description: {DESCRIPTION_FIELD}"]  # fmt: skip
        if fewshot or spec.original:
            lines += ["fewshot_config:", '  split: "test"', "  sampler: !function utils.Shots"]
    else:
        (source,) = plan.sources
        dname, split, _ = spec.source(None)
        if files:
            lines.append(f"dataset_kwargs: {q({'data_files': files[source]})}")
        elif dname:
            lines.append(f"dataset_name: {q(dname)}")
        lines += [
            output,
            f"{spec.eval_key}: {q(split)}",
            "process_docs: !function utils.process_docs",
        ]
        if fewshot and spec.fewshot_key != "fewshot_split":  # shots from process_docs, whole
            lines.append(f"{spec.fewshot_key}: {q(fewshot)}")
        elif fewshot:
            lines += [f"fewshot_split: {q(fewshot)}", "fewshot_config:",
                      f"  sampler: {spec.sampler}",
                      "  process_docs: !function utils.fewshot_docs"]  # fmt: skip
    if spec.num_fewshot is not None:
        lines.append(f"num_fewshot: {spec.num_fewshot}")
    lines += [f"{k}: {v}" for k, v in spec.fields.items()]
    lines += [*spec.yaml, "process_results: !function utils.process_results", "metric_list:",
              f"  - metric: {spec.metric}", "    aggregation: mean",
              "    higher_is_better: true"]  # fmt: skip
    metrics = ["sparseeval", "sparseeval_low", "sparseeval_high"]
    if member:
        metrics += ["suite_average", "suite_average_low", "suite_average_high"]
    for metric in metrics:
        lines += [f"  - metric: {metric}", f"    aggregation: !function utils.{metric}",
                  "    higher_is_better: true"]  # fmt: skip
    lines += ["metadata:", f"  version: {aset.version}.0"]
    return "\n".join(lines) + "\n"


def _fewshot_split(plan: TaskPlan, files) -> str | None:
    """The few-shot split the task uses: the original's, when it is available."""
    split = plan.spec.fewshot_split
    if split is None or files is None:
        return split
    return split if all(split in f for f in files.values()) else None


__all__ = ["ITEM_FIELD", "SUITE_GROUP", "TaskPlan", "TaskSpec", "plan_task",
           "short_shot_splits", "task_name", "write_suite", "write_task"]  # fmt: skip
