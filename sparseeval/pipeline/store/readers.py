"""File sources: long tables (CSV/Parquet), wide CSV tables, lm-eval `--log_samples` output.

Watched sources, which the nightly job reads again every night, take only what is complete
and new: `Inbox` (a folder people drop tables into) and `LmEvalGlob` (every lm-eval output
folder matching a glob). A file or run folder changed within `SETTLE_SECONDS` is still being
written: it is a skipped unit tonight and read on a later night. Content read before is
skipped by its fingerprint (an unchanged file costs its hashing), and a file that cannot be
read is one failed unit: the other files still land.
"""

from __future__ import annotations

import csv
import glob
import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.consume.lm_eval import (
    RESULTS_FILE,
    BadSample,
    MissingMetric,
    SampleParser,
    choose_filter,
    samples_task,
)
from sparseeval.consume.taskmap import TaskMap, map_lm_eval_task
from sparseeval.pipeline.store.db import Store, execute, fetch, relation
from sparseeval.pipeline.store.unit import (
    BAD_SCHEMA,
    SRC_SCHEMA,
    SourceError,
    Unit,
    _printable,
    conform,
    stage_frames,
    stage_no_bad,
)

LONG_COLUMNS = ("model", "benchmark", "item", "correct")
LONG_SUFFIXES = (".csv", ".parquet", ".pq")
# A watched file or run folder changed less than this many seconds ago is still being written.
SETTLE_SECONDS = 60.0
# Columns that carry each CSV row's number and file line through staging (sql/stage_csv.sql,
# sql/csv_lines.sql) start with this; a file's own column may not.
RESERVED_PREFIX = "sparseeval$"
SAVE_AS_UTF8 = "save the file as UTF-8"


@dataclass
class LongTable:
    """A CSV or Parquet file with columns model, benchmark, item, correct."""

    path: Path
    format: str | None = None

    def units(self, store: Store) -> Iterator[Unit]:
        path = _existing(self.path)
        fmt = self.format or ("parquet" if path.suffix.lower() in {".parquet", ".pq"} else "csv")
        if fmt not in {"csv", "parquet"}:
            raise SourceError(f"{path}: unknown long-table format {fmt!r} (csv or parquet)")
        kind = f"long-{fmt}"
        stage = _stage_long_parquet if fmt == "parquet" else _stage_long_csv
        key = fingerprint(kind, file_sha256(path))
        yield Unit(kind, str(path), key, [str(path)], partial(stage, path))


@dataclass
class WideTable:
    """A CSV file with a `model` column and one column per item, for one benchmark."""

    path: Path
    benchmark: str

    def units(self, store: Store) -> Iterator[Unit]:
        path = _existing(self.path)
        key = fingerprint("wide-csv", self.benchmark, file_sha256(path))
        stage = partial(_stage_wide, path, self.benchmark)
        yield Unit("wide-csv", str(path), key, [str(path)], stage)


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
        path = _existing(self.path)
        results = [path] if path.is_file() else sorted(path.rglob("results_*.json"))
        if not results:
            raise SourceError(f"{path}: no lm-eval results_*.json found (run with --log_samples)")
        for res in results:
            yield _lm_eval_unit(res, self.model)


@dataclass
class Inbox:
    """A folder people drop tables into, read again every night.

    Long tables (`*.csv`, `*.parquet`: model, benchmark, item, correct) lie directly in the
    folder; wide tables (`model` + one column per item) in `{folder}/{benchmark}/*.csv`.
    Hidden files and other suffixes are ignored.
    """

    path: Path
    settle_seconds: float | None = None

    def units(self, store: Store) -> Iterator[Unit]:
        root = _existing(self.path)
        if not root.is_dir():
            raise SourceError(f"{root}: an inbox must be a folder")
        settle = SETTLE_SECONDS if self.settle_seconds is None else self.settle_seconds
        now = time.time()
        for path, benchmark in _inbox_files(root):
            kind = "wide-csv" if benchmark else "long-" + path.suffix.lower().lstrip(".")
            age = _age([path], now)
            if age < settle:
                yield _pending(kind, path, f"modified {age:.1f}s ago", settle)
            elif benchmark is None:
                yield from _guarded(kind, path, LongTable(path), store)
            elif path.suffix.lower() != ".csv":
                why = f"wide tables are CSV; put long tables directly in {root}"
                yield _failing(kind, path, SourceError(f"{path}: {why}"))
            else:
                yield from _guarded(kind, path, WideTable(path, benchmark), store)


