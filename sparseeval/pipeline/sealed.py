"""Cache entries that say what they must be: sealed when written, checked when read.

Every entry under `artifacts/` is written with a seal: the key it was written for, the
sha256 of each of its files and the facts a reader relies on (benchmark, shape, matrix
fingerprint). A reader that finds anything else (a truncated, garbled or swapped file, a
seal for another key, no seal) logs a miss naming the file and rebuilds the entry: a damaged
cache is never an error and never used.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.hashing import file_sha256

log = logging.getLogger("sparseeval.pipeline.cache")
SEAL_FILE = "seal.json"  # the seal of a folder entry, inside it


class CacheMiss(SparseEvalError):
    """A cache entry that is not what its seal says; the message says which file and why."""


def seal(key: str, files: Mapping[str, Path], **facts: Any) -> dict[str, Any]:
    """What an entry must be: its key, its facts and the sha256 of each of its files."""
    return {"key": key, **facts, "files": {n: file_sha256(p) for n, p in files.items()}}


def check(sealed: Any, key: str, files: Mapping[str, Path], **facts: Any) -> None:
    """Raise CacheMiss unless `sealed` is `seal(key, files, **facts)` of these files now."""
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
    (Path(folder) / SEAL_FILE).write_text(json.dumps(seal(key, folder_files(folder), **facts)))


def check_folder(folder: str | Path, key: str, required: tuple[str, ...], **facts: Any) -> None:
    """Raise CacheMiss unless the folder is what its seal says, with the `required` files."""
    sealed = read_json(Path(folder) / SEAL_FILE)
    names = sealed.get("files") if isinstance(sealed, dict) else None
    if not isinstance(names, dict) or not set(required) <= set(names):
        raise CacheMiss(f"the seal in {folder} does not list {', '.join(required)}")
    check(sealed, key, {n: Path(folder) / n for n in names}, **facts)


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


__all__ = [
    "SEAL_FILE",
    "CacheMiss",
    "CacheUnwritable",
    "check",
    "check_folder",
    "check_writable",
    "folder_files",
    "missed",
    "put_file",
    "read_json",
    "read_note",
    "seal",
    "seal_folder",
]
