"""Open LLM Leaderboard details repos in their real layouts, for the Hub stand-in.

Sources of each layout (looked up, not guessed):
- v1 repo and card: `open-llm-leaderboard/details_{org}__{model}`, one config per task
  (`harness_arc_challenge_25`, `harness_hendrycksTest_{subject}_5`, ...), each listing its
  data files per split, a timestamped split per run and `latest` for the newest; this is how
  metabench's scraper finds the file to read (adkipnis/metabench
  `scraping/benchmark_loader.py`, `_getFileNames`: `cardData.configs[...]["data_files"]`,
  split `latest`).
- v1 details, flat layout: the binary metric as a top-level column (`acc`, `acc_norm`,
  `mc1`), one row per item in the benchmark's order (the same scraper's `_processParquet`
  reads `raw[metric]`, else `raw["metrics.{metric}"]`, and numbers items by row).
- v1 details, lighteval layout: one row per doc with lighteval's `DetailsLogger.Detail`
  fields (`example`, `full_prompt`, `predictions`, `gold`, `choices`, `gold_index`,
  `metrics` as a struct) and its per-doc `Hash` as the struct `hashes` (`example`,
  `full_prompt`, `input_tokens`, `cont_tokens`: xxh64 hex digests) (huggingface/lighteval
  `src/lighteval/logging/info_loggers.py`).
- v1 results: `results_{timestamp}.json` with `config_general.model_name`, `results` keyed
  `harness|arc:challenge|25`, `harness|hendrycksTest-{subject}|5`, `harness|truthfulqa:mc|0`
  (mc1, mc2), `harness|winogrande|5`, `harness|gsm8k|5`, `harness|hellaswag|10`, `all`, and
  `versions` (the leaderboard's parser, `src/leaderboard/read_evals.py`, as copied in
  adkipnis/metabench `scraping/src/leaderboard/read_evals.py`).
- v2: `open-llm-leaderboard/{org}__{model}-details` (the leaderboard's comparator space,
  `constants.py`: `DETAILS_DATASET_ID = "datasets/open-llm-leaderboard/{model_name_sanitized}
  -details"`, files `samples_{subtask}_*.json[l]`), under `{org}__{model}/`:
  `samples_leaderboard_{task}_{timestamp}.jsonl` written by lm-eval 0.4 with `--log_samples`
  (per doc: `doc_id`, `doc`, `target`, `arguments` (one request per choice), `resps`,
  `filtered_resps`, `doc_hash`, `prompt_hash`, `target_hash`, the metric, `filter`,
  `metrics`) and `results_{timestamp}.json` (lm-eval's `results` keyed by task and group,
  `"acc_norm,none"`; e.g. open-llm-leaderboard/results
  `HuggingFaceH4/zephyr-7b-gemma-v0.1/results_2024-06-16T15-58-33.412754.json`).
"""

from __future__ import annotations

import hashlib
import json

import polars as pl

from sparseeval.consume.benchmarks import MMLU_SUBJECTS
from tests.hub_standin import parquet_bytes, v1_card

TS_OLD, TS_NEW = "2023-08-19T16-36-54.384542", "2023-12-02T10-11-12.131415"
V2_TS = "2024-06-26T18-38-40.478524"
TAGS = {  # v1 config -> the task tag of its files and results key
    "harness_arc_challenge_25": "arc:challenge|25",
    "harness_hellaswag_10": "hellaswag|10",
    "harness_truthfulqa_mc_0": "truthfulqa:mc|0",
    "harness_winogrande_5": "winogrande|5",
    "harness_gsm8k_5": "gsm8k|5",
    "harness_hendrycksTest_anatomy_5": "hendrycksTest-anatomy|5",
    "harness_hendrycksTest_virology_5": "hendrycksTest-virology|5",
}


def details_name(config: str, ts: str) -> str:
    return f"{ts}/details_harness|{TAGS[config]}_{ts}.parquet"


def v1_card_for(runs: dict[str, list[str]]) -> str:
    """The card: each config's timestamped splits and `latest` (its newest run)."""
    configs = {
        cfg: [(ts.replace("-", "_"), f"**/details_harness|{TAGS[cfg]}_{ts}.parquet") for ts in tss]
        + [("latest", f"**/details_harness|{TAGS[cfg]}_{max(tss)}.parquet")]
        for cfg, tss in runs.items()
    }
    return v1_card(
        configs | {"results": [("latest", f"**/results_{max(max(runs.values()))}.json")]}
    )


def metric_row(config: str, value: float) -> dict[str, float]:
    """One doc's metrics: the binary metric and its neighbours (which must not be read)."""
    metric = metric_of(config)
    if metric == "mc1":
        return {"mc1": value, "mc2": 0.5}
    return {"acc": 0.0, "acc_norm": value} if metric == "acc_norm" else {"acc": value}


def flat_frame(config: str, values: list[float]) -> pl.DataFrame:
    """Flat layout: the metric columns at the top level (TruthfulQA: mc1 and mc2)."""
    return pl.DataFrame([metric_row(config, v) for v in values])


def metric_of(config: str) -> str:
    """The binary metric the leaderboard's per-item answers are read with (DESIGN.md)."""
    if "arc" in config or "hellaswag" in config:
        return "acc_norm"
    return "mc1" if "truthfulqa" in config else "acc"


