"""Content-keyed artifacts: keys, paths and the one matrix file format.

Large data lives in files under `artifacts/{kind}/{key}`, where the key covers the
inputs, the settings that matter and the code version: an unchanged input is never
recomputed, and a change to any module whose output is cached invalidates it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval._version import __version__
from sparseeval.consume.hashing import fingerprint
from sparseeval.method.matrix import ResponseMatrix, item_scale
from sparseeval.pipeline.records import MatrixInfo
from sparseeval.pipeline.sealed import put_file
from sparseeval.pipeline.settings import AnySettings, Section, Settings

# Settings each stage depends on (others, e.g. paths or drift thresholds, do not change it).
MATRIX_FIELDS = Settings.fields_of("matrix")
TRAINING_FIELDS = Settings.fields_of("selection", "predictor", "splits")
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


def settings_subset(settings: AnySettings, names: Sequence[str]) -> dict[str, Any]:
    full = settings.to_dict()
    return {n: full[n] for n in names}


def artifact_path(artifacts_dir: str | Path, kind: str, key: str) -> Path:
    """`artifacts/{kind}/{key}`: the one place a content-keyed artifact lives."""
    if not key or "/" in key or "/" in kind:
        raise ValueError(f"bad artifact key {kind!r}/{key!r}")
    return Path(artifacts_dir) / kind / key


def matrix_key(benchmark: str, store_state: str, matrix: Section, artifacts_dir: str | Path) -> str:
    """Key of a benchmark's matrix: its store content signature, the `matrix` section of
    the settings and the code (the same key as when it took every setting).

    The artifacts folder is part of the key: a cached result always points at files
    in this home, never at another home's (which may be gone).
    """
    return fingerprint(
        "matrix", benchmark, store_state, matrix.to_dict(),
        str(Path(artifacts_dir).resolve()), code_version(),
    )  # fmt: skip


def fit_key(benchmark: str, matrix_fingerprint: str, settings: AnySettings) -> str:
    """Key of a fitted model: the benchmark, its matrix content, the training settings and the
    code (two benchmarks with the same answers have two fits: each is published as its own)."""
    return fingerprint(
        "fit", benchmark, matrix_fingerprint, settings_subset(settings, TRAINING_FIELDS),
        str(Path(settings.artifacts_dir).resolve()), code_version(),
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


__all__ = [
    "CODE_PACKAGES",
    "MATRIX_FIELDS",
    "PIPELINE_MODULES",
    "TRAINING_FIELDS",
    "artifact_path",
    "code_version",
    "fit_key",
    "forget_loaded",
    "load_matrix",
    "matrix_key",
    "matrix_of",
    "read_once",
    "save_matrix",
    "settings_subset",
]
