"""The `utils.py` of a generated lm-eval task (written by `task.write_task`).

It holds the original's prompt as `doc(d)`, the anchors (doc id -> anchor item) and thin
calls into `sparseeval.consume.lm_eval.runtime`, which keeps the anchor docs, scores each
doc as lm-eval does and aggregates by loading the published set (NumPy only). Pure Python.
"""

from __future__ import annotations

import json
import pprint
import re
import textwrap
from dataclasses import dataclass

from sparseeval._version import __version__
from sparseeval.consume.lm_eval.ids import ITEM_FIELD
from sparseeval.consume.lm_eval.specs import TaskSpec


@dataclass(frozen=True)
class UtilsContext:
    """What a generated task's utils.py is written from (see `task.write_task`)."""

    name: str
    spec: TaskSpec
    sources: dict[str, dict[int, str]]  # {lm-eval task: {doc id: anchor item}}
    subtasks: dict[str, str | None]  # {lm-eval task: its subtask}
    fewshot: str | None  # the few-shot split the task uses
    aset: object
    root: str
    budget: int | None
    files: dict | None
    member: bool


_UTILS = '''\
"""lm-eval task `{name}`: {tasks} on its {k} SparseEval anchors.

Written by sparseeval {lib} (`sparseeval export-lm-eval --tasks-dir`) for the anchor set
{where}. Each doc's result is (anchor item, 0/1 {metric}); the aggregations load the
published set (NumPy only) and report its estimate of the full-benchmark score
(`sparseeval`) and its {pct}% interval (`sparseeval_low`, `sparseeval_high`).
"""
{imports}
from sparseeval.consume.lm_eval import runtime as rt
ANCHOR_SET = {root_q}
BENCHMARK = {benchmark_q}
VERSION = {version}
BUDGET = {budget!r}
METRIC = {metric_q}
{anchors}

{doc}
{docs}
{scoring}
'''

_SINGLE = '''
def process_docs(dataset):
    """The anchor docs of the evaluation split, each with its anchor item id (any other
    split, the training split a task draws its shots from, whole)."""
    if dataset.split is not None and str(dataset.split) != SPLIT:
        return fewshot_docs(dataset){begin}
    return datasets.Dataset.from_list(rt.keep_anchors(dataset, ANCHORS, doc, BENCHMARK{processed}))


def fewshot_docs(dataset):
    return datasets.Dataset.from_list([doc(d) for d in dataset])
'''

_GROUPED = '''
def load(**kwargs):
    """The anchor docs of every source, with their source's description and few-shot docs."""{begin}
    return rt.load_sources(DATASET, SOURCES, doc, BENCHMARK)
'''

_SHOTS = '''

class Shots(ContextSampler):
    """The first n few-shot docs of the eval doc's own subject (lm-eval's first_n sampler on
    that subject's few-shot split, as the original per-subject task asks)."""

    def sample(self, n, eval_doc=None, df=None, **kwargs):
        shots = eval_doc[rt.SHOTS_FIELD]
        if n > len(shots):
            raise ValueError(f"{n} few-shot docs asked, the subject has {len(shots)}")
        return shots[:n]
'''

_MC_SCORE = '''
def score(d, results):
    """lm-eval's multiple-choice scoring of one doc (acc: argmax, acc_norm: per character)."""
    return rt.choice_score(d, results, METRIC)
'''

_AGGREGATE = """
def process_results(d, results):
    correct = score(d, results)
    pair = (d["{item_field}"], correct){record}
    return {{METRIC: correct, {pairs}}}

{aggregations}"""

_OWN = """
def _estimate(pairs):
    return rt.estimate(ANCHOR_SET, BENCHMARK, VERSION, BUDGET, pairs)


def sparseeval(pairs):
    return _estimate(pairs).value


def sparseeval_low(pairs):
    return _estimate(pairs).low


def sparseeval_high(pairs):
    return _estimate(pairs).high
"""