def example_hash(config: str, i: int) -> str:
    """A stand-in for lighteval's xxh64 hex digest of a doc's query (16 hex digits)."""
    return hashlib.sha256(f"{config}:{i}".encode()).hexdigest()[:16]


def lighteval_frame(config: str, values: list[float]) -> pl.DataFrame:
    """lighteval layout: one row per doc, `metrics` and `hashes` as structs."""
    metrics = [metric_row(config, v) for v in values]
    return pl.DataFrame({
        "example": [f"question {i}" for i in range(len(values))],
        "full_prompt": [f"few-shot prompt + question {i}" for i in range(len(values))],
        "predictions": [[-1.5, -2.0]] * len(values),
        "gold": [["A"]] * len(values),
        "choices": [["A", "B"]] * len(values),
        "gold_index": [[0]] * len(values),
        "metrics": metrics,
        "hashes": [{"example": example_hash(config, i), "full_prompt": f"{i:016x}",
                    "input_tokens": "0" * 16, "cont_tokens": "1" * 16}
                   for i in range(len(values))],
    })  # fmt: skip


def v1_run(ts: str, layout: str, answers: dict[str, list[float]]) -> dict[str, bytes]:
    """One run's details files: {config: per-item values} in the `flat` or `lighteval` layout."""
    frame = flat_frame if layout == "flat" else lighteval_frame
    return {details_name(c, ts): parquet_bytes(frame(c, v)) for c, v in answers.items()}


def v1_results(model: str, scores: dict[str, float], mmlu: dict[str, float] | None) -> str:
    """A v1 `results_*.json`: `results[harness|task|shots]` per task; MMLU per subject."""
    results: dict[str, dict] = {}
    for cfg, tag in TAGS.items():
        if cfg in scores and "hendrycksTest" not in cfg:
            value = scores[cfg]
            entry = {"acc": value, "acc_stderr": 0.01, "acc_norm": value, "acc_norm_stderr": 0.01}
            if "truthfulqa" in cfg:
                entry = {"mc1": 0.25, "mc1_stderr": 0.01, "mc2": value, "mc2_stderr": 0.01}
            results[f"harness|{tag}"] = entry
    for subject, acc in (mmlu or {}).items():
        entry = {"acc": acc, "acc_stderr": 0.05, "acc_norm": 0.0, "acc_norm_stderr": 0.05}
        results[f"harness|hendrycksTest-{subject}|5"] = entry
    results["all"] = {"acc": 0.0, "acc_stderr": 0.0}
    versions = {f"harness|{tag}": 0 if "truthfulqa" in tag else 1 for tag in TAGS.values()}
    general = {"model_name": model, "model_sha": "abc", "model_dtype": "torch.float16"}
    data = {"config_general": general, "results": results, "versions": versions | {"all": 0}}
    return json.dumps(data, indent=2)


def mmlu_accs(anatomy: float, others: float) -> dict[str, float]:
    """Every MMLU subject's acc: `others`, except anatomy."""
    return {s: (anatomy if s == "anatomy" else others) for s in sorted(MMLU_SUBJECTS)}


# -- v2 ---------------------------------------------------------------------------------

V2_SUBTASKS = {  # subtask -> number of choices (the samples carry one request per choice)
    "leaderboard_bbh_boolean_expressions": 2,
    "leaderboard_bbh_date_understanding": 6,
    "leaderboard_musr_murder_mysteries": 2,
    "leaderboard_musr_object_placements": 5,
    "leaderboard_musr_team_allocation": 3,
    "leaderboard_gpqa_main": 4,
}


def v2_sample(task: str, doc: int, value: float, doc_hash: str) -> dict:
    """One lm-eval 0.4 `--log_samples` line of a multiple-choice leaderboard task."""
    k = V2_SUBTASKS.get(task, 10)
    return {
        "doc_id": doc, "doc": {"input": f"question {doc}", "target": "A"}, "target": 0,
        "arguments": {f"gen_args_{c}": {"arg_0": f"question {doc}", "arg_1": f" {c}"}
                      for c in range(k)},
        "resps": [[[-1.0 - c, False]] for c in range(k)],
        "filtered_resps": [[-1.0 - c, False] for c in range(k)],
        "doc_hash": doc_hash, "prompt_hash": "p" * 64, "target_hash": "t" * 64,
        "acc_norm": value, "acc": value, "filter": "none", "metrics": ["acc_norm", "acc"],
    }  # fmt: skip


def v2_doc_hash(task: str, doc: int) -> str:
    """A stand-in for lm-eval's sha256 of the doc's JSON."""
    return hashlib.sha256(f"{task}:{doc}".encode()).hexdigest()


def v2_files(
    model: str, answers: dict[str, list[float]], results: dict[str, dict]
) -> dict[str, str]:
    """The files of a v2 details repo: samples per task and the results file."""
    folder = model.replace("/", "__")
    out = {}
    for task, values in answers.items():
        lines = [v2_sample(task, d, v, v2_doc_hash(task, d)) for d, v in enumerate(values)]
        out[f"{folder}/samples_{task}_{V2_TS}.jsonl"] = "".join(json.dumps(x) + "\n" for x in lines)
    data = {"results": results, "model_name": model, "config": {"model": "hf"}}
    out[f"{folder}/results_{V2_TS}.json"] = json.dumps(data, indent=2)
    return out
