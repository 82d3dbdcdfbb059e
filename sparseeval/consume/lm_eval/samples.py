"""Reading lm-eval `--log_samples` output: file names, the one line parser, whole files.

`SampleParser` is the one line-level reader of samples files: `read_samples_file` raises
LmEvalError on the first bad line; the results store (`sparseeval.pipeline.store`) uses the
same parser and quarantines bad lines with the parser's reason. Files are UTF-8 text (a BOM
is fine); any other encoding is an error naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import NamedTuple, TypeVar

from sparseeval.consume.answers.jsontext import JsonTextError, loads, repeated_keys, short_repr
from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.lm_eval.ids import HASH_FIELD, ITEM_FIELD, LmEvalError, doc_hash, doc_id
from sparseeval.consume.lm_eval.taskmap import task_metrics

_TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
SAMPLES_FILE = re.compile(rf"^samples_(?P<task>.+)_(?P<ts>{_TIMESTAMP})\.jsonl$")
RESULTS_FILE = re.compile(rf"^results_(?P<ts>{_TIMESTAMP})\.json$")
FILTER_PREFERENCE = ("strict-match", "none")

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
        rec = loads(first)
    except JsonTextError:
        return False
    return isinstance(rec, dict) and "doc_id" in rec and ("metrics" in rec or "filter" in rec)


def find_samples_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand folders to their samples_*.jsonl files; keep the newest file per task."""
    paths = list(paths)
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.rglob("samples_*.jsonl"))
            pipe = next((f for f in found if not f.is_file()), None)
            if pipe is not None:  # reading it would wait for a writer forever
                raise LmEvalError(f"{pipe}: not a regular file (a pipe or device?)")
            files += found
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
                yield n, loads(line)
            except JsonTextError as e:
                raise error(f"{path}:{n}: not valid JSON ({e})") from None


class Sample(NamedTuple):
    """One line of a samples file: doc index, 0/1 result and lm-eval filter."""

    doc_id: int
    value: int
    filter: str
    doc_hash: str | None = None  # lm-eval's hash of the doc, when the line has one


class BadSample(SparseEvalError, ValueError):
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
            rec = loads(text)
        except JsonTextError as exc:
            raise BadSample(f"malformed JSON line: {exc}") from None
        return self.record(rec)

    def record(self, rec: object) -> Sample:
        """An already parsed JSON line (from `jsontext.loads`: repeated keys are refused)."""
        if not isinstance(rec, dict):
            raise BadSample(f"not a JSON object ({type(rec).__name__}), not an lm-eval sample")
        if "doc_id" not in rec:
            raise BadSample("no doc_id (not an lm-eval sample)")
        if repeated := repeated_keys(rec):
            raise BadSample(f"repeated key(s) {', '.join(map(short_repr, repeated))} in sample")
        try:
            doc = doc_id(rec["doc_id"])
        except ValueError as exc:
            raise BadSample(str(exc)) from None
        name = next((m for m in self.metrics if m in rec), None)
        if name is None:
            has = short_repr(rec.get("metrics") or sorted(rec), 200)
            raise MissingMetric(f"no binary metric {' / '.join(self.metrics)} in sample ({has})")
        self.metrics = (name,)
        value, filt = rec[name], rec.get("filter") or "none"
        if not isinstance(filt, str):
            raise BadSample(f"filter is {short_repr(filt)}, not a string")
        if isinstance(value, bool) or (isinstance(value, int | float) and value in (0, 1)):
            doc_hash = rec.get("doc_hash")
            return Sample(doc, int(value), filt, doc_hash if isinstance(doc_hash, str) else None)
        raise BadSample(f"{name} is {short_repr(value)}, not a 0/1 result")


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
    hashes: dict[int, str] | None = None,
) -> tuple[str, dict[int, int]]:
    """(task, {doc_id: 0/1}) from one lm-eval samples jsonl file; any bad line is an error.

    hashes: filled with {doc_id: doc_hash} of the lines read that carry one."""
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
        if hashes is not None and s.doc_hash:
            hashes[s.doc_id] = s.doc_hash
    return task, out


class GeneratedDoc(NamedTuple):
    """A doc of a generated task's samples: its anchor item and the original's doc_hash."""

    item: str
    doc_hash: str | None  # the original task's `doc_hash` of it (None: an older task)


def generated_task_items(path: str | Path) -> dict[int, GeneratedDoc]:
    """{doc_id: its anchor} of a samples file of a task `export-lm-eval --tasks-dir` wrote.

    Such a task keeps only the anchors (lm-eval numbers them 0..k-1) and each doc carries
    its anchor item id (`ITEM_FIELD`) and the original task's doc_hash of it (`HASH_FIELD`);
    a line whose own `doc_hash` is not lm-eval's hash of its doc (the doc, so the item or
    the hash it carries, was edited after lm-eval wrote it) is an LmEvalError naming the
    file, line and item. Empty for any other samples file.
    """
    out: dict[int, GeneratedDoc] = {}
    for n, rec in json_lines(path, LmEvalError):
        doc = rec.get("doc") if isinstance(rec, dict) else None
        if not isinstance(doc, dict) or ITEM_FIELD not in doc:
            return {}
        try:
            out[doc_id(rec.get("doc_id"))] = _generated_doc(rec, doc)
        except ValueError as exc:
            raise LmEvalError(f"{path}:{n}: {exc}") from None
    return out


def _generated_doc(rec: dict, doc: dict) -> GeneratedDoc:
    """One generated doc, checked against the line's doc_hash (ValueError: the reason)."""
    item, carried, logged = str(doc[ITEM_FIELD]), doc.get(HASH_FIELD), rec.get("doc_hash")
    if carried is not None and not isinstance(carried, str):
        raise ValueError(f"anchor {item}: {HASH_FIELD} is {short_repr(carried)}, not a hash")
    if isinstance(logged, str) and logged != doc_hash(doc):
        raise ValueError(
            f"anchor {item}: the doc is not the one lm-eval ran (its doc_hash does not match"
            " it): the samples file was edited; run lm-eval again"
        )
    return GeneratedDoc(item, carried)


__all__ = [
    "FILTER_PREFERENCE",
    "RESULTS_FILE",
    "SAMPLES_FILE",
    "BadSample",
    "GeneratedDoc",
    "MissingMetric",
    "P",
    "Sample",
    "SampleParser",
    "choose_filter",
    "find_samples_files",
    "generated_task_items",
    "is_samples_file",
    "json_lines",
    "newest_samples",
    "read_samples_file",
    "samples_task",
]