@dataclass
class LmEvalGlob:
    """Every lm-eval output folder matching a glob (`runs/*/*`), read like `LmEvalRun`.

    A run folder is one holding `results_*.json` (or, while lm-eval is still running, only
    `samples_*.jsonl`); it is read only once its results JSON is there and none of its files
    changed within the settle time.
    """

    pattern: str
    model: str | None = None
    settle_seconds: float | None = None

    def units(self, store: Store) -> Iterator[Unit]:
        settle = SETTLE_SECONDS if self.settle_seconds is None else self.settle_seconds
        now = time.time()
        for folder in _run_folders(self.pattern):
            files = [p for p in folder.iterdir() if p.is_file()]
            results = sorted(p for p in files if _is_results(p))
            age = _age(files, now)
            if not results:
                yield _pending("lm-eval", folder, "no results_*.json yet", settle)
            elif age < settle:
                yield _pending("lm-eval", folder, f"a file changed {age:.1f}s ago", settle)
            else:
                for res in results:
                    yield from _guarded("lm-eval", res, LmEvalRun(res, self.model), store)


def _inbox_files(root: Path) -> list[tuple[Path, str | None]]:
    """(file, None) for long tables in `root`, (file, benchmark) in `root/{benchmark}/`."""
    found: list[tuple[Path, str | None]] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith((".", "~")):
            continue
        if entry.is_dir():
            found += [
                (f, entry.name) for f in sorted(entry.iterdir())
                if f.is_file() and not f.name.startswith((".", "~"))
                and f.suffix.lower() in LONG_SUFFIXES
            ]  # fmt: skip
        elif entry.is_file() and entry.suffix.lower() in LONG_SUFFIXES:
            found.append((entry, None))
    return found


def _run_folders(pattern: str) -> list[Path]:
    """Folders holding lm-eval results or samples, at or under the glob's matches."""
    matches = [Path(m) for m in sorted(glob.glob(pattern, recursive=True))]
    if not matches:
        base = Path(*(list(_until_magic(Path(pattern).parts)) or ["."]))
        if not base.is_dir():
            raise SourceError(f"{pattern}: no such folder {base}")
    folders: dict[Path, None] = {}
    for m in matches:
        if m.is_file() and (_is_results(m) or samples_task(m)):
            folders[m.parent] = None
        elif m.is_dir():
            inside = [*m.rglob("results_*.json"), *m.rglob("samples_*.jsonl")]
            folders.update(dict.fromkeys(sorted({p.parent for p in inside})))
    return list(folders)


def _is_results(path: Path) -> bool:
    return path.name.startswith("results_") and path.suffix == ".json"


def _until_magic(parts: Iterable[str]) -> Iterator[str]:
    for part in parts:
        if re.search(r"[*?[]", part):
            return
        yield part


def _age(paths: list[Path], now: float) -> float:
    """Seconds since the newest of `paths` changed (0 when one vanished meanwhile)."""
    try:
        return min((now - p.stat().st_mtime for p in paths), default=float("inf"))
    except OSError:
        return 0.0


def _pending(kind: str, path: Path, why: str, settle: float) -> Unit:
    """A skipped unit for something still being written (read on a later night)."""
    reason = f"still being written ({why}; read once unchanged for {settle:g}s)"
    key = fingerprint("pending", kind, str(path))
    return Unit(kind, str(path), key, [str(path)], _no_stage, skip=reason)


def _guarded(kind: str, path: Path, source, store: Store) -> Iterator[Unit]:
    """`source`'s units; an error while listing them becomes one failing unit."""
    try:
        units = list(source.units(store))
    except Exception as exc:  # a bad file is a failed unit, never the end of the folder
        yield _failing(kind, path, exc)
        return
    yield from units


