"""The source kinds: one table from a spec's prefix to the source it names.

A spec is `PREFIX:BODY` (`wide:arc=a.csv`, `hub:v1:*`), a bare prefix where the kind
allows it (`synthetic`), or a plain path (a long table, a wide table, an lm-eval folder:
`FILE_FORMATS`). A new source kind is one new module with its source class (`units(store)`
yielding `unit.Unit`s, and a `from_spec(body, options)` parser) plus one line in
`SOURCE_KINDS` below (or `register(SourceKind(...))` from outside the package).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sparseeval.pipeline.store.eee import EeeRecords
from sparseeval.pipeline.store.helm import HelmRuns
from sparseeval.pipeline.store.hub import OpenLLMLeaderboard
from sparseeval.pipeline.store.ingestion import Source
from sparseeval.pipeline.store.inspect_logs import InspectLogs, is_inspect_log, log_files
from sparseeval.pipeline.store.lm_eval_run import LmEvalRun
from sparseeval.pipeline.store.score_files import ScoresFile, looks_like_scores
from sparseeval.pipeline.store.synthetic import SyntheticLeaderboard
from sparseeval.pipeline.store.tables import LongTable, WideTable
from sparseeval.pipeline.store.unit import SourceError, SpecOptions
from sparseeval.pipeline.store.watched import Inbox, LmEvalGlob


@dataclass(frozen=True)
class SourceKind:
    """One kind of source spec: `prefix:BODY` -> `parse(BODY, options)`.

    `usage` shows the spec in help and error messages; `bare`: the prefix alone is a spec
    too (parsed with an empty body).
    """

    prefix: str
    parse: Callable[[str, SpecOptions], Source]
    usage: str
    bare: bool = False


SOURCE_KINDS: dict[str, SourceKind] = {
    kind.prefix: kind
    for kind in [
        SourceKind("synthetic", SyntheticLeaderboard.from_spec, "synthetic[:OPTIONS]", bare=True),
        SourceKind("hub", OpenLLMLeaderboard.from_source_spec, "hub:ORG/MODEL | hub:v1:GLOB"),
        SourceKind("wide", WideTable.from_spec, "wide:BENCHMARK=file.csv"),
        SourceKind("lm-eval", LmEvalGlob.from_spec, "lm-eval:GLOB"),
        SourceKind("inbox", Inbox.from_spec, "inbox:DIR"),
        SourceKind("scores", ScoresFile.from_spec, "scores:FILE.csv"),
        SourceKind("inspect", InspectLogs.from_spec, "inspect:LOG.eval|LOGDIR"),
        SourceKind("eee", EeeRecords.from_spec, "eee:DATASTORE_DIR|UUID_samples.jsonl"),
        SourceKind("helm", HelmRuns.from_spec, "helm:RELEASE_DIR|RUN_DIR"),
    ]
}

# A plain path's format -> its source (`auto` guesses by suffix and CSV header).
FILE_FORMATS: dict[str, Callable[[Path, SpecOptions], Source]] = {
    "long": lambda path, options: LongTable(path),
    "wide": lambda path, options: WideTable(path, _benchmark_of(path, options)),
    "lm-eval": lambda path, options: LmEvalRun(path, options.model),
    "inspect": lambda path, options: InspectLogs(path, options.model, options.benchmark, 0),
}
FORMATS = ("auto", *FILE_FORMATS)
# What looks like a prefix: a word of two or more characters before a colon (`C:` is a drive).
_PREFIX = re.compile(r"([A-Za-z][\w-]+):")


def register(kind: SourceKind) -> SourceKind:
    """Add a source kind (its prefix must be new); returns it."""
    if kind.prefix in SOURCE_KINDS:
        raise ValueError(f"source kind {kind.prefix!r} is already registered")
    SOURCE_KINDS[kind.prefix] = kind
    return kind


def usage() -> str:
    """The spec forms, for messages: `synthetic[:OPTIONS], hub:..., ..., or a file or folder`."""
    kinds = ", ".join(k.usage for k in SOURCE_KINDS.values())
    return f"{kinds}; or a .csv/.parquet table or an lm-eval folder"


def source_from_spec(spec: str, options: SpecOptions | None = None) -> Source:
    """The source a spec names (see the module docstring); ValueError for a bad spec."""
    options = options or SpecOptions()
    spec = str(spec).strip()
    prefix, colon, body = spec.partition(":")
    kind = SOURCE_KINDS.get(prefix)
    if kind is not None and (colon or kind.bare):
        return kind.parse(body, options)
    if (m := _PREFIX.match(spec)) and not Path(spec).exists():
        raise SourceError(
            f"unknown source kind {m.group(1)!r} in {spec!r} (one of: {', '.join(SOURCE_KINDS)};"
            f" specs: {usage()})"
        )
    return _file_source(Path(spec), options)


def _file_source(path: Path, options: SpecOptions) -> Source:
    if path.exists() and not (path.is_file() or path.is_dir()):
        raise SourceError(f"{path} is not a regular file or folder (a pipe or device?)")
    fmt = _guess_format(path) if options.fmt == "auto" else options.fmt
    if fmt not in FILE_FORMATS:
        raise SourceError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return FILE_FORMATS[fmt](path, options)


def _benchmark_of(path: Path, options: SpecOptions) -> str:
    if not options.benchmark:
        raise SourceError(f"{path} is a wide table (model + item columns); name its benchmark"
                         " (--benchmark NAME, or wide:NAME=file.csv)")  # fmt: skip
    return options.benchmark


def _guess_format(path: Path) -> str:
    """lm-eval for folders and results JSON, long for Parquet, wide or long by a CSV header."""
    if is_inspect_log(path):
        return "inspect"
    if path.is_dir():
        if not _has_lm_eval_output(path) and any(map(is_inspect_log, log_files(path))):
            return "inspect"
        if not _has_lm_eval_output(path):
            raise SourceError(
                f"{path} is a folder without lm-eval output (results_*.json, samples_*.jsonl);"
                f" to watch it for new tables use inbox:{path} ({usage()})"
            )
        return "lm-eval"
    if path.name.startswith("results_") or path.suffix == ".json":
        return "lm-eval"
    if path.suffix.lower() in {".parquet", ".pq"}:
        return "long"
    if path.suffix.lower() != ".csv":
        raise SourceError(f"cannot tell what source {str(path)!r} is ({usage()})")
    if not path.is_file():
        return "long"  # the reader names the missing file
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
            header = {c.strip() for c in next(csv.reader(f), [])}
    except csv.Error as exc:  # e.g. a column name past the csv module's field limit
        raise SourceError(f"{path}: line 1: not a CSV header ({exc})") from None
    if looks_like_scores(header):
        raise SourceError(
            f"{path} looks like a table of reported scores (model/name and benchmark columns),"
            f" not per-item results: ingest it as scores:{path}"
        )
    return "wide" if "model" in header and not {"benchmark", "item"} & header else "long"


def _has_lm_eval_output(folder: Path, limit: int = 10_000) -> bool:
    """Whether a folder (or one below it) holds lm-eval results or samples files."""
    for i, p in enumerate(folder.rglob("*")):
        if i >= limit:
            return False
        if p.name.startswith(("results_", "samples_")) and p.suffix in {".json", ".jsonl"}:
            return True
    return False


__all__ = [
    "FILE_FORMATS",
    "FORMATS",
    "SOURCE_KINDS",
    "SourceKind",
    "register",
    "source_from_spec",
    "usage",
]
