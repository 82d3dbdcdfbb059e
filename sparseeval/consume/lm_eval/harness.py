"""Round trip with EleutherAI's lm-evaluation-harness (0.4.x): run only the anchors, read back.

Export: `export_samples(items, benchmark)` gives the JSON lm-eval's `run --samples`
accepts (a JSON string or a path to a JSON file): `{"task": [doc ids]}`, where
doc ids are indices into the task's evaluation split. lm-eval keeps those
original indices as `doc_id` in its output, so answers map straight back.

    sparseeval export-lm-eval --anchor-set published --benchmark arc --out anchors.json
    lm-eval run --model hf --model_args pretrained=ORG/MODEL --tasks arc_challenge \
        --samples anchors.json --log_samples --output_path results/
    sparseeval predict --anchor-set published --benchmark arc --responses results/

Read: lm-eval with `--log_samples` writes `samples_{task}_{timestamp}.jsonl` (one
file per task, under `{output_path}/{model name}/`), one JSON object per doc and
filter with `doc_id`, `filter`, `metrics` (the metric names) and each metric's
value (`acc`, `acc_norm`, `exact_match`, ...). `read_responses` turns those files
into {anchor item id: 0/1}.

How an anchor item id maps to (task, doc_id), first rule that applies:
1. an explicit map (the manifest's `item_sources`: {item: {"task", "doc_id"}});
2. `subject:index` where subject is one of MMLU's 57 subjects (optionally written
   `mmlu_subject` or `hendrycksTest-subject`) -> task `mmlu_{subject}`, doc `index` (a
   benchmark record's `subtasks`, `id_prefixes`, `subtask_task`: `consume.benchmarks`);
3. `task:doc_id` (the text after the last colon is an integer) -> that task and doc;
4. a bare integer `doc_id` -> the benchmark's default task (`taskmap.default_task`, e.g.
   arc -> arc_challenge, truthfulqa -> truthfulqa_mc1) or the `task` you pass.
Anything else is an error naming the item (pass `item_sources` when publishing).
A doc id is a non-negative integer, or a string of digits: 914.4, "914.4", 914.0 and
true are refused (LmEvalError, or a quarantined line in the store), never rounded.

The metric read per task (unless you pass `metric`) is its benchmark record's (`metrics` in
`sparseeval.consume.benchmarks`: ARC and HellaSwag `acc_norm` as the Open LLM Leaderboard
did, GSM8K `exact_match` then `acc`, MMLU, TruthfulQA MC1 and Winogrande `acc`; other tasks
the first of `taskmap.DEFAULT_METRICS` the file has); one file never mixes metrics. With several
filters (GSM8K: `strict-match` and `flexible-extract`) `strict-match` is used (then
`none`) unless you pass `filter`.

This module is the consumer's face of the round trip: the id mapping and the export live
in `ids`, reading samples files (`SampleParser`, the one line-level reader, which
the results store uses too) in `samples`; `read_responses` joins the two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from sparseeval.consume.lm_eval.ids import (
    ITEM_FIELD,
    LmEvalError,
    doc_id,
    export_samples,
    item_source,
    merge_samples,
    write_samples_json,
)
from sparseeval.consume.lm_eval.samples import (
    FILTER_PREFERENCE,
    RESULTS_FILE,
    SAMPLES_FILE,
    BadSample,
    MissingMetric,
    Sample,
    SampleParser,
    choose_filter,
    find_samples_files,
    generated_task_items,
    is_samples_file,
    json_lines,
    newest_samples,
    read_samples_file,
    samples_task,
)


def read_responses(
    paths: Iterable[str | Path],
    *,
    items: Iterable[str] | None = None,
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    metric: str | None = None,
    filter: str | None = None,
    task: str | None = None,
    hashes: dict[str, str] | None = None,
    origins: dict[str, Path] | None = None,
) -> dict[str, int]:
    """{item id: 0/1} from lm-eval samples files (or folders holding them).

    With `items` (an anchor set's items) docs are mapped back to those ids and
    docs that are not anchors are ignored; without, ids are `task:doc_id`. hashes: filled
    with {item id: doc_hash} of the answers whose line carries one, whatever the file's
    name (a generated task's doc is not the original's: its doc carries the original's hash,
    and a doc edited after lm-eval ran is refused, `generated_task_items`). origins: filled
    with {item id: the samples file its answer came from}.
    """
    inverse = None  # made when first needed: the files of generated tasks name their items
    out: dict[str, int] = {}
    for f in find_samples_files(paths):
        named = samples_task(f) is not None
        seen: dict[int, str] = {}
        t, docs = read_samples_file(f, metric=metric, filter=filter,
                                    task=None if named else task, hashes=seen)  # fmt: skip
        generated = generated_task_items(f)
        for doc, value in docs.items():
            if generated:
                item = generated[doc].item
            elif items is None:
                item = f"{t}:{doc}"
            elif (t, doc) in (inverse := inverse or _inverse(items, benchmark, item_sources, task)):
                item = inverse[(t, doc)]
            else:
                continue
            out[item] = value
            if origins is not None:
                origins[item] = f
            own = generated[doc].doc_hash if generated else seen.get(doc)
            if hashes is not None and own:
                hashes[item] = own
    return out


def _inverse(items, benchmark, item_sources, task) -> dict[tuple[str, int], str]:
    """{(task, doc_id): item} of an anchor set's items."""
    return {item_source(i, benchmark, item_sources, task): i for i in items}


__all__ = [
    "FILTER_PREFERENCE",
    "ITEM_FIELD",
    "RESULTS_FILE",
    "SAMPLES_FILE",
    "BadSample",
    "LmEvalError",
    "MissingMetric",
    "Sample",
    "SampleParser",
    "choose_filter",
    "doc_id",
    "export_samples",
    "find_samples_files",
    "generated_task_items",
    "is_samples_file",
    "item_source",
    "json_lines",
    "merge_samples",
    "newest_samples",
    "read_responses",
    "read_samples_file",
    "samples_task",
    "write_samples_json",
]