def _failing(kind: str, path: Path, exc: Exception) -> Unit:
    """A unit whose staging raises `exc` (so that it is recorded as a failed run)."""
    message = _printable(str(exc) if isinstance(exc, SourceError) else f"{path}: {exc}")

    def stage(con: duckdb.DuckDBPyConnection) -> None:
        raise SourceError(message) from exc

    key = fingerprint("unreadable", kind, str(path), message)
    return Unit(kind, str(path), key, [str(path)], stage)


def _no_stage(con: duckdb.DuckDBPyConnection) -> None:
    raise RuntimeError("skipped unit has nothing to stage")


def _existing(path: Path | str) -> Path:
    path = Path(path)
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    return path


# -- CSV / Parquet staging ------------------------------------------------------------


def _stage_csv_raw(
    con: duckdb.DuckDBPyConnection, path: Path, required: tuple[str, ...]
) -> list[str]:
    """Parse `path` into the temp table `src_raw` and the view `src_raw_lines` (with each
    row's file line); rejected lines become `pre_bad`. A file that is not UTF-8 text (a
    UTF-8 BOM is fine) is refused whole, naming the line of its first bad byte."""
    header = _csv_header(path)
    missing = [c for c in required if c not in header]
    if missing:
        shown = ", ".join(header[:8]) + (" ..." if len(header) > 8 else "")
        raise SourceError(
            _printable(f"{path}: line 1: missing column(s) {', '.join(missing)} (has: {shown})")
        )
    seen: set[str] = set()
    repeated = [c for c in header if c in seen or seen.add(c)]
    if repeated:
        raise SourceError(
            _printable(f"{path}: line 1: repeated column(s) {', '.join(repeated[:5])}")
        )
    reserved = [c for c in header if c.startswith(RESERVED_PREFIX)]
    if reserved:
        raise SourceError(_printable(f"{path}: line 1: column name {reserved[0]} is reserved"))
    execute(con, "drop_csv_rejects", {})
    try:
        execute(con, "stage_csv", {"path": str(path), "cols": dict.fromkeys(header, "VARCHAR")})
    except duckdb.Error as exc:
        raise SourceError(
            _printable(f"{path}: not a readable CSV file: {_first_line(exc)}")
        ) from exc
    ((encoding_line,),) = fetch(con, "csv_encoding_reject", {})
    if encoding_line is not None:
        raise SourceError(f"{path}: line {encoding_line}: not UTF-8 text; {SAVE_AS_UTF8}")
    ((n_rows,),) = fetch(con, "count_src_raw", {})
    first_bad, n_bad, msg = fetch(con, "csv_first_reject", {})[0]
    if n_rows == 0 and n_bad:
        raise SourceError(_printable(f"{path}: line {first_bad}: cannot be parsed as CSV ({msg})"))
    execute(con, "stage_csv_bad", {})
    execute(con, "csv_lines" if n_bad else "csv_lines_plain", {})
    return header


