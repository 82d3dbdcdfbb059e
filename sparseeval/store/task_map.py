"""Map leaderboard / lm-eval task names to our benchmarks, item prefixes and binary metrics."""

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


@dataclass(frozen=True)
class TaskMap:
    """Where a task's samples go: benchmark, item-id prefix (subject) and metric names."""

    benchmark: str
    subject: str | None
    metrics: tuple[str, ...]

    def item(self, index: int | str) -> str:
        return f"{self.subject}:{index}" if self.subject else str(index)


# (pattern, benchmark, metrics); a `sub` group becomes the item prefix.
_V1_CONFIGS = [
    (r"arc_challenge", "arc", ("acc_norm",)),
    (r"hellaswag", "hellaswag", ("acc_norm",)),
    (r"truthfulqa_mc", "truthfulqa", ("mc1",)),
    (r"winogrande", "winogrande", ("acc",)),
    (r"gsm8k", "gsm8k", ("acc",)),
    (r"hendrycksTest_(?P<sub>\w+)", "mmlu", ("acc",)),
]
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
DEFAULT_METRICS = ("acc", "exact_match", "acc_norm")


def map_v1_config(config: str) -> TaskMap | None:
    """`harness_hendrycksTest_anatomy_5` -> mmlu / anatomy / acc; None if not ours."""
    m = re.fullmatch(r"harness_(.+)_\d+", config)
    return _match(_V1_CONFIGS, m.group(1)) if m else None


def map_lm_eval_task(task: str) -> TaskMap:
    """An lm-eval task name mapped to our benchmark; unknown tasks keep their own name."""
    return _match(_LM_EVAL_TASKS, task) or TaskMap(task, None, DEFAULT_METRICS)


def _match(table: list, name: str) -> TaskMap | None:
    for pattern, benchmark, metrics in table:
        m = re.fullmatch(pattern, name)
        if m:
            return TaskMap(benchmark, m.groupdict().get("sub"), metrics)
    return None
