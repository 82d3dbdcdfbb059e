"""Reported scores: the number a source itself reports per (model, benchmark), as a target.

Stored in `reported_scores` (an accuracy in [0, 1], its definition in words, a `ref_id`
into `source_refs`), with replaced values in `reported_score_history`; newer ingests
replace older values. A unit stages its scores as the frame `score_frame` (`SCORE_SCHEMA`,
listed in `Unit.frames`) in the same transaction as its per-item rows; `merge_scores`
validates them (sql/scores_validate.sql: a score that is not a number, below 0 or above
its scale, of an unknown benchmark, or conflicting within one source is quarantined with
its reason, never stored) and merges them (sql/scores_merge.sql).

Read here from results files: an lm-eval results JSON (`results_scores`, for `lm_eval_run`)
and the Open LLM Leaderboard's details repos (`v1_scores`, `v2_scores`, for `hub_details`);
`score_files` reads a `scores:FILE` table.

## From an lm-eval results JSON

The reported scores of an lm-eval results JSON (`results_{ts}.json`), as staged rows.

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

## From the Open LLM Leaderboard's details

The Open LLM Leaderboard's reported scores from a details repo's `results_*.json` files.

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

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from sparseeval.consume.answers.ids import MAX_MODEL_LEN, IdError, canonical_id
from sparseeval.consume.answers.jsontext import JsonTextError, loads
from sparseeval.consume.benchmarks import Benchmark, LeaderboardV1, records
from sparseeval.consume.lm_eval.samples import RESULTS_FILE, choose_filter
from sparseeval.consume.lm_eval.taskmap import map_lm_eval_task
from sparseeval.pipeline.store.db import Store, execute, fetch
from sparseeval.pipeline.store.unit import conform

SCORE_FRAME = "score_frame"
SCORE_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "score": pl.String,
    "scale": pl.Float64,  # 100: the score is in percent; 1: a fraction
    "definition": pl.String,
    "line": pl.Int64,
    "ref_no": pl.Int32,
    "refusal": pl.String,  # the stager's own reason to quarantine the row (else null)
}


def v1_definitions() -> dict[str, str]:
    """{benchmark: the Open LLM Leaderboard v1's reported score in words} (DESIGN.md,
    "Reported score"), from the benchmarks' records."""
    return {b.name: b.v1.definition for b in records() if b.v1}


@dataclass
class ScoreCounts:
    """What a unit's reported scores did: read = stored + quarantined + duplicates."""

    n_read: int = 0
    n_new: int = 0
    n_updated: int = 0
    n_unchanged: int = 0
    n_quarantined: int = 0
    n_duplicates: int = 0
    n_contradicted: int = 0  # of the quarantined: contradicted by the model's own items

    def note(self) -> str:
        """`reported scores: read 6; new 5, ..., quarantined 1` ('' when none were read)."""
        if not self.n_read:
            return ""
        return (
            f"reported scores: read {self.n_read:,}; new {self.n_new:,}, updated"
            f" {self.n_updated:,}, unchanged {self.n_unchanged:,}, quarantined"
            f" {self.n_quarantined:,}{self._why()}, duplicates {self.n_duplicates:,}"
        )

    def _why(self) -> str:
        n = self.n_contradicted
        return f" ({n:,} contradicted by the model's own items)" if n else ""


def stage_scores(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame | None) -> None:
    """Register `frame` (the `SCORE_SCHEMA` layout; missing columns null) as `score_frame`,
    its model ids canonical by the rule result rows follow (`consume.answers.ids`): every score
    path (scores files, lm-eval and Hub results) goes through here."""
    con.register(SCORE_FRAME, canonical_models(conform(frame, SCORE_SCHEMA)))


