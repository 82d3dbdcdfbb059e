"""lm-evaluation-harness output written with `--log_samples`, as a store source.

Each `results_{ts}.json` with its `samples_{task}_{ts}.jsonl` files is one unit. Lines are
read by the consumer's `SampleParser` (one reader of samples lines for both); the lines it
rejects are quarantined with its reason, and the metric read per task becomes the ingest
run's message.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.identity import DOC_HASH, LM_EVAL_DOC
from sparseeval.consume.answers.jsontext import JsonTextError, loads
from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.consume.lm_eval.samples import (
    RESULTS_FILE,
    BadSample,
    MissingMetric,
    SampleParser,
    choose_filter,
    samples_task,
)
from sparseeval.consume.lm_eval.taskmap import TaskMap, map_lm_eval_task
from sparseeval.pipeline.store.db import Store
from sparseeval.pipeline.store.item_identity import HASHED_SCHEMA, ITEM_HASH_FRAME, stage_hashes
from sparseeval.pipeline.store.scores import SCORE_FRAME, results_scores, stage_scores
from sparseeval.pipeline.store.tables import SAVE_AS_UTF8, not_utf8
from sparseeval.pipeline.store.unit import (
    BAD_SCHEMA,
    SourceError,
    Unit,
    conform,
    existing,
    no_stage,
    stage_frames,
)


@dataclass
class LmEvalRun:
    """lm-evaluation-harness output written with `--log_samples` (a folder or a results JSON).

    Each `results_{ts}.json` with its `samples_{task}_{ts}.jsonl` files is one unit; the
    model is the results file's `model_name` (or `pretrained=` in its model_args) unless
    `model` is given.
    """

    path: Path
    model: str | None = None

    def units(self, store: Store) -> Iterator[Unit]:
        path = existing(self.path)
        results = [path] if path.is_file() else sorted(path.rglob("results_*.json"))
        if not results:
            raise SourceError(f"{path}: no lm-eval results_*.json found (run with --log_samples)")
        for res in results:
            yield _lm_eval_unit(res, self.model)


def _lm_eval_unit(results: Path, model: str | None) -> Unit:
    m = RESULTS_FILE.match(results.name)
    ts = m.group("ts") if m else None
    if not results.is_file():
        raise SourceError(f"{results}: not a regular file (a pipe or device?)")
    name = model or _lm_eval_model(results)
    samples = sorted(
        p for p in results.parent.glob("samples_*.jsonl")
        if (found := samples_task(p)) and (ts is None or found[1] == ts)
    )  # fmt: skip
    if not samples:
        raise SourceError(f"{results}: no samples_*.jsonl beside it (run with --log_samples)")
    files = [*samples, results]
    pipe = next((p for p in files if not p.is_file()), None)
    if pipe is not None:  # reading it would wait for a writer forever
        raise SourceError(f"{pipe}: not a regular file (a pipe or device?)")
    key = fingerprint("lm-eval", name, *(f"{p.name}:{file_sha256(p)}" for p in files))
    refs = [str(p) for p in files]  # the results JSON last: its ref is the scores' provenance
    unit = Unit("lm-eval", str(results), key, refs, no_stage,
                frames=(SCORE_FRAME, ITEM_HASH_FRAME), id_kind=LM_EVAL_DOC)  # fmt: skip
    unit.stage = partial(_stage_samples, samples, name, unit, results)
    return unit


def _results_json(results: Path) -> dict:
    """The results file's JSON object; a SourceError naming the file otherwise."""
    try:
        data = loads(results.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise not_utf8(results) from None
    except (OSError, JsonTextError) as exc:
        raise SourceError(f"{results}: not a JSON results file ({exc})") from None
    if not isinstance(data, dict):
        raise SourceError(f"{results}: not an lm-eval results file (not a JSON object)")
    return data


def _lm_eval_model(results: Path) -> str:
    data = _results_json(results)
    name = data.get("model_name") or ""
    if not isinstance(name, str):
        raise SourceError(f"{results}: model_name is not a string; pass the model name")
    if not name:
        config = data.get("config")
        args = str(config.get("model_args", "")) if isinstance(config, dict) else ""
        found = re.search(r"pretrained=([^,]+)", args)
        name = found.group(1) if found else ""
    if not name:
        raise SourceError(f"{results}: no model_name or pretrained= in it; pass the model name")
    return name


def _stage_samples(
    paths: list[Path], model: str, unit: Unit, results: Path, con: duckdb.DuckDBPyConnection
) -> None:
    rows, bad = [], []
    unit.read_with.clear()
    for ref_no, path in enumerate(paths):
        task, _ = samples_task(path)  # type: ignore[misc]
        good, rejected = read_samples(
            path, map_lm_eval_task(task), model, ref_no, read_with=unit.read_with
        )
        rows.append(good)
        bad.append(rejected)
    good = pl.concat(rows)
    stage_hashes(con, good)
    stage_frames(con, good, pl.concat(bad))
    tasks = [samples_task(p)[0] for p in paths]  # type: ignore[index]
    stage_scores(con, results_scores(_results_json(results), tasks, model, len(paths)))


def read_samples(
    path: Path, task: TaskMap, model: str, ref_no: int = 0, read_with: dict | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows of one `samples_*.jsonl` file (staging layout) and its unreadable lines.

    Lines are read by `sparseeval.consume.lm_eval.samples.SampleParser`; the ones it rejects
    are returned with its reason (a doc id that is not a non-negative integer, 914.4 or 914.0
    or "x", is one), and only the preferred filter's samples are kept (see `choose_filter`).
    `read_with`, when given, gets {task: the metric read} (`acc_norm`, `exact_match (filter
    strict-match)`, or `none (no acc_norm in any sample; 2 quarantined)`), so no metric is
    chosen silently. A file that is not UTF-8 text is a SourceError naming the line.
    """
    parser = SampleParser(task.metrics)
    good, bad, n_missing = _parse_lines(path, parser, task)
    frame = pl.DataFrame(
        good, schema_overrides={"ord": pl.Int64, "filter": pl.String, "hash": pl.String}
    )
    keep = choose_filter(frame["filter"].to_list())
    frame = frame.filter(pl.col("filter") == (keep or "")).drop("filter")
    if read_with is not None:
        named = samples_task(path)
        used = _metric_read(parser, task, keep, frame.height, n_missing)
        read_with[named[0] if named else path.name] = used
    frame = frame.with_columns(
        model=pl.lit(model), benchmark=pl.lit(task.benchmark), ref_no=pl.lit(ref_no)
    )
    bad_frame = pl.DataFrame(bad).with_columns(ref_no=pl.lit(ref_no))
    return conform(frame, HASHED_SCHEMA), conform(bad_frame, BAD_SCHEMA)


def _parse_lines(
    path: Path, parser: SampleParser, task: TaskMap
) -> tuple[dict[str, list], dict[str, list], int]:
    """(good columns, rejected lines with their reason, lines missing the metric) of a file."""
    good: dict[str, list] = {k: [] for k in ("item", "correct", "ord", "line", "filter", "hash")}
    bad: dict[str, list] = {"line": [], "raw": [], "reason": []}
    n_missing = 0
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                why = f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); {SAVE_AS_UTF8}"
                raise SourceError(f"{path}: line {n}: {why}") from None
            if not text.strip():
                continue
            try:
                sample = parser.line(text)
            except BadSample as exc:
                n_missing += isinstance(exc, MissingMetric)
                bad["line"].append(n)
                bad["raw"].append(text.rstrip("\n")[:2000])
                bad["reason"].append(str(exc))
                continue
            good["item"].append(task.item(sample.doc_id))
            good["correct"].append(str(sample.value))
            good["ord"].append(sample.doc_id if task.subject is None else None)
            good["line"].append(n)
            good["filter"].append(sample.filter)
            good["hash"].append(f"{DOC_HASH}:{sample.doc_hash}" if sample.doc_hash else None)
    return good, bad, n_missing


def _metric_read(
    parser: SampleParser, task: TaskMap, keep: str | None, n_rows: int, n_missing: int
) -> str:
    """What a file was read with: `acc_norm`, `exact_match (filter strict-match)`, or none."""
    if n_rows:
        return parser.metrics[0] + ("" if keep in (None, "none") else f" (filter {keep})")
    if n_missing:
        return f"none (no {' / '.join(task.metrics)} in any sample; {n_missing:,} quarantined)"
    return "none (no sample read)"


__all__ = [
    "LmEvalRun",
    "read_samples",
]
