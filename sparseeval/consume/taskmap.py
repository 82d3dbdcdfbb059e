"""The one task map: our benchmarks, lm-eval task names and Open LLM Leaderboard configs.

Pure Python (no NumPy, Polars or DuckDB), shared by the consumer (`sparseeval.consume.lm_eval`)
and the results store (`sparseeval.pipeline.store`).

- `KNOWN_BENCHMARKS`: the benchmarks every store knows, with a description.
- `BENCHMARK_TASKS`: a benchmark's default lm-eval task (bare doc-id anchors).
- `map_lm_eval_task(task)`: an lm-eval task -> `TaskMap` (benchmark, item prefix, metrics).
  MMLU tasks (`mmlu_{subject}`, `hendrycksTest-{subject}`, one of the 57 subjects) and the
  leaderboard v2 subtasks give items `subject:index`; other tasks give `index`.
- `map_v1_config(config)`: an Open LLM Leaderboard v1 details config -> `TaskMap`.
- Metric preference (first one a sample has, the same for the whole file): ARC and
  HellaSwag `acc_norm` (as the Open LLM Leaderboard), TruthfulQA MC1 `acc`, GSM8K
  `exact_match` then `acc`, MMLU and Winogrande `acc`, leaderboard v2 tasks as listed in
  `_LM_EVAL_TASKS`; any other task the first of `DEFAULT_METRICS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KNOWN_BENCHMARKS: dict[str, str] = {
    "arc": "ARC-Challenge (25-shot), acc_norm",
    "gsm8k": "GSM8K (5-shot), acc / exact_match",
    "hellaswag": "HellaSwag (10-shot), acc_norm",
    "mmlu": "MMLU, 57 subjects, items `subject:index`, acc",
    "truthfulqa": "TruthfulQA MC (0-shot), mc1",
    "winogrande": "Winogrande (5-shot), acc",
    "bbh": "BBH (leaderboard v2), items `subtask:index`, acc_norm",
    "gpqa": "GPQA (leaderboard v2), items `subtask:index`, acc_norm",
    "ifeval": "IFEval (leaderboard v2), prompt_level_strict_acc",
    "math_hard": "MATH level 5 (leaderboard v2), items `subtask:index`, exact_match",
    "mmlu_pro": "MMLU-Pro (leaderboard v2), acc",
    "musr": "MuSR (leaderboard v2), items `subtask:index`, acc_norm",
}

MMLU_SUBJECTS = frozenset(
    [
        "abstract_algebra",
        "anatomy",
        "astronomy",
        "business_ethics",
        "clinical_knowledge",
        "college_biology",
        "college_chemistry",
        "college_computer_science",
        "college_mathematics",
        "college_medicine",
        "college_physics",
        "computer_security",
        "conceptual_physics",
        "econometrics",
        "electrical_engineering",
        "elementary_mathematics",
        "formal_logic",
        "global_facts",
        "high_school_biology",
        "high_school_chemistry",
        "high_school_computer_science",
        "high_school_european_history",
        "high_school_geography",
        "high_school_government_and_politics",
        "high_school_macroeconomics",
        "high_school_mathematics",
        "high_school_microeconomics",
        "high_school_physics",
        "high_school_psychology",
        "high_school_statistics",
        "high_school_us_history",
        "high_school_world_history",
        "human_aging",
        "human_sexuality",
        "international_law",
        "jurisprudence",
        "logical_fallacies",
        "machine_learning",
        "management",
        "marketing",
        "medical_genetics",
        "miscellaneous",
        "moral_disputes",
        "moral_scenarios",
        "nutrition",
        "philosophy",
        "prehistory",
        "professional_accounting",
        "professional_law",
        "professional_medicine",
        "professional_psychology",
        "public_relations",
        "security_studies",
        "sociology",
        "us_foreign_policy",
        "virology",
        "world_religions",
    ]
)

# benchmark (or alias) -> the lm-eval task whose doc ids bare anchor ids are.
BENCHMARK_TASKS: dict[str, str] = {
    "arc": "arc_challenge",
    "arc_challenge": "arc_challenge",
    "gsm8k": "gsm8k",
    "hellaswag": "hellaswag",
    "truthfulqa": "truthfulqa_mc1",
    "truthfulqa_mc": "truthfulqa_mc1",
    "truthfulqa_mc1": "truthfulqa_mc1",
    "winogrande": "winogrande",
    "mmlu_pro": "leaderboard_mmlu_pro",
    "ifeval": "leaderboard_ifeval",
}
# Metrics tried, in order, for a task not in `_LM_EVAL_TASKS`.
DEFAULT_METRICS = ("acc", "exact_match", "mc1", "acc_norm", "em")

# (pattern, benchmark, metrics); a `sub` group becomes the item prefix.
_LM_EVAL_TASKS = [
    (r"arc_challenge", "arc", ("acc_norm",)),
    (r"hellaswag", "hellaswag", ("acc_norm",)),
    (r"truthfulqa_mc1", "truthfulqa", ("acc",)),
    (r"winogrande", "winogrande", ("acc",)),
    (r"gsm8k", "gsm8k", ("exact_match", "acc")),
    (r"mmlu_(?P<sub>\w+)", "mmlu", ("acc",)),
    (r"hendrycksTest-(?P<sub>\w+)", "mmlu", ("acc",)),
    (r"leaderboard_bbh_(?P<sub>\w+)", "bbh", ("acc_norm",)),
    (r"leaderboard_gpqa_(?P<sub>\w+)", "gpqa", ("acc_norm",)),
    (r"leaderboard_ifeval", "ifeval", ("prompt_level_strict_acc",)),
    (r"leaderboard_math_(?P<sub>\w+)_hard", "math_hard", ("exact_match",)),
    (r"leaderboard_mmlu_pro", "mmlu_pro", ("acc",)),
    (r"leaderboard_musr_(?P<sub>\w+)", "musr", ("acc_norm",)),
]
_V1_CONFIGS = [
    (r"arc_challenge", "arc", ("acc_norm",)),
    (r"hellaswag", "hellaswag", ("acc_norm",)),
    (r"truthfulqa_mc", "truthfulqa", ("mc1",)),
    (r"winogrande", "winogrande", ("acc",)),
    (r"gsm8k", "gsm8k", ("acc",)),
    (r"hendrycksTest_(?P<sub>\w+)", "mmlu", ("acc",)),
]
_MMLU_PREFIXES = ("mmlu_", "hendrycksTest-", "hendrycksTest_", "mmlu:")


@dataclass(frozen=True)
class TaskMap:
    """Where a task's samples go: benchmark, item-id prefix (subject) and metric names."""

    benchmark: str
    subject: str | None
    metrics: tuple[str, ...]

    def item(self, index: int | str) -> str:
        return f"{self.subject}:{index}" if self.subject else str(index)


