"""The Open LLM Leaderboard's reported scores from a details repo's `results_*.json` files.

v1 (the leaderboard's own parser, `src/leaderboard/read_evals.py` of the
HuggingFaceH4/open_llm_leaderboard space, as copied in adkipnis/metabench
`scraping/src/leaderboard/read_evals.py`): each file has `config_general.model_name` and
`results` keyed `harness|{task}|{shots}`; ARC `harness|arc:challenge|25` acc_norm,
HellaSwag `harness|hellaswag|10` acc_norm, MMLU the mean of `acc` over the
`harness|hendrycksTest-{subject}|5` entries (a file whose `versions` gives
hendrycksTest-abstract_algebra version 0, an old MMLU, is skipped for MMLU), TruthfulQA
`harness|truthfulqa:mc|0` mc2, Winogrande `harness|winogrande|5` acc, GSM8K
`harness|gsm8k|5` acc. Files are read in date order and a later file's value replaces an
earlier one's, per benchmark (the parser's `results.update`). We store MMLU only when all
57 subjects are there (the definition says 57); a value that is not a number (the parser
shows a NaN mc2 as 0) is staged as it is and quarantined.

v2 (lm-eval 0.4 results files, normalized as the leaderboard does it,
https://huggingface.co/docs/leaderboards/open_llm_leaderboard/normalization): a score is
rescaled from the random baseline `lower = 1/num_choices` to 1, `max(0, (raw - lower) / (1 -
lower))`; a task with subtasks (BBH, MuSR) normalizes each subtask with its own baseline and
averages them. The number of choices of a subtask is read from its samples (`arguments`
has one request per choice); GPQA (4 choices) and MMLU-Pro (10) from their group entries;
MATH (generative) is not rescaled. IFEval is not read yet.

What is read for each benchmark (results keys, metrics, number of choices, names) is its
record's `v1` / `v2` (`sparseeval.consume.benchmarks`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from sparseeval.consume.benchmarks import Benchmark, LeaderboardV1, records
from sparseeval.consume.lm_eval_samples import RESULTS_FILE
from sparseeval.consume.taskmap import map_lm_eval_task
from sparseeval.pipeline.store.scores import SCORE_SCHEMA


def results_files(files: Iterable[str]) -> list[str]:
    """The `results_{timestamp}.json` files of a repo listing, oldest first."""
    named = [(RESULTS_FILE.match(Path(f).name), f) for f in files]
    return [f for _, f in sorted((m.group("ts"), f) for m, f in named if m)]


def read_json(path: Path) -> dict:
    """A results file's object ({} when it is not JSON or not an object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def scores_frame(rows: Mapping[str, dict[str, Any]], model: str) -> pl.DataFrame:
    """{benchmark: {score, definition, ref_no}} as staged score rows (fractions: scale 1)."""
    out = [{"model": model, "benchmark": b, "scale": 1.0, **r, "score": str(r["score"]),
            "refusal": r.get("refusal")}
           for b, r in sorted(rows.items())]  # fmt: skip
    return pl.DataFrame(out, schema=SCORE_SCHEMA)


# -- v1 ------------------------------------------------------------------------------------


def v1_scores(files: list[tuple[Path, int]], model: str) -> pl.DataFrame:
    """Score rows of v1 results files [(path, ref_no)], oldest first: newer files win."""
    rows: dict[str, dict[str, Any]] = {}
    definitions = {b.name: b.v1.definition for b in records() if b.v1}
    for path, ref_no in files:
        for bench, score in v1_file_scores(read_json(path)).items():
            refusal = score if isinstance(score, Refusal) else None
            rows[bench] = {"score": "" if refusal else score, "refusal": refusal,
                           "definition": definitions[bench], "ref_no": ref_no}  # fmt: skip
    return scores_frame(rows, model)


class Refusal(str):
    """Why a benchmark's value of a results file is quarantined (e.g. a subject's accuracy)."""


def v1_file_scores(data: dict) -> dict[str, object]:
    """{benchmark: value or `Refusal`} of one v1 results file's `results`."""
    results = data.get("results") if isinstance(data.get("results"), dict) else {}
    out: dict[str, object] = {}
    for b in records():
        if b.v1 is None:
            continue
        if "{sub}" in b.v1.results_key:  # the mean over its subtasks' entries
            if (mean := _v1_mean(b, b.v1, results, data.get("versions"))) is not None:
                out[b.name] = mean
        elif isinstance(entry := results.get(b.v1.results_key), dict) and b.v1.metric in entry:
            out[b.name] = entry[b.v1.metric]  # as it is: a value that is no number is quarantined
    return out


