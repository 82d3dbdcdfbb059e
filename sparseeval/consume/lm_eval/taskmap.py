"""The task map: lm-eval task names and Open LLM Leaderboard configs -> our benchmarks.

Pure Python, shared by the consumer (`sparseeval.consume.lm_eval.harness`) and the results store
(`sparseeval.pipeline.store`); every fact comes from the records in `benchmarks`.

- `known_benchmarks()`: the benchmarks every store knows, with a description.
- `default_task(name)`: a benchmark's default lm-eval task (bare doc-id anchors).
- `map_lm_eval_task(task)`: an lm-eval task -> `TaskMap` (benchmark, item prefix, metrics).
  A task pattern's group `sub` (MMLU's `mmlu_{subject}` and `hendrycksTest-{subject}`, one
  of the 57 subjects; the leaderboard v2 subtasks) gives items `subject:index`; other tasks
  give `index`.
- `map_v1_config(config)`: an Open LLM Leaderboard v1 details config -> `TaskMap`.
- Metric preference (first one a sample has, the same for the whole file): the record's
  `metrics` (ARC and HellaSwag `acc_norm` as the Open LLM Leaderboard, GSM8K `exact_match`
  then `acc`, ...); any other task the first of `DEFAULT_METRICS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sparseeval.consume.benchmarks import Benchmark, records

# Metrics tried, in order, for a task no benchmark's record names.
DEFAULT_METRICS = ("acc", "exact_match", "mc1", "acc_norm", "em")


@dataclass(frozen=True)
class TaskMap:
    """Where a task's samples go: benchmark, item-id prefix (subject) and metric names."""

    benchmark: str
    subject: str | None
    metrics: tuple[str, ...]

    def item(self, index: int | str) -> str:
        return f"{self.subject}:{index}" if self.subject else str(index)


def known_benchmarks() -> dict[str, str]:
    """{benchmark: description} of every record, in the store's order."""
    return {b.name: b.description for b in records()}


def default_task(name: str) -> str | None:
    """The lm-eval task whose doc ids a benchmark's (or alias's) bare anchor ids are."""
    return next((b.default_task for b in records() if name in (b.name, *b.aliases)), None)


def map_lm_eval_task(task: str) -> TaskMap:
    """An lm-eval task name mapped to our benchmark; unknown tasks keep their own name."""
    table = [(b, t, b.metrics) for b in records() for t in b.tasks]
    return _match(task, table) or TaskMap(task, None, DEFAULT_METRICS)


def map_v1_config(config: str) -> TaskMap | None:
    """`harness_hendrycksTest_anatomy_5` -> mmlu / anatomy / acc; None if not ours."""
    m = re.fullmatch(r"harness_(.+)_\d+", config)
    table = [(b, b.v1.config, b.v1.metrics) for b in records() if b.v1]
    return _match(m.group(1), table) if m else None


def task_metrics(task: str) -> tuple[str, ...]:
    """The metrics read from an lm-eval task's samples, most preferred first."""
    return map_lm_eval_task(task).metrics


def subtask_task(prefix: str) -> str | None:
    """The lm-eval task of an item prefix naming a subtask (`anatomy`, `mmlu_anatomy` or
    `hendrycksTest-anatomy` -> `mmlu_anatomy`), else None."""
    p = prefix.strip()
    for b in records():
        if b.subtask_task is None or b.subtasks is None:
            continue
        for head in b.id_prefixes:
            if p.startswith(head) and p[len(head) :] in b.subtasks:
                return b.subtask_task.format(sub=p[len(head) :])
        if p in b.subtasks:
            return b.subtask_task.format(sub=p)
    return None


def _match(name: str, table: list[tuple[Benchmark, str, tuple[str, ...]]]) -> TaskMap | None:
    """The first (record, regex, metrics) of `table` whose regex `name` fully matches."""
    for b, pattern, metrics in table:
        m = re.fullmatch(pattern, name)
        if not m:
            continue
        sub = m.groupdict().get("sub")
        if b.subtasks is not None and sub not in b.subtasks:
            continue  # not one of its subtasks (e.g. an MMLU group or variant)
        return TaskMap(b.name, sub, metrics)
    return None


__all__ = [
    "DEFAULT_METRICS",
    "TaskMap",
    "default_task",
    "known_benchmarks",
    "map_lm_eval_task",
    "map_v1_config",
    "subtask_task",
    "task_metrics",
]
