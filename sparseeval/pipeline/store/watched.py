"""Watched sources, read again every night, taking only what is complete and new.

`Inbox` (a folder people drop tables into) and `LmEvalGlob` (every lm-eval output folder
matching a glob). A file or run folder changed within `SETTLE_SECONDS` is still being
written: it is a skipped unit tonight and read on a later night. Content read before is
skipped by its fingerprint (an unchanged file costs its hashing), and a file that cannot be
read is one failed unit: the other files still land. A failed inbox file is then moved aside
to `{inbox}/failed/` with its reason beside it (`NAME.reason.txt`), so it fails one night,
not every night; the same bytes dropped again are skipped (saying so), changed ones are read.
So is a file all of whose rows were quarantined (an unknown benchmark name): its rows are
held once, and `sparseeval quarantine release FILE` puts it back once the cause is fixed.
"""

from __future__ import annotations

import filecmp
import glob
import re
import shlex
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import duckdb

from sparseeval.consume.hashing import fingerprint
from sparseeval.consume.lm_eval.samples import samples_task
from sparseeval.pipeline.stopping import reraise_stop, stop_requested
from sparseeval.pipeline.store.db import Store
from sparseeval.pipeline.store.lm_eval_run import LmEvalRun
from sparseeval.pipeline.store.tables import LONG_SUFFIXES, LongTable, WideTable
from sparseeval.pipeline.store.unit import (
    SourceError,
    SpecOptions,
    Unit,
    existing,
    no_stage,
    printable_line,
)

# A watched file or run folder changed less than this many seconds ago is still being written.
SETTLE_SECONDS = 60.0
PENDING = "still being written"  # the reason of a unit skipped until it settles
FAILED_BEFORE = "failed before, unchanged since"  # a file put back as it was set aside
FAILED_DIR = "failed"  # where an inbox's failed files are moved (not a benchmark folder)


@dataclass
class Inbox:
    """A folder people drop tables into, read again every night.

    Long tables (`*.csv`, `*.parquet`: model, benchmark, item, correct) lie directly in the
    folder; wide tables (`model` + one column per item) in `{folder}/{benchmark}/*.csv`.
    Hidden files, other suffixes and `{folder}/failed/` (failed files moved aside) are ignored.
    """

    path: Path
    settle_seconds: float | None = None

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> Inbox:
        """`DIR` (the spec `inbox:DIR`)."""
        return cls(Path(spec_target("inbox", body, "a folder", "inbox:drop/")))

    def units(self, store: Store) -> Iterator[Unit]:
        root = existing(self.path)
        if not root.is_dir():
            raise SourceError(f"{root}: an inbox must be a folder")
        settle = SETTLE_SECONDS if self.settle_seconds is None else self.settle_seconds
        now = time.time()
        for path, benchmark in _inbox_files(root):
            kind = "wide-csv" if benchmark else "long-" + path.suffix.lower().lstrip(".")
            age = age_of([path], now)
            if age < settle:
                yield pending_unit(kind, path, f"modified {age:.1f}s ago", settle)
            elif (failed := self._failed_before(path)) is not None:
                yield skipped_unit(kind, path, failed)
            elif benchmark is None:
                yield from guarded_units(kind, path, partial(LongTable(path).units, store))
            elif path.suffix.lower() != ".csv":
                why = f"wide tables are CSV; put long tables directly in {root}"
                yield failing_unit(kind, path, SourceError(f"{path}: {why}"))
            else:
                units = partial(WideTable(path, benchmark).units, store)
                yield from guarded_units(kind, path, units)

    def aside(self, path: Path) -> Path:
        """Where a failed file of this inbox is moved: the same place under `failed/`."""
        root = self.path.resolve()
        return root / FAILED_DIR / Path(path).resolve().relative_to(root)

    def set_aside(self, label: str, reason: str) -> str:
        """Move the failed file `label` to `failed/` with its reason; what was done, in words.
        Never while a stop signal is pending: then the failure may be the signal's."""
        if stop_requested() is not None:
            return ""
        path = Path(label)
        try:
            target = self.aside(path)
        except ValueError:  # not a file of this inbox (the folder itself failed)
            return ""
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            path.replace(target)
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            reason_file(target).write_text(f"{stamp} {reason}\n")
        except OSError as exc:
            return f"could not move it to {target.parent} ({exc.strerror}): it fails again"
        back = shlex.quote(str(target))
        return f"moved to {target} (once fixed: sparseeval quarantine release {back})"

    def _failed_before(self, path: Path) -> str | None:
        """Why the same bytes failed before (a copy lies in `failed/`), else None."""
        target = self.aside(path)
        try:
            same = target.is_file() and filecmp.cmp(path, target, shallow=False)
        except OSError:
            return None
        if not same:
            return None
        reason = reason_file(target)
        why = reason.read_text().strip() if reason.is_file() else "(no reason kept)"
        return f"{FAILED_BEFORE} ({target}: {why}); change it to retry"


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

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> LmEvalGlob:
        """`GLOB` (the spec `lm-eval:GLOB`); the model from the options, else each run's."""
        return cls(spec_target("lm-eval", body, "a glob", "lm-eval:runs/*/*"), options.model)

    def units(self, store: Store) -> Iterator[Unit]:
        settle = SETTLE_SECONDS if self.settle_seconds is None else self.settle_seconds
        now = time.time()
        for folder in _run_folders(self.pattern):
            files = [p for p in folder.iterdir() if p.is_file()]
            results = sorted(p for p in files if _is_results(p))
            age = age_of(files, now)
            if not results:
                yield pending_unit("lm-eval", folder, "no results_*.json yet", settle)
            elif age < settle:
                yield pending_unit("lm-eval", folder, f"a file changed {age:.1f}s ago", settle)
            else:
                for res in results:
                    units = partial(LmEvalRun(res, self.model).units, store)
                    yield from guarded_units("lm-eval", res, units)