def _v1_mean(
    b: Benchmark, v1: LeaderboardV1, results: dict, versions: object
) -> float | Refusal | None:
    """The mean of the subtasks' metric (MMLU: the 57 subjects' acc); None (a subtask
    missing, or the stale version); a `Refusal` naming a subtask whose value is outside 0..1
    (the mean would hide it)."""
    if isinstance(versions, dict) and v1.stale_version and versions.get(v1.stale_version) == 0:
        return None
    values = []
    for sub in sorted(b.subtasks or ()):
        entry = results.get(v1.results_key.format(sub=sub))
        value = entry.get(v1.metric) if isinstance(entry, dict) else None
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        if not 0.0 <= value <= 1.0:
            return Refusal(f"{b.name} subtask {sub}: {v1.metric} {value:g} is outside 0..1")
        values.append(float(value))
    return sum(values) / len(values) if values else None


# -- v2 ------------------------------------------------------------------------------------


def n_choices(path: Path) -> int | None:
    """The number of choices of a multiple-choice samples file (its first line's requests)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                args = json.loads(line).get("arguments")
            except (ValueError, AttributeError):
                return None
            return len(args) if isinstance(args, dict | list) and args else None
    return None


def normalize(raw: float, choices: int | None) -> float:
    """The leaderboard's normalization to [0, 1]: from the random baseline 1/choices to 1."""
    lower = 1 / choices if choices else 0.0
    return max(0.0, (raw - lower) / (1 - lower))


def v2_scores(
    files: list[tuple[Path, int]], choices: Mapping[str, int], model: str
) -> pl.DataFrame:
    """Score rows of v2 results files [(path, ref_no)], oldest first: newer files win.

    choices: {subtask: number of choices}, from the samples files read with them."""
    rows: dict[str, dict[str, Any]] = {}
    names = {b.name: b.v2.name for b in records() if b.v2}
    for path, ref_no in files:
        results = read_json(path).get("results")
        if isinstance(results, dict):
            for bench, (score, how) in v2_file_scores(results, choices).items():
                definition = f"Open LLM Leaderboard v2 {names[bench]}: {how}"
                rows[bench] = {"score": score, "definition": definition, "ref_no": ref_no}
    return scores_frame(rows, model)


def v2_file_scores(results: dict, choices: Mapping[str, int]) -> dict[str, tuple[float, str]]:
    """{benchmark: (normalized score, definition)} of one v2 results file's `results`."""
    out: dict[str, tuple[float, str]] = {}
    for b in records():
        if b.v2 is None:
            continue
        if b.v2.group is None:
            found = _subtask_mean(results, choices, b.name, b.metric)
        else:
            found = _group_score(results, b.v2.group, b.metric, b.v2.choices)
        if found is not None:
            out[b.name] = found
    return out


def _group_score(results: dict, key: str, metric: str, k: int | None) -> tuple[float, str] | None:
    """A group entry's metric normalized from 1/k (random) to 1 (raw when k is None)."""
    raw = _value(results.get(key), metric)
    if raw is None:
        return None
    how = f"{metric} normalized from 1/{k} (random) to 1" if k else f"{metric}, raw"
    return normalize(raw, k), how


def _subtask_mean(
    results: dict, choices: Mapping[str, int], bench: str, metric: str
) -> tuple[float, str] | None:
    """The mean over a task's subtasks of each one normalized by its own number of choices
    (None unless every subtask's value and number of choices is known)."""
    subtasks = sorted(t for t in results if map_lm_eval_task(t).benchmark == bench)
    values = [_value(results[t], metric) for t in subtasks]
    if not subtasks or None in values or any(t not in choices for t in subtasks):
        return None
    mean = sum(normalize(v, choices[t]) for v, t in zip(values, subtasks, strict=True))  # type: ignore[arg-type]
    how = (f"{metric} normalized from 1/choices (random) to 1 per subtask, mean of"
           f" {len(subtasks)} subtasks")  # fmt: skip
    return mean / len(subtasks), how


def _value(entry: object, metric: str) -> float | None:
    """`entry["{metric},none"]` as a finite float, or None."""
    value = entry.get(f"{metric},none") if isinstance(entry, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)
