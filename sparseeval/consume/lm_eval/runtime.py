"""What the tasks `export-lm-eval --tasks-dir` writes call while lm-eval runs them.

NumPy-free at import (NumPy, and `datasets` which lm-eval brings, are imported where used).
A generated `utils.py` holds the prompts and constants and calls these for the mechanics:

- `keep_anchors` / `load_sources`: the anchor docs (one split, or several dataset
  configs/splits for MMLU's subjects), each with its anchor item id and the `doc_hash`
  the original task logs for it (`original_hash`), which `predict` compares with the set's;
- `choice_score`: lm-eval's multiple-choice scoring of one doc (acc, acc_norm);
- `estimate`: a benchmark's estimate from its (item, 0/1) pairs (`AnchorSet.predict`);
- `begin` / `record` / `suite_estimates`: the suite. lm-eval 0.4.13 aggregates a group as
  the mean of its subtasks' aggregated values (lm_eval/api/group.py `Group.aggregate`),
  so an estimate that reads every benchmark's anchors cannot be a group aggregation.
  Instead each suite member task records its docs' results as lm-eval scores them
  (`process_results`, which lm-eval runs for every task before it aggregates any:
  lm_eval/evaluator.py `evaluate`), and each member's aggregation reads the suite's
  estimates from all recorded answers. Every member reports the same suite average, so
  the group's mean of it is the suite average.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from sparseeval.consume.lm_eval.ids import HASH_FIELD, ITEM_FIELD, LmEvalError, doc_hash

if TYPE_CHECKING:
    from sparseeval.consume.scoring.estimate import Estimate

DESCRIPTION_FIELD = "sparseeval_description"
SHOTS_FIELD = "sparseeval_shots"
Pairs = Iterable[Iterable]  # (item, 0/1) pairs as lm-eval passes them to an aggregation


def keep_anchors(dataset, anchors: Mapping[int, str], doc: Callable, benchmark: str,
                 extra: Mapping | None = None, processed: bool = False) -> list[dict]:  # fmt: skip
    """`doc(d)` of each anchor doc of `dataset` (doc id -> item), with its item id and the
    original task's `doc_hash` of it (`original_hash`; `processed`: see there)."""
    missing = [i for i in anchors if i >= len(dataset)]
    if missing:
        raise LmEvalError(f"{benchmark} anchors {missing} are not in the {len(dataset)} docs")
    out = []
    for i, item in anchors.items():
        row = dataset[i]
        made = doc(row)
        own = {ITEM_FIELD: item, HASH_FIELD: original_hash(row, made if processed else None)}
        out.append(made | dict(extra or {}) | own)
    return out


def original_hash(row: Mapping, added: Mapping | None = None) -> str:
    """The `doc_hash` lm-eval logs for this dataset row in the original task: of the row
    itself, or of the row with `added` (an original whose process_docs adds fields to each
    row, as HellaSwag's adds query, choices and gold: `TaskSpec.processed`)."""
    from lm_eval.utils import handle_non_serializable

    original = dict(row) | dict(added) if added is not None else row
    return doc_hash(original, handle_non_serializable)


def load_split(path: str, name: str | None, split: str, files: Mapping[str, str] | None):
    """One split of a Hub dataset config, or of local JSON files {split: file}."""
    import datasets

    if files is not None:
        return datasets.load_dataset("json", data_files={split: files[split]}, split=split)
    return datasets.load_dataset(path, name, split=split)


def load_sources(path: str, sources: Mapping[str, Mapping], doc: Callable, benchmark: str):
    """{"test": the anchor docs of every source}; each doc carries its source's few-shot
    docs (`SHOTS_FIELD`, in order) and description (`DESCRIPTION_FIELD`).

    sources: {lm-eval task: {"name", "split", "fewshot", "description", "files", "anchors",
    "original"}}; "original" names an installed lm-eval YAML whose description,
    doc_to_choice (given to `doc` as the field `choices`) and few-shot samples are read.
    """
    import datasets

    docs = []
    for src in sources.values():
        files, cfg = src.get("files"), original_config(src.get("original"))
        more = {"choices": cfg["doc_to_choice"]} if "doc_to_choice" in cfg else {}
        make = functools.partial(_doc_with, doc, more)
        extra = {DESCRIPTION_FIELD: src.get("description") or cfg.get("description") or ""}
        if src.get("fewshot"):
            extra[SHOTS_FIELD] = [
                make(d) for d in load_split(path, src["name"], src["fewshot"], files)
            ]
        elif (cfg.get("fewshot_config") or {}).get("samples"):
            extra[SHOTS_FIELD] = [make(d) for d in cfg["fewshot_config"]["samples"]]
        data = load_split(path, src["name"], src["split"], files)
        anchors = {int(k): v for k, v in src["anchors"].items()}
        docs += keep_anchors(data, anchors, make, benchmark, extra)
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def _doc_with(doc: Callable, more: Mapping, d: Mapping) -> dict:
    return doc(dict(d) | dict(more))


def original_config(relative: str | None) -> dict:
    """An installed lm-eval task YAML (path under lm_eval/tasks/), or {} for None."""
    if relative is None:
        return {}
    from pathlib import Path

    import lm_eval.tasks
    import yaml

    return yaml.safe_load((Path(lm_eval.tasks.__file__).parent / relative).read_text())


def choice_score(d: Mapping, results: Iterable, metric: str) -> int:
    """lm-eval's multiple-choice scoring (lm_eval/api/task.py `process_results`): the
    argmax of the log-likelihoods, per character of each choice for acc_norm."""
    import numpy as np

    lls = np.array([ll for ll, _ in results])
    if metric == "acc_norm":
        lls = lls / np.array([float(len(c)) for c in d["choices"]])
    return int(np.argmax(lls) == d["gold"])