def spec_target(kind: str, body: str, what: str, example: str) -> str:
    """The text after a watched source's colon, which may not be empty."""
    target = body.strip()
    if not target:
        raise SourceError(f"{kind} source needs {what} after the colon (e.g. {example})")
    return target


def _inbox_files(root: Path) -> list[tuple[Path, str | None]]:
    """(file, None) for long tables in `root`, (file, benchmark) in `root/{benchmark}/`."""
    found: list[tuple[Path, str | None]] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith((".", "~")) or entry.name == FAILED_DIR:
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


def age_of(paths: list[Path], now: float) -> float:
    """Seconds since the newest of `paths` changed (0 when one vanished meanwhile)."""
    try:
        return min((now - p.stat().st_mtime for p in paths), default=float("inf"))
    except OSError:
        return 0.0


def pending_unit(kind: str, path: Path, why: str, settle: float) -> Unit:
    """A skipped unit for something still being written (read on a later night)."""
    reason = f"{PENDING} ({why}; read once unchanged for {settle:g}s)"
    key = fingerprint("pending", kind, str(path))
    return Unit(kind, str(path), key, [str(path)], no_stage, skip=reason)


def reason_file(target: Path) -> Path:
    """Where the reason of a set-aside file is kept (`NAME.reason.txt` beside it)."""
    return target.with_name(target.name + ".reason.txt")


def skipped_unit(kind: str, path: Path, why: str) -> Unit:
    """A skipped unit (nothing read) saying why."""
    key = fingerprint("skipped", kind, str(path), why)
    return Unit(kind, str(path), key, [str(path)], no_stage, skip=why)


def settle_time(settle_seconds: float | None) -> float:
    """A source's settle time: its own, else `SETTLE_SECONDS` (read when listing, so a
    configured or patched value applies)."""
    return SETTLE_SECONDS if settle_seconds is None else settle_seconds


def settled_units(
    kind: str,
    path: Path,
    files: list[Path],
    listing: Callable[[], Unit | Iterable[Unit]],
    settle: float,
    now: float,
    missing: str | None = None,
) -> Iterator[Unit]:
    """`path`'s units (`guarded_units`) once it lacks nothing (`missing`: what it still lacks)
    and its `files` have not changed for `settle` seconds; a pending unit before."""
    age = age_of(files, now)
    if missing:
        yield pending_unit(kind, path, missing, settle)
    elif age < settle:
        yield pending_unit(kind, path, f"modified {age:.1f}s ago", settle)
    else:
        yield from guarded_units(kind, path, listing)


def guarded_units(
    kind: str, path: Path, listing: Callable[[], Unit | Iterable[Unit]]
) -> Iterator[Unit]:
    """The unit or units `listing()` gives (e.g. `partial(source.units, store)`); an error
    while listing them becomes one failing unit."""
    try:
        made = listing()
        units = [made] if isinstance(made, Unit) else list(made)
    except Exception as exc:  # a bad file is a failed unit, never the end of the folder
        reraise_stop(exc)  # but a stop signal is no bad file
        yield failing_unit(kind, path, exc)
        return
    yield from units


def failing_unit(kind: str, path: Path, exc: Exception) -> Unit:
    """A unit whose staging raises `exc` (so that it is recorded as a failed run)."""
    message = printable_line(str(exc) if isinstance(exc, SourceError) else f"{path}: {exc}")

    def stage(con: duckdb.DuckDBPyConnection) -> None:
        raise SourceError(message) from exc

    key = fingerprint("unreadable", kind, str(path), message)
    return Unit(kind, str(path), key, [str(path)], stage)


__all__ = [
    "FAILED_BEFORE",
    "FAILED_DIR",
    "PENDING",
    "SETTLE_SECONDS",
    "Inbox",
    "LmEvalGlob",
    "age_of",
    "failing_unit",
    "guarded_units",
    "pending_unit",
    "reason_file",
    "settle_time",
    "settled_units",
    "skipped_unit",
    "spec_target",
]