def _stage_long_csv(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    _stage_csv_raw(con, path, LONG_COLUMNS)
    execute(con, "stage_long_csv", {})


def _stage_long_parquet(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    if path.stat().st_size == 0:
        raise SourceError(f"{path}: empty file")
    try:
        rel = relation(con, "read_parquet", {"path": str(path)})
    except duckdb.Error as exc:
        raise SourceError(f"{path}: not a Parquet file: {_first_line(exc)}") from exc
    missing = [c for c in LONG_COLUMNS if c not in rel.columns]
    if missing:
        raise SourceError(f"{path}: missing column(s) {', '.join(missing)}")
    rel.create_view("src_parquet", replace=True)
    execute(con, "stage_long_parquet", {})
    stage_no_bad(con)  # Parquet either reads or fails as a whole


def _stage_wide(path: Path, benchmark: str, con: duckdb.DuckDBPyConnection) -> None:
    header = _stage_csv_raw(con, path, ("model",))
    items = [c for c in header if c != "model"]
    con.register("wide_cols", pl.DataFrame({"item": items, "ord": range(len(items))}))
    execute(con, "stage_wide", {"benchmark": benchmark})


def _csv_header(path: Path) -> list[str]:
    """The column names of a CSV file's first line (a UTF-8 BOM before them is dropped)."""
    if path.stat().st_size == 0:
        raise SourceError(f"{path}: empty file")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            return [c.strip() for c in next(csv.reader(f))]
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    except (csv.Error, StopIteration) as exc:
        raise SourceError(_printable(f"{path}: line 1: not a CSV header ({exc})")) from exc


def not_utf8(path: Path) -> SourceError:
    """The error for a file that is not UTF-8 text, naming the line of its first bad byte.

    Lines are decoded one by one: a newline byte never occurs inside a UTF-8 sequence.
    """
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = raw[exc.start]
                return SourceError(
                    f"{path}: line {n}: not UTF-8 text (byte 0x{byte:02x}); {SAVE_AS_UTF8}"
                )
    return SourceError(f"{path}: not UTF-8 text; {SAVE_AS_UTF8}")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:200]


# -- lm-eval samples --------------------------------------------------------------------


def _lm_eval_unit(results: Path, model: str | None) -> Unit:
    m = RESULTS_FILE.match(results.name)
    ts = m.group("ts") if m else None
    name = model or _lm_eval_model(results)
    samples = sorted(
        p for p in results.parent.glob("samples_*.jsonl")
        if (found := samples_task(p)) and (ts is None or found[1] == ts)
    )  # fmt: skip
    if not samples:
        raise SourceError(f"{results}: no samples_*.jsonl beside it (run with --log_samples)")
    key = fingerprint("lm-eval", name, *(f"{p.name}:{file_sha256(p)}" for p in samples))
    refs = [str(p) for p in samples]
    unit = Unit("lm-eval", str(results), key, refs, _no_stage)
    unit.stage = partial(_stage_samples, samples, name, unit)
    return unit


def _lm_eval_model(results: Path) -> str:
    try:
        data = json.loads(results.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise not_utf8(results) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise SourceError(f"{results}: not a JSON results file ({exc})") from exc
    if not isinstance(data, dict):
        raise SourceError(f"{results}: not an lm-eval results file (not a JSON object)")
    name = data.get("model_name") or ""
    if not name:
        args = str(data.get("config", {}).get("model_args", ""))
        found = re.search(r"pretrained=([^,]+)", args)
        name = found.group(1) if found else ""
    if not name:
        raise SourceError(f"{results}: no model_name or pretrained= in it; pass the model name")
    return name


def _stage_samples(
    paths: list[Path], model: str, unit: Unit, con: duckdb.DuckDBPyConnection
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
    stage_frames(con, pl.concat(rows), pl.concat(bad))


def read_samples(
    path: Path, task: TaskMap, model: str, ref_no: int = 0, read_with: dict | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows of one `samples_*.jsonl` file (staging layout) and its unreadable lines.

    Lines are read by `sparseeval.consume.lm_eval.SampleParser`; the ones it rejects are returned
    with its reason (a doc id that is not a non-negative integer, 914.4 or 914.0 or "x",
    is one), and only the preferred filter's samples are kept (see `choose_filter`).
    `read_with`, when given, gets {task: the metric read} (`acc_norm`, `exact_match (filter
    strict-match)`, or `none (no acc_norm in any sample; 2 quarantined)`), so no metric is
    chosen silently. A file that is not UTF-8 text is a SourceError naming the line.
    """
    parser = SampleParser(task.metrics)
    good: dict[str, list] = {k: [] for k in ("item", "correct", "ord", "line", "filter")}
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
    frame = pl.DataFrame(good, schema_overrides={"ord": pl.Int64, "filter": pl.String})
    keep = choose_filter(frame["filter"].to_list())
    frame = frame.filter(pl.col("filter") == (keep or "")).drop("filter")
    if read_with is not None:
        named = samples_task(path)
        if frame.height:
            used = parser.metrics[0] + ("" if keep in (None, "none") else f" (filter {keep})")
        elif n_missing:
            used = f"none (no {' / '.join(task.metrics)} in any sample; {n_missing:,} quarantined)"
        else:
            used = "none (no sample read)"
        read_with[named[0] if named else path.name] = used
    frame = frame.with_columns(
        model=pl.lit(model), benchmark=pl.lit(task.benchmark), ref_no=pl.lit(ref_no)
    )
    bad_frame = pl.DataFrame(bad).with_columns(ref_no=pl.lit(ref_no))
    return conform(frame, SRC_SCHEMA), conform(bad_frame, BAD_SCHEMA)