def canonical_models(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with each model id canonical; a row whose id has no canonical form (a
    control or format character, too long) gets that reason as its `refusal`."""
    ids = frame["model"].drop_nulls().unique().to_list()
    canon, why = {}, {}
    for raw in ids:
        try:
            canon[raw] = canonical_id(raw, "model id", MAX_MODEL_LEN)
        except IdError as exc:
            why[raw] = str(exc)
    if all(canon.get(i) == i for i in ids):
        return frame
    model = pl.col("model")
    return frame.with_columns(
        model=model.replace_strict(canon, default=model, return_dtype=pl.String),
        refusal=pl.coalesce(
            "refusal", model.replace_strict(why, default=None, return_dtype=pl.String)
        ),
    )


def merge_scores(con: duckdb.DuckDBPyConnection, params: dict) -> ScoreCounts:
    """Validate, quarantine and merge the staged `score_frame` (inside the unit's transaction).

    Runs after the unit's per-item rows are merged, so its own items count in the check of
    scores that the model's items contradict (`contradiction`)."""
    from sparseeval.pipeline.store.contradiction import register_contradictions

    register_contradictions(con)
    execute(con, "scores_validate", {})
    ((n_read, n_bad, n_dup, n_matched, n_changed, n_contra),) = fetch(con, "scores_counts", {})
    if n_read:
        execute(con, "scores_merge", params)
    n_good = n_read - n_bad - n_dup
    return ScoreCounts(
        n_read, n_good - n_matched, n_changed, n_matched - n_changed, n_bad, n_dup, n_contra
    )


def reported_scores(store: Store, benchmark: str | None = None) -> pl.DataFrame:
    """The stored reported scores (model, benchmark, score in [0, 1], definition, source,
    source_ref, run_id) of one benchmark, or of all."""
    return store.query("reported_scores", {"benchmark": benchmark})


# -- from an lm-eval results JSON ----------------------------------------------------------


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


# -- from the Open LLM Leaderboard's details ----------------------------------------------


def results_files(files: Iterable[str]) -> list[str]:
    """The `results_{timestamp}.json` files of a repo listing, oldest first."""
    named = [(RESULTS_FILE.match(Path(f).name), f) for f in files]
    return [f for _, f in sorted((m.group("ts"), f) for m, f in named if m)]


class Refusal(str):
    """Why a value (or a whole results file) is quarantined, e.g. a subject's accuracy."""


def read_results(path: Path) -> dict | Refusal:
    """A results file's object with a `results` object; a `Refusal` naming the file when it
    is not one (that file's scores are quarantined, the repo's other files still read)."""
    try:
        data = loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        return Refusal(f"results file {path.name}: not UTF-8 text")
    except (OSError, JsonTextError) as exc:
        return Refusal(f"results file {path.name}: not readable JSON ({exc})")
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        return Refusal(f"results file {path.name}: no `results` object")
    return data


def _readable(
    files: list[tuple[Path, int]], broken: list[tuple[int, Refusal]]
) -> Iterable[tuple[int, dict]]:
    """(ref_no, data) of each results file that reads; each other's refusal goes to `broken`."""
    for path, ref_no in files:
        data = read_results(path)
        if isinstance(data, Refusal):
            broken.append((ref_no, data))
        else:
            yield ref_no, data


def scores_frame(
    rows: Mapping[str, dict[str, Any]], model: str, broken: Iterable[tuple[int, Refusal]] = ()
) -> pl.DataFrame:
    """{benchmark: {score, definition, ref_no}} as staged score rows (fractions: scale 1),
    and a refused row per broken file [(ref_no, why)]."""
    out = [{"model": model, "benchmark": b, "scale": 1.0, **r, "score": str(r["score"]),
            "refusal": r.get("refusal")}
           for b, r in sorted(rows.items())]  # fmt: skip
    out += [{"model": model, "benchmark": "", "score": "", "scale": 1.0, "ref_no": ref_no,
             "refusal": why} for ref_no, why in broken]  # fmt: skip
    return pl.DataFrame(out, schema=SCORE_SCHEMA)


def _entry(rows: dict, bench: str, found: object, definition: str, ref_no: int) -> None:
    """Note one benchmark's value of a file (a newer file's replaces an older one's)."""
    refusal = found if isinstance(found, Refusal) else None
    rows[bench] = {"score": "" if refusal else found, "refusal": refusal,
                   "definition": definition, "ref_no": ref_no}  # fmt: skip


# -- v1 ------------------------------------------------------------------------------------


def v1_scores(files: list[tuple[Path, int]], model: str) -> pl.DataFrame:
    """Score rows of v1 results files [(path, ref_no)], oldest first: newer files win."""
    rows: dict[str, dict[str, Any]] = {}
    broken: list[tuple[int, Refusal]] = []
    definitions = {b.name: b.v1.definition for b in records() if b.v1}
    for ref_no, data in _readable(files, broken):
        for bench, score in v1_file_scores(data).items():
            _entry(rows, bench, score, definitions[bench], ref_no)
    return scores_frame(rows, model, broken)


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
    """The mean of the subtasks' metric (MMLU: the 57 subjects' acc); None (no subtask, or
    the stale version); a `Refusal` naming a subtask whose value is outside 0..1 or not a
    number (the mean would hide it), or the subtasks missing (a partial group)."""
    if isinstance(versions, dict) and v1.stale_version and versions.get(v1.stale_version) == 0:
        return None
    subs = sorted(b.subtasks or ())
    entries = {s: results.get(v1.results_key.format(sub=s)) for s in subs}
    values = {s: e.get(v1.metric) if isinstance(e, dict) else None for s, e in entries.items()}
    found = {s: v for s, v in values.items() if v is not None}
    if not found:
        return None
    return group_mean(b.name, v1.metric, found, subs)


def _fraction(bench: str, sub: str, metric: str, value: object) -> float | Refusal:
    """A part's value as a fraction in 0..1, or a `Refusal` naming the part."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return Refusal(f"{bench} subtask {sub}: {metric} {str(value)[:30]} is not a number")
    if not 0.0 <= value <= 1.0:
        return Refusal(f"{bench} subtask {sub}: {metric} {value:g} is outside 0..1")
    return float(value)


def group_mean(
    bench: str, metric: str, found: Mapping[str, object], subs: Iterable[str]
) -> float | Refusal:
    """The mean of a group's parts {subtask: value}: a `Refusal` unless every one of `subs`
    is there (a partial group is not a score) and each is a fraction in 0..1."""
    subs = list(subs)
    missing = [s for s in subs if s not in found]
    if missing:
        return Refusal(
            f"{bench}: {len(subs) - len(missing)} of {len(subs)} subtasks in the results file"
            f" (no {missing[0]}): a partial group is not a score"
        )
    values = [_fraction(bench, s, metric, found[s]) for s in subs]
    bad = next((v for v in values if isinstance(v, Refusal)), None)
    return bad if bad is not None else sum(values) / len(values)  # type: ignore[arg-type]


# -- v2 ------------------------------------------------------------------------------------


def n_choices(path: Path) -> int | None:
    """The number of choices of a multiple-choice samples file (its first line's requests)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                args = loads(line).get("arguments")  # type: ignore[union-attr]
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
    broken: list[tuple[int, Refusal]] = []
    names = {b.name: b.v2.name for b in records() if b.v2}
    for ref_no, data in _readable(files, broken):
        for bench, found in v2_file_scores(data["results"], choices).items():
            score, how = (found, "") if isinstance(found, Refusal) else found
            _entry(rows, bench, score, f"Open LLM Leaderboard v2 {names[bench]}: {how}", ref_no)
    return scores_frame(rows, model, broken)


def v2_file_scores(
    results: dict, choices: Mapping[str, int]
) -> dict[str, tuple[float, str] | Refusal]:
    """{benchmark: (normalized score, definition) or `Refusal`} of one v2 results file's
    `results`."""
    out: dict[str, tuple[float, str] | Refusal] = {}
    for b in records():
        if b.v2 is None:
            continue
        if b.v2.group is None:
            found = _subtask_mean(results, choices, b)
        else:
            found = _group_score(results, b.name, b.v2.group, b.metric, b.v2.choices)
        if found is not None:
            out[b.name] = found
    return out


def _group_score(
    results: dict, bench: str, key: str, metric: str, k: int | None
) -> tuple[float, str] | Refusal | None:
    """A group entry's metric normalized from 1/k (random) to 1 (raw when k is None); a
    `Refusal` when the raw value is not a fraction in 0..1."""
    entry = results.get(key)
    raw = entry.get(f"{metric},none") if isinstance(entry, dict) else None
    if raw is None:
        return None
    value = _fraction(bench, key, metric, raw)
    if isinstance(value, Refusal):
        return value
    how = f"{metric} normalized from 1/{k} (random) to 1" if k else f"{metric}, raw"
    return normalize(value, k), how


def _subtask_mean(
    results: dict, choices: Mapping[str, int], b: Benchmark
) -> tuple[float, str] | Refusal | None:
    """The mean over a task's subtasks of each one normalized by its own number of choices
    (None when no subtask is there or a number of choices is unknown; a `Refusal` for a
    partial group, when the record names its subtasks, or a value outside 0..1)."""
    tasks = {map_lm_eval_task(t).subject: t for t in results}
    tasks = {s: t for s, t in tasks.items() if s and map_lm_eval_task(t).benchmark == b.name}
    if not tasks or any(t not in choices for t in tasks.values()):
        return None
    found = {s: _value(results[t], b.metric) for s, t in tasks.items()}
    raw = group_mean(b.name, b.metric, found, sorted(b.subtasks or tasks))
    if isinstance(raw, Refusal):
        return raw
    # every part is a fraction now: normalize each by its own number of choices
    mean = sum(normalize(float(found[s]), choices[t]) for s, t in tasks.items())  # type: ignore[arg-type]
    how = (f"{b.metric} normalized from 1/choices (random) to 1 per subtask, mean of"
           f" {len(tasks)} subtasks")  # fmt: skip
    return mean / len(tasks), how


def _value(entry: object, metric: str) -> object:
    """`entry["{metric},none"]` as it is (None when absent)."""
    return entry.get(f"{metric},none") if isinstance(entry, dict) else None


__all__ = [
    "GROUP",
    "GROUP_NOTES",
    "SCORE_FRAME",
    "SCORE_SCHEMA",
    "Refusal",
    "ScoreCounts",
    "canonical_models",
    "group_mean",
    "merge_scores",
    "n_choices",
    "normalize",
    "read_results",
    "reported_scores",
    "results_files",
    "results_scores",
    "scores_frame",
    "stage_scores",
    "v1_definitions",
    "v1_file_scores",
    "v1_scores",
    "v2_file_scores",
    "v2_scores",
]
