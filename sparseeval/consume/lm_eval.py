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
   `mmlu_subject` or `hendrycksTest-subject`) -> task `mmlu_{subject}`, doc `index`;
3. `task:doc_id` (the text after the last colon is an integer) -> that task and doc;
4. a bare integer `doc_id` -> the benchmark's default task (taskmap.BENCHMARK_TASKS, e.g.
   arc -> arc_challenge, truthfulqa -> truthfulqa_mc1) or the `task` you pass.
Anything else is an error naming the item (pass `item_sources` when publishing).
A doc id is a non-negative integer, or a string of digits: 914.4, "914.4", 914.0 and
true are refused (LmEvalError, or a quarantined line in the store), never rounded.

The metric read per task (unless you pass `metric`) follows `sparseeval.consume.taskmap`
(ARC and HellaSwag `acc_norm` as the Open LLM Leaderboard did, GSM8K `exact_match`
then `acc`, MMLU, TruthfulQA MC1 and Winogrande `acc`; other tasks the first of
`taskmap.DEFAULT_METRICS` the file has); one file never mixes metrics. With several
filters (GSM8K: `strict-match` and `flexible-extract`) `strict-match` is used (then
`none`) unless you pass `filter`.

`SampleParser` is the one line-level reader of samples files: this module's reader
raises LmEvalError on the first bad line; the results store (`sparseeval.pipeline.store`)
uses the same parser and quarantines bad lines with the parser's reason, and records
the metric it read per task (the ingest run's message). Files are UTF-8 text (a BOM
is fine); any other encoding is an error naming the file and line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath
from typing import NamedTuple, TypeVar

from sparseeval.consume.taskmap import BENCHMARK_TASKS, mmlu_subject, task_metrics

_TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
SAMPLES_FILE = re.compile(rf"^samples_(?P<task>.+)_(?P<ts>{_TIMESTAMP})\.jsonl$")
RESULTS_FILE = re.compile(rf"^results_(?P<ts>{_TIMESTAMP})\.json$")
FILTER_PREFERENCE = ("strict-match", "none")

# The field of an exported lm-eval task's docs that carries the anchor item id.
ITEM_FIELD = "sparseeval_item"


class LmEvalError(ValueError):
    """lm-eval files or anchor ids that cannot be mapped or read."""


# --------------------------------------------------------------------------- mapping


def doc_id(value: object) -> int:
    """A doc id as an int: a non-negative int or a string of ASCII digits, nothing else.

    914.4, "914.4", 914.0, True and -1 raise ValueError: a doc id is never rounded.
    """
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"doc_id {value!r} is not a non-negative integer")


def item_source(
    item: str,
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    task: str | None = None,
) -> tuple[str, int]:
    """The lm-eval (task, doc_id) of one anchor item id (rules in the module docstring)."""
    item = str(item)
    if item_sources and item in item_sources:
        src = item_sources[item]
        t, d = (src["task"], src["doc_id"]) if isinstance(src, Mapping) else src
        try:
            return str(t), doc_id(d)
        except ValueError as exc:
            raise LmEvalError(f"anchor {item!r}: item_sources {exc}") from None
    if ":" in item:
        prefix, _, doc = item.rpartition(":")
        if doc.strip().lstrip("-").isascii() and doc.strip().lstrip("-").isdigit():
            subject = mmlu_subject(prefix)
            if subject is not None:
                return f"mmlu_{subject}", int(doc)
            return prefix, int(doc)
    if item.strip().isascii() and item.strip().isdigit():
        default = task or BENCHMARK_TASKS.get((benchmark or "").lower())
        if default:
            return default, int(item)
        raise LmEvalError(
            f"anchor {item!r} is a bare doc id but benchmark {benchmark!r} has no default "
            "lm-eval task; pass --task (or item_sources when publishing)"
        )
    raise LmEvalError(
        f"cannot map anchor {item!r} to an lm-eval task and doc id; expected 'doc_id', "
        "'task:doc_id' or 'subject:index', or an explicit item_sources map in the manifest"
    )


def export_samples(
    items: Iterable[str],
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    task: str | None = None,
) -> dict[str, list[int]]:
    """{task: sorted doc ids} for `lm-eval run --samples` covering every anchor."""
    items = [str(i) for i in items]
    out: dict[str, set[int]] = {}
    errors = []
    for item in items:
        try:
            t, d = item_source(item, benchmark, item_sources, task)
        except LmEvalError as e:
            errors.append(str(e))
            continue
        if d < 0:  # `task:-3`
            errors.append(f"anchor {item!r} has a negative doc id")
            continue
        out.setdefault(t, set()).add(d)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        synthetic = all(i.startswith("item-") for i in items)
        hint = (
            "; these are the built-in synthetic leaderboard's ids, not lm-eval doc ids: publish"
            " sets from real results (leaderboard details or lm-eval output) to export them"
            if synthetic
            else ""
        )
        raise LmEvalError(errors[0] + more + hint)
    return {t: sorted(ds) for t, ds in sorted(out.items())}