def _frozen(pairs: Pairs) -> tuple:
    return tuple(sorted((str(i), int(v)) for i, v in pairs))


def _note(message: str, _said: set = set()) -> None:  # noqa: B006 (once per process)
    if message not in _said:
        _said.add(message)
        print(f"sparseeval: {message}")


@functools.cache
def _anchor_set(root: str, benchmark: str, version: int, budget: int | None):
    from sparseeval.consume.sets.anchorset import load_anchor_set

    return load_anchor_set(root, benchmark, version=version, budget=budget)


@functools.cache
def _estimate(root: str, benchmark: str, version: int, budget: int | None, pairs: tuple):
    est = _anchor_set(root, benchmark, version, budget).predict(dict(pairs), allow_missing=True)
    if est.missing:
        _note(f"{benchmark}: {len(est.missing)} of {est.n_anchors} anchors not run (--limit?); "
              "imputed, interval widened")  # fmt: skip
    if est.flags:
        _note(f"{benchmark}: {est.flag_line}")
        _note_next(root, benchmark, version, budget, est, dict(pairs))
    return est


def _note_next(root: str, benchmark: str, version: int, budget: int | None, est, answers):
    """For a flagged estimate: how many more items would help, and how to run them."""
    from sparseeval.consume.scoring.next_items import next_step

    aset = _anchor_set(root, benchmark, version, budget)
    goal = 200 * float(aset.conformal.halfwidths(est.value))
    n = aset.items_needed(answers, goal / 100) if not est.correction else None
    if n:
        where = f"--anchor-set {root} --benchmark {benchmark} --version {version}"
        where += f" --budget {budget}" if budget else ""
        step = next_step(where, benchmark, n, goal, "OUTPUT_PATH/", "more", "flagged")
        _note(step["line"] + " (OUTPUT_PATH: this run's --output_path with --log_samples)")


def estimate(root: str, benchmark: str, version: int, budget: int | None, pairs: Pairs):
    """The published set's estimate from lm-eval's (item, 0/1) pairs (missing: imputed)."""
    return _estimate(root, benchmark, version, budget, _frozen(pairs))


# -- the suite ----------------------------------------------------------------------------

_ANSWERS: dict[tuple, dict[str, dict[str, int]]] = {}  # (root, version) -> benchmark -> item
_AGGREGATED: dict[tuple, set[str]] = {}  # (root, version) -> members aggregated this run


def begin(root: str, version: int, benchmark: str) -> None:
    """A suite member's docs are read: a run starts (answers of a finished one go). lm-eval
    also reads a task's docs right after aggregating it (0.4.13 `_collect_results`:
    `len(task.eval_docs)`); while other members are still to aggregate, that is no new run."""
    key = (root, version)
    done = _AGGREGATED.get(key)
    if done and not done >= set(_ANSWERS.get(key, {})):
        return  # mid-aggregation: the members still to aggregate need every answer
    if done:
        _ANSWERS.pop(key, None)
        _AGGREGATED.pop(key, None)
    _ANSWERS.setdefault(key, {}).pop(benchmark, None)


def record(root: str, version: int, benchmark: str, item: str, value: int) -> None:
    """One doc's result of a suite member (item: its suite id `B/item`), as lm-eval scored it."""
    answers = _ANSWERS.setdefault((root, version), {}).setdefault(benchmark, {})
    answers[_own(benchmark, item)] = int(value)


def _own(benchmark: str, item: str) -> str:
    """A benchmark's own id of one of its suite ids (`B/item` -> `item`)."""
    head, sep, rest = str(item).partition("/")
    return rest if sep and head == benchmark else str(item)


@functools.cache
def _suite(root: str, version: int):
    from sparseeval.consume.sets.suite_set import load_suite

    return load_suite(root, version)


@functools.cache
def _suite_predict(root: str, version: int, answers: tuple) -> dict[str, Estimate]:
    suite = _suite(root, version)
    given = {b: dict(pairs) for b, pairs in answers}
    missing = [b for b in suite.benchmarks if b not in given]
    if missing:
        _note(f"suite: no answers for {', '.join(missing)} in this run; each benchmark is read "
              "by its own reader and the suite average is not estimated (nan)")  # fmt: skip
    out = suite.predict(given, allow_missing=True)
    for b, est in out.items():
        if est.missing:
            _note(f"suite {b}: {len(est.missing)} of {est.n_anchors} anchors not run; imputed")
    return out


def suite_estimates(root: str, version: int, benchmark: str, pairs: Pairs):
    """(this benchmark's estimate, the suite average or None) from every recorded answer.

    pairs: this member's (item, 0/1) pairs as lm-eval gathered them (they replace what
    `record` saw, e.g. one rank's share in a data-parallel run).
    """
    key = (root, version)
    _AGGREGATED.setdefault(key, set()).add(benchmark)
    answers = _ANSWERS.setdefault(key, {})
    answers[benchmark] = {_own(benchmark, i): v for i, v in _frozen(pairs)}
    frozen = tuple(sorted((b, _frozen(a.items())) for b, a in answers.items()))
    out = _suite_predict(root, version, frozen)
    return out[benchmark], out.get("average")


def value(est: Estimate | None, field: str = "value") -> float:
    """A field of an estimate for lm-eval's table; nan when there is no estimate."""
    return math.nan if est is None else float(getattr(est, field))


__all__ = [
    "DESCRIPTION_FIELD",
    "SHOTS_FIELD",
    "Pairs",
    "begin",
    "choice_score",
    "estimate",
    "keep_anchors",
    "load_sources",
    "load_split",
    "original_config",
    "original_hash",
    "record",
    "suite_estimates",
    "value",
]
