"""The reported scores of an lm-eval results JSON (`results_{ts}.json`), as staged rows.

lm-eval 0.4 writes (`lm_eval/evaluator.py` `simple_evaluate`, saved by
`lm_eval/loggers/evaluation_tracker.py` `save_results_aggregated`) an object whose
`results` maps each task, and each group, to its aggregate metrics keyed `"metric,filter"`:
`{"arc_challenge": {"alias": "arc_challenge", "acc,none": 0.5, "acc_stderr,none": 0.1,
"acc_norm,none": 0.6, ...}}`. A benchmark's score is its task's entry under the metric its
samples are read with (`taskmap`: arc_challenge `acc_norm`, gsm8k `exact_match` with the
`strict-match` filter, ...); a benchmark read from subtasks (MMLU subjects) takes the
entry of its group (`mmlu`) when the file has one, as lm-eval aggregates it (for lm-eval's
own mmlu group: weighted by subject size, not the leaderboard's mean of 57 subject
accuracies), else none.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from sparseeval.consume.lm_eval.samples import choose_filter
from sparseeval.consume.lm_eval.taskmap import map_lm_eval_task
from sparseeval.pipeline.store.scores import SCORE_SCHEMA

GROUP = "group aggregate, as lm-eval reports it"
# What a group's aggregate is, where lm-eval's own group config says it (0.4.13:
# lm_eval/tasks/mmlu/default/_mmlu.yaml, `aggregate_metric_list: acc, weight_by_size: True`).
GROUP_NOTES = {"mmlu": f"{GROUP}: subjects weighted by size, the mean over all questions"}


def results_scores(data: dict, tasks: list[str], model: str, ref_no: int) -> pl.DataFrame:
    """One row per benchmark of `tasks` (the tasks whose samples the unit reads) that the
    results JSON `data` gives a score for (fractions: scale 1)."""
    results = data.get("results")
    results = results if isinstance(results, dict) else {}
    rows: dict[str, dict[str, Any]] = {}
    for task in tasks:
        mapped = map_lm_eval_task(task)
        name = task if mapped.subject is None else mapped.benchmark  # a group: `mmlu`
        entry = results.get(name)
        if mapped.benchmark in rows or not isinstance(entry, dict):
            continue
        found = _metric(entry, mapped.metrics)
        if found is None:
            continue
        metric, filt = found
        kind = "" if mapped.subject is None else f" ({GROUP_NOTES.get(name, GROUP)})"
        shown = "" if filt in ("none", "") else f" (filter {filt})"
        rows[mapped.benchmark] = {
            "model": model,
            "benchmark": mapped.benchmark,
            "score": str(entry[f"{metric},{filt}"]),
            "scale": 1.0,
            "definition": f"lm-eval {name} {metric}{shown}{kind}",
            "ref_no": ref_no,
        }
    return pl.DataFrame(list(rows.values()), schema=SCORE_SCHEMA)


def _metric(entry: dict, metrics: tuple[str, ...]) -> tuple[str, str] | None:
    """(metric, filter) of the first preferred metric the entry has, its preferred filter."""
    for metric in metrics:
        filters = [k.split(",", 1)[1] for k in entry if k.startswith(f"{metric},")]
        if filters:
            return metric, choose_filter(filters) or filters[0]
    return None


__all__ = [
    "GROUP",
    "GROUP_NOTES",
    "results_scores",
]
