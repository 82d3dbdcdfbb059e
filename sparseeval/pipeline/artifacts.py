"""The artifact store: content-keyed entries under `artifacts/`, sealed when written and
checked when read, and the ledgers publishing keeps there.

Keys and paths. Large data lives in files under `artifacts/{kind}/{key}`, where the key
covers the inputs, the settings that matter and the code version: an unchanged input is
never recomputed, and a change to any module whose output is cached invalidates it.
Matrices have one file format (`save_matrix`, `load_matrix`).

Seals. Every entry is written with a seal: the key it was written for, the sha256 of each
of its files and the facts a reader relies on (benchmark, shape, matrix fingerprint). A
reader that finds anything else (a truncated, garbled or swapped file, a seal for another
key, no seal) logs a miss naming the file and rebuilds the entry: a damaged cache is never
an error and never used.

Ledgers. Two per published set under `artifacts/published/`, keyed by the candidate's key:
the gate's refusals (`{name}-refused.json`) and the candidates found unchanged from the
live version (`{name}-unchanged.json`), so that a later run with nothing new neither gates
nor writes them again. `substance` is what a consumer loads from a version: equal
substance, the same set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval._version import __version__
from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.consume.sets.layout import MANIFEST, REPORT_FILES, REPORT_INPUTS, latest_version
from sparseeval.method.matrix import ResponseMatrix, item_scale
from sparseeval.pipeline.records import Candidate, MatrixInfo
from sparseeval.pipeline.settings import MatrixSection, Settings, fields_of

# -- keys and paths -----------------------------------------------------------------------

# Settings each stage depends on (others, e.g. paths or drift thresholds, do not change it).
MATRIX_FIELDS = fields_of("matrix")
TRAINING_FIELDS = fields_of("selection", "predictor", "splits", "pool")
# What a cached result depends on: the whole method package (and the NumPy readers it
# uses), plus the pipeline modules that turn a store into a matrix and a fit into files.
CODE_PACKAGES = ("method", "consume")
PIPELINE_MODULES = (
    "artifacts.py", "recipe.py", "suite_recipe.py", "compare.py", "records.py", "store/build.py",
)  # fmt: skip


@cache
def code_version() -> str:
    """sparseeval's version plus a hash of the source of every module a result depends on."""
    h = hashlib.sha256(__version__.encode())
    root = resources.files("sparseeval")
    files = [f for pkg in CODE_PACKAGES for f in _sources(root.joinpath(pkg))]
    files += [root.joinpath("pipeline", *name.split("/")) for name in PIPELINE_MODULES]
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return f"{__version__}+{h.hexdigest()[:16]}"


def _sources(folder) -> list:
    """The .py files of a package folder and its sub-packages, in a stable order."""
    entries = sorted(folder.iterdir(), key=lambda f: f.name)
    files = [f for f in entries if f.name.endswith(".py")]
    for sub in entries:
        if sub.is_dir() and sub.joinpath("__init__.py").is_file():
            files += _sources(sub)
    return files


def settings_subset(settings: Settings, names: Sequence[str]) -> dict[str, Any]:
    full = settings.to_dict()
    return {n: full[n] for n in names}


def artifact_path(artifacts_dir: str | Path, kind: str, key: str) -> Path:
    """`artifacts/{kind}/{key}`: the one place a content-keyed artifact lives."""
    if not key or "/" in key or "/" in kind:
        raise ValueError(f"bad artifact key {kind!r}/{key!r}")
    return Path(artifacts_dir) / kind / key


def matrix_key(
    benchmark: str, store_state: str, matrix: MatrixSection, artifacts_dir: str | Path
) -> str:
    """Key of a benchmark's matrix: its store content signature, the `matrix` section of
    the settings and the code (the same key as when it took every setting).

    The artifacts folder is part of the key: a cached result always points at files
    in this home, never at another home's (which may be gone).
    """
    return fingerprint(
        "matrix", benchmark, store_state, matrix.to_dict(),
        str(Path(artifacts_dir).resolve()), code_version(),
    )  # fmt: skip


def fit_key(benchmark: str, matrix_fingerprint: str, settings: Settings) -> str:
    """Key of a fitted model: the benchmark, its matrix content, the training settings and the
    code (two benchmarks with the same answers have two fits: each is published as its own)."""
    return fingerprint(
        "fit", benchmark, matrix_fingerprint, settings_subset(settings, TRAINING_FIELDS),
        str(Path(settings.paths.artifacts_dir).resolve()), code_version(),
    )  # fmt: skip