def merge_samples(*mappings: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """Union of several {task: doc ids} (one lm-eval run for several benchmarks)."""
    out: dict[str, set[int]] = {}
    for m in mappings:
        for t, ds in m.items():
            try:
                out.setdefault(t, set()).update(doc_id(d) for d in ds)
            except ValueError as exc:
                raise LmEvalError(f"task {t!r}: {exc}") from None
    return {t: sorted(ds) for t, ds in sorted(out.items())}


def write_samples_json(mapping: Mapping[str, list[int]], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({t: list(ds) for t, ds in mapping.items()}, indent=1) + "\n")
    return path


# --------------------------------------------------------------------------- reading

P = TypeVar("P", str, Path)


def samples_task(name: str | Path) -> tuple[str, str] | None:
    """(task, timestamp) of a `samples_{task}_{timestamp}.jsonl` file name or path."""
    base = name.name if isinstance(name, PurePath) else name.rsplit("/", 1)[-1]
    m = SAMPLES_FILE.match(base)
    return (m.group("task"), m.group("ts")) if m else None


def newest_samples(paths: Iterable[P]) -> dict[str, P]:
    """{task: its newest samples file} among `paths` (names that do not match are left out)."""
    newest: dict[str, tuple[str, P]] = {}
    for p in paths:
        found = samples_task(p)
        if found is not None:
            task, ts = found
            if task not in newest or ts > newest[task][0]:
                newest[task] = (ts, p)
    return {task: p for task, (_, p) in newest.items()}


def is_samples_file(path: str | Path) -> bool:
    """True for an lm-eval `samples_{task}_{timestamp}.jsonl` file (by name or content)."""
    p = Path(path)
    if samples_task(p) is not None:
        return True
    if p.suffix != ".jsonl" or not p.is_file():
        return False
    with open(p, encoding="utf-8-sig", errors="replace") as f:  # a sniff: the reader is strict
        first = f.readline()
    try:
        rec = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(rec, dict) and "doc_id" in rec and ("metrics" in rec or "filter" in rec)


def find_samples_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand folders to their samples_*.jsonl files; keep the newest file per task."""
    paths = list(paths)
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.rglob("samples_*.jsonl"))
        elif p.is_file():
            files.append(p)
        else:
            raise LmEvalError(f"{p}: no such file or folder")
    loose = [f for f in files if samples_task(f) is None]
    found = list(newest_samples(files).values()) + loose
    if not found:
        raise LmEvalError(f"no lm-eval samples_*.jsonl files in {', '.join(map(str, paths))}")
    return found


def json_lines(path, error: type[Exception] = ValueError):
    """(line number, parsed value) of each non-blank line; a bad line raises `error` naming it.

    Lines are UTF-8 (a BOM before the first is dropped); other bytes raise `error` too.
    """
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as e:
                byte = raw[e.start]
                raise error(
                    f"{path}:{n}: not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as e:
                raise error(f"{path}:{n}: not valid JSON ({e.msg})") from None


class Sample(NamedTuple):
    """One line of a samples file: doc index, 0/1 result and lm-eval filter."""

    doc_id: int
    value: int
    filter: str


class BadSample(ValueError):
    """A samples line that cannot be read; the message is the reason (no file or line)."""


class MissingMetric(BadSample):
    """A samples line without any of the metrics asked for."""


class SampleParser:
    """The one line-level reader of lm-eval samples, for one file.

    The metric is the first of `metrics` a line has; the first good line fixes it for the
    rest of the file (a file never mixes metrics). A record without `filter` is filter
    `none`. Raises BadSample with the reason; callers add the file and line.
    """

    def __init__(self, metrics: Iterable[str]) -> None:
        self.metrics = tuple(metrics)

    def line(self, text: str) -> Sample:
        """A JSON text line (lines that are not JSON are bad)."""
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadSample(f"malformed JSON line: {exc.msg}") from None
        return self.record(rec)

    def record(self, rec: object) -> Sample:
        """An already parsed JSON line."""
        if not isinstance(rec, dict) or "doc_id" not in rec:
            raise BadSample("no doc_id (not an lm-eval sample)")
        try:
            doc = doc_id(rec["doc_id"])
        except ValueError as exc:
            raise BadSample(str(exc)) from None
        name = next((m for m in self.metrics if m in rec), None)
        if name is None:
            has = rec.get("metrics") or sorted(rec)
            raise MissingMetric(f"no binary metric {' / '.join(self.metrics)} in sample ({has!r})")
        self.metrics = (name,)
        value = rec[name]
        if isinstance(value, bool) or (isinstance(value, int | float) and value in (0, 1)):
            return Sample(doc, int(value), str(rec.get("filter") or "none"))
        raise BadSample(f"{name} is {value!r}, not a 0/1 result")


def choose_filter(filters: Iterable[str], wanted: str | None = None) -> str | None:
    """The filter to read: `wanted` if given, else strict-match, none, or the first seen.

    None when there are no filters; LmEvalError when `wanted` is not among them.
    """
    have = list(dict.fromkeys(filters))
    if wanted is not None:
        if wanted not in have:
            raise LmEvalError(f"no filter {wanted!r} (have {', '.join(map(repr, have))})")
        return wanted
    return next((f for f in FILTER_PREFERENCE if f in have), have[0] if have else None)


def read_samples_file(
    path: str | Path,
    *,
    metric: str | None = None,
    filter: str | None = None,
    task: str | None = None,
) -> tuple[str, dict[int, int]]:
    """(task, {doc_id: 0/1}) from one lm-eval samples jsonl file; any bad line is an error."""
    path = Path(path)
    named = samples_task(path)
    task = task or (named[0] if named else None)
    if task is None:
        raise LmEvalError(
            f"{path}: cannot tell the task from the file name (expected "
            "samples_{task}_{timestamp}.jsonl); pass the task explicitly"
        )
    parser = SampleParser((metric,) if metric else task_metrics(task))
    samples: list[tuple[int, Sample]] = []
    for n, rec in json_lines(path, LmEvalError):
        try:
            samples.append((n, parser.record(rec)))
        except BadSample as exc:
            hint = "; pass --metric" if isinstance(exc, MissingMetric) and not metric else ""
            raise LmEvalError(f"{path}:{n}: {exc}{hint}") from None
    if not samples:
        raise LmEvalError(f"{path}: empty samples file")
    try:
        chosen = choose_filter((s.filter for _, s in samples), filter)
    except LmEvalError as exc:
        raise LmEvalError(f"{path}: {exc}") from None
    out: dict[int, int] = {}
    for n, s in samples:
        if s.filter != chosen:
            continue
        if out.get(s.doc_id, s.value) != s.value:
            raise LmEvalError(f"{path}:{n}: doc {s.doc_id} appears twice with different results")
        out[s.doc_id] = s.value
    return task, out


def generated_task_items(path: str | Path) -> dict[int, str]:
    """{doc_id: anchor item} of a samples file of a task `export-lm-eval --tasks-dir` wrote.

    Such a task keeps only the anchors (lm-eval numbers them 0..k-1) and each doc carries
    its anchor item id (`ITEM_FIELD`); empty for any other samples file.
    """
    out: dict[int, str] = {}
    for _, rec in json_lines(path, LmEvalError):
        doc = rec.get("doc") if isinstance(rec, dict) else None
        if not isinstance(doc, dict) or ITEM_FIELD not in doc:
            return {}
        out[int(rec["doc_id"])] = str(doc[ITEM_FIELD])
    return out


def read_responses(
    paths: Iterable[str | Path],
    *,
    items: Iterable[str] | None = None,
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    metric: str | None = None,
    filter: str | None = None,
    task: str | None = None,
) -> dict[str, int]:
    """{item id: 0/1} from lm-eval samples files (or folders holding them).

    With `items` (an anchor set's items) docs are mapped back to those ids and
    docs that are not anchors are ignored; without, ids are `task:doc_id`.
    """
    inverse = None
    if items is not None:
        inverse = {item_source(i, benchmark, item_sources, task): i for i in items}
    out: dict[str, int] = {}
    for f in find_samples_files(paths):
        named = samples_task(f) is not None
        t, docs = read_samples_file(f, metric=metric, filter=filter, task=None if named else task)
        generated = generated_task_items(f)
        for doc, value in docs.items():
            if generated:
                out[generated[doc]] = value
            elif inverse is None:
                out[f"{t}:{doc}"] = value
            elif (t, doc) in inverse:
                out[inverse[(t, doc)]] = value
    return out


__all__ = [
    "BadSample",
    "LmEvalError",
    "Sample",
    "SampleParser",
    "choose_filter",
    "doc_id",
    "export_samples",
    "find_samples_files",
    "generated_task_items",
    "is_samples_file",
    "item_source",
    "merge_samples",
    "newest_samples",
    "read_responses",
    "read_samples_file",
    "samples_task",
    "write_samples_json",
]