_MEMBER = """
def sparseeval(pairs):
    return rt.value(rt.suite_estimates(ANCHOR_SET, VERSION, BENCHMARK, pairs)[0])


def sparseeval_low(pairs):
    return rt.value(rt.suite_estimates(ANCHOR_SET, VERSION, BENCHMARK, pairs)[0], "low")


def sparseeval_high(pairs):
    return rt.value(rt.suite_estimates(ANCHOR_SET, VERSION, BENCHMARK, pairs)[0], "high")


def suite_average(pairs):
    return rt.value(rt.suite_estimates(ANCHOR_SET, VERSION, BENCHMARK, pairs)[1])


def suite_average_low(pairs):
    return rt.value(rt.suite_estimates(ANCHOR_SET, VERSION, BENCHMARK, pairs)[1], "low")


def suite_average_high(pairs):
    return rt.value(rt.suite_estimates(ANCHOR_SET, VERSION, BENCHMARK, pairs)[1], "high")
"""


def utils_py(c: UtilsContext) -> str:
    """The text of the generated task's utils.py."""
    spec, aset, q = c.spec, c.aset, json.dumps
    where = f"{aset.benchmark} v{aset.version}" + (f" k{c.budget}" if c.budget else "")
    if c.member:
        where = f"suite v{aset.version} (benchmark {aset.benchmark})"
    item = (lambda i: f"{aset.benchmark}/{i}") if c.member else str
    begin = "\n    rt.begin(ANCHOR_SET, VERSION, BENCHMARK)" if c.member else ""
    shots = spec.grouped and (c.fewshot is not None or spec.original)
    imports = [f"import {m}" for m in ((() if spec.grouped else ("datasets",)) + spec.imports)]
    if shots:
        imports.append("from lm_eval.api.samplers import ContextSampler")
    if spec.grouped:
        anchors = f"DATASET = {q(spec.dataset_path)}\nSOURCES = {_sources(c, item)}"
        docs = _GROUPED.format(begin=begin) + (_SHOTS if shots else "")
    else:
        ((_, by_doc),) = c.sources.items()
        rows = "".join(f"    {d}: {q(item(i))},\n" for d, i in by_doc.items())
        anchors = (
            f"SPLIT = {q(spec.split)}\nANCHORS = {{\n{rows}}}  # doc id in SPLIT -> anchor item"
        )
        docs = _SINGLE.format(begin=begin, processed=", processed=True" if spec.processed else "")
    pairs = ", ".join(f'"{m}": pair' for m in ("sparseeval", "sparseeval_low", "sparseeval_high")
                      + (("suite_average", "suite_average_low", "suite_average_high")
                         if c.member else ()))  # fmt: skip
    record = "\n    rt.record(ANCHOR_SET, VERSION, BENCHMARK, *pair)" if c.member else ""
    scoring = ("" if "def score(" in spec.doc else _MC_SCORE) + _AGGREGATE.format(
        item_field=ITEM_FIELD, record=record, pairs=pairs,
        aggregations=_MEMBER if c.member else _OWN)  # fmt: skip
    text = _UTILS.format(
        name=c.name, tasks=", ".join(c.sources), k=len(aset.items), where=where,
        lib=__version__, metric=spec.metric, pct=round(100 * aset.level), root_q=q(c.root),
        benchmark_q=q(aset.benchmark), version=aset.version, budget=c.budget,
        metric_q=q(spec.metric), anchors=anchors, doc=textwrap.dedent(spec.doc), docs=docs,
        scoring=scoring, imports="\n".join(imports) + "\n",
    )  # fmt: skip
    return re.sub(r"\n+(?=(?:def|class) \w)", "\n\n\n", text)  # two blank lines, as PEP 8


def _sources(c: UtilsContext, item) -> str:
    """SOURCES: per original task, its dataset config, splits, description and anchors."""
    out = {}
    for task, sub in c.subtasks.items():
        name, split, description = c.spec.source(sub)
        out[task] = {
            "name": name, "split": split,
            "fewshot": c.fewshot,
            "description": description,
            "files": c.files[task] if c.files else None,
            "original": c.spec.original_yaml(sub),
            "anchors": {str(d): item(i) for d, i in c.sources[task].items()},
        }  # fmt: skip
    return pprint.pformat(out, sort_dicts=False, width=96)


__all__ = [
    "UtilsContext",
    "utils_py",
]