def save_matrix(
    matrix: ResponseMatrix, path: str | Path, compress: bool = False, fingerprint: str | None = None
) -> Path:
    """Write a matrix as one `.npz` (values, ids, targets, fingerprint) atomically; no pickles.

    fingerprint: the matrix's, when the caller already has it (else it is computed).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {
        "values": matrix.values,
        "model_ids": np.asarray(matrix.model_ids, dtype=str),
        "item_ids": np.asarray(matrix.item_ids, dtype=str),
        "fingerprint": np.asarray(fingerprint or matrix.fingerprint()),
    }
    if matrix.targets is not None:
        arrays["targets"] = matrix.targets
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            (np.savez_compressed if compress else np.savez)(f, **arrays)
        put_file(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


_LOADED: dict[tuple[str, str, str], Any] = {}
_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def read_once(kind: str, path: str | Path, content_key: str, load: Callable[[], Any]) -> Any:
    """`load()`, run once per process for one content-keyed file (a night's steps share it).

    `content_key` (a fingerprint or fit key) names the content, so a changed file is read
    again; `forget_loaded` drops everything held. Different files load concurrently.
    Callers must not modify what they get.
    """
    key = (kind, str(Path(path).resolve()), content_key)
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _LOADED:
            _LOADED[key] = load()
        return _LOADED[key]


def forget_loaded() -> None:
    """Drop what `read_once` holds (at the end of a run)."""
    with _LOCKS_LOCK:
        _LOADED.clear()
        _LOCKS.clear()


def matrix_of(info: MatrixInfo) -> ResponseMatrix:
    """The matrix a `MatrixInfo` names, read once per process (see `read_once`)."""
    return read_once("matrix", info.path, info.fingerprint, lambda: load_matrix(info.path))


def load_matrix(path: str | Path) -> ResponseMatrix:
    """Read a matrix written by `save_matrix`."""
    with np.load(path, allow_pickle=False) as npz:
        targets = npz["targets"] if "targets" in npz.files else None
        values = npz["values"]  # graded: float32 (`method.matrix`), binary: int8
        return ResponseMatrix(
            values, npz["model_ids"].astype(object), npz["item_ids"].astype(object), targets,
            item_scale(values),
        )  # fmt: skip


# -- seals -------------------------------------------------------------------------------

log = logging.getLogger("sparseeval.pipeline.cache")
SEAL_FILE = "seal.json"  # the seal of a folder entry, inside it


class CacheMiss(SparseEvalError):
    """A cache entry that is not what its seal says; the message says which file and why."""


def seal_entry(key: str, files: Mapping[str, Path], **facts: Any) -> dict[str, Any]:
    """What an entry must be: its key, its facts and the sha256 of each of its files."""
    return {"key": key, **facts, "files": {n: file_sha256(p) for n, p in files.items()}}


def check_seal(sealed: Any, key: str, files: Mapping[str, Path], **facts: Any) -> None:
    """Raise CacheMiss unless `sealed` is `seal_entry(key, files, **facts)` of these files now."""
    if not isinstance(sealed, dict):
        raise CacheMiss("it has no seal (written by an older version, or damaged)")
    if sealed.get("key") != key:
        raise CacheMiss("it was written for another key")
    for name, want in facts.items():
        if sealed.get(name) != want:
            raise CacheMiss(f"its {name} is {sealed.get(name)!r}, not {want!r}")
    recorded = sealed.get("files")
    if not isinstance(recorded, dict) or set(recorded) != set(files):
        raise CacheMiss("its seal does not list its files")
    for name, path in files.items():
        if not Path(path).is_file():
            raise CacheMiss(f"{path} is missing")
        if file_sha256(path) != recorded[name]:
            raise CacheMiss(f"{path} is not the file that was written (changed or damaged)")


def read_json(path: str | Path) -> Any:
    """A JSON cache file's content; CacheMiss if it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CacheMiss(f"{path} cannot be read: {exc}") from None


def folder_files(folder: str | Path) -> dict[str, Path]:
    """Every file of a folder entry by its relative name (its seal aside)."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != SEAL_FILE}  # fmt: skip


def seal_folder(folder: str | Path, key: str, **facts: Any) -> None:
    """Write the seal of a folder entry (its files as they are now) inside it."""
    (Path(folder) / SEAL_FILE).write_text(
        json.dumps(seal_entry(key, folder_files(folder), **facts))
    )


def check_folder(folder: str | Path, key: str, required: tuple[str, ...], **facts: Any) -> None:
    """Raise CacheMiss unless the folder is what its seal says, with the `required` files."""
    sealed = read_json(Path(folder) / SEAL_FILE)
    names = sealed.get("files") if isinstance(sealed, dict) else None
    if not isinstance(names, dict) or not set(required) <= set(names):
        raise CacheMiss(f"the seal in {folder} does not list {', '.join(required)}")
    check_seal(sealed, key, {n: Path(folder) / n for n in names}, **facts)


def put_file(tmp: str | Path, path: str | Path) -> None:
    """`os.replace(tmp, path)`: a cache entry written into place; a folder where the file
    goes (a damaged entry) is removed first, never an error."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)


def missed(path: str | Path, exc: Exception) -> None:
    """Log a cache miss: the entry is rebuilt."""
    log.warning("cache miss: %s: %s; rebuilding it", path, exc)


def read_note(path: str | Path, default: Any) -> Any:
    """A small JSON note of the artifacts folder (e.g. the ledger of refusals), or `default`
    when it is absent or damaged (logged: the note is written again)."""
    if not Path(path).exists():
        return default
    try:
        data = read_json(path)
    except CacheMiss as exc:
        missed(path, exc)
        return default
    if not isinstance(data, type(default)):
        kind, want = type(data).__name__, type(default).__name__
        missed(path, CacheMiss(f"{path} holds a {kind}, not a {want}"))
        return default
    return data


class CacheUnwritable(SparseEvalError, ValueError):
    """The artifacts folder cannot be written (read-only, full, or not a folder)."""


def check_writable(artifacts_dir: str | Path) -> None:
    """Raise CacheUnwritable, in one line, unless a file can be written in `artifacts_dir`."""
    folder = Path(artifacts_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise CacheUnwritable(
            f"artifacts folder {folder} cannot be written ({why}): make it writable, or set"
            " artifacts_dir to a folder that is"
        ) from None


# -- the ledgers of published candidates -------------------------------------------------


def _refusals(artifacts_dir: str | Path, name: str) -> Path:
    return artifact_path(artifacts_dir, "published", f"{name}-refused.json")


def refused_before(artifacts_dir: str | Path, name: str, key: str) -> str | None:
    """The gate's reason if this very candidate (same key) of set `name` was refused before."""
    reason = read_note(_refusals(artifacts_dir, name), {}).get(key)
    return str(reason) if reason is not None else None


def already_refused(artifacts_dir: str | Path, name: str, key: str) -> str | None:
    """Why not to gate this candidate again: the ledger's line for it, or None."""
    before = refused_before(artifacts_dir, name, key)
    return f"this candidate was already refused: {before}" if before is not None else None


def note_refusal(artifacts_dir: str | Path, name: str, key: str, reason: str) -> None:
    """Remember a refused candidate, so later runs with nothing new do not gate it again."""
    _note(_refusals(artifacts_dir, name), key, reason)


def _note(path: Path, key: str, value: Any) -> None:
    """Add `key: value` to the ledger at `path` (written whole, then renamed into place)."""
    seen = read_note(path, {})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(seen | {key: value}))
    tmp.replace(path)


# -- unchanged candidates -----------------------------------------------------------------

# What a version's report shows (and when it was written): not what a consumer loads.
PRESENTATION = (REPORT_INPUTS, *REPORT_FILES)
SUBSTANCE_KEYS = ("items", "item_sources", "interval")  # the manifest's entries that matter


def substance(folder: str | Path) -> dict[str, Any]:
    """What a consumer loads from a version folder: the sha256 of every file but the report
    (weights, predictor json, items and curves, models) and the manifest's items, their
    sources and interval; never its version, time, paths, settings or code version."""
    manifest = json.loads((Path(folder) / MANIFEST).read_text())
    files = {rel: sha for rel, sha in (manifest.get("files") or {}).items()
             if not rel.startswith(PRESENTATION)}  # fmt: skip
    return {"files": files} | {k: manifest.get(k) for k in SUBSTANCE_KEYS}


def unchanged_from(cand: Candidate) -> int | None:
    """The live version when the candidate is the same set over again (`substance`), else None."""
    where = Path(cand.path).parent  # the candidate's set
    live = latest_version(where.parent, where.name)
    if live is None or live == cand.version:
        return None
    try:
        same = substance(where / f"v{live}") == substance(cand.path)
    except (OSError, ValueError):
        return None  # an unreadable live set: the candidate replaces it
    return live if same else None


def unchanged_reason(version: int) -> str:
    """The outcome's (and tombstone's) words for a candidate that repeats live `version`."""
    return f"unchanged from v{version} (same weights, items, curves and models)"


def _unchanged_ledger(artifacts_dir: str | Path, name: str) -> Path:
    return artifact_path(artifacts_dir, "published", f"{name}-unchanged.json")


def note_unchanged(artifacts_dir: str | Path, name: str, key: str, version: int) -> None:
    """Remember that candidate `key` of set `name` repeated live `version`."""
    _note(_unchanged_ledger(artifacts_dir, name), key, int(version))


def unchanged_before(
    artifacts_dir: str | Path, name: str, key: str, live_version: int | None
) -> str | None:
    """Why not to write this candidate again: it repeated the version still live, or None."""
    if live_version is None:
        return None
    before = read_note(_unchanged_ledger(artifacts_dir, name), {}).get(key)
    if before != live_version:
        return None
    return f"this candidate was found unchanged from v{live_version} before"


__all__ = [
    "CODE_PACKAGES",
    "MATRIX_FIELDS",
    "PIPELINE_MODULES",
    "PRESENTATION",
    "SEAL_FILE",
    "SUBSTANCE_KEYS",
    "TRAINING_FIELDS",
    "CacheMiss",
    "CacheUnwritable",
    "already_refused",
    "artifact_path",
    "check_folder",
    "check_seal",
    "check_writable",
    "code_version",
    "fit_key",
    "folder_files",
    "forget_loaded",
    "load_matrix",
    "matrix_key",
    "matrix_of",
    "missed",
    "note_refusal",
    "note_unchanged",
    "put_file",
    "read_json",
    "read_note",
    "read_once",
    "refused_before",
    "save_matrix",
    "seal_entry",
    "seal_folder",
    "settings_subset",
    "substance",
    "unchanged_before",
    "unchanged_from",
    "unchanged_reason",
]