def map_lm_eval_task(task: str) -> TaskMap:
    """An lm-eval task name mapped to our benchmark; unknown tasks keep their own name."""
    return _match(_LM_EVAL_TASKS, task) or TaskMap(task, None, DEFAULT_METRICS)


def map_v1_config(config: str) -> TaskMap | None:
    """`harness_hendrycksTest_anatomy_5` -> mmlu / anatomy / acc; None if not ours."""
    m = re.fullmatch(r"harness_(.+)_\d+", config)
    return _match(_V1_CONFIGS, m.group(1)) if m else None


def task_metrics(task: str) -> tuple[str, ...]:
    """The metrics read from an lm-eval task's samples, most preferred first."""
    return map_lm_eval_task(task).metrics


def mmlu_subject(prefix: str) -> str | None:
    """The MMLU subject of `anatomy`, `mmlu_anatomy` or `hendrycksTest-anatomy`, else None."""
    p = prefix.strip()
    for head in _MMLU_PREFIXES:
        if p.startswith(head) and p[len(head) :] in MMLU_SUBJECTS:
            return p[len(head) :]
    return p if p in MMLU_SUBJECTS else None


def _match(table: list, name: str) -> TaskMap | None:
    for pattern, benchmark, metrics in table:
        m = re.fullmatch(pattern, name)
        if not m:
            continue
        sub = m.groupdict().get("sub")
        if benchmark == "mmlu" and sub not in MMLU_SUBJECTS:
            continue  # not one of the 57 subjects (e.g. an MMLU group or variant)
        return TaskMap(benchmark, sub, metrics)
    return None
