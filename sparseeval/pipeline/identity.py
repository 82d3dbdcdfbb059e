"""Item identity from the store to a published set: the anchors' task, doc id, hash, id kind.

The matrix step writes, beside each matrix `{benchmark}.{fingerprint}.npz`, its identity as
read from the store (`{benchmark}.{fingerprint}.items.json`: {item: {"hash", "id_kind"}});
publishing reads the anchors' entries back (`anchor_sources`) for the manifest's
`item_sources`. A matrix written before this (no file) gives None: the manifest then derives
(task, doc_id) from the ids and the kind is unknown (`consume.answers.identity.UNKNOWN_NOTE`).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from sparseeval.consume.answers.identity import OPAQUE
from sparseeval.consume.lm_eval.ids import LmEvalError, item_source
from sparseeval.pipeline.artifacts import put_file


def identity_path(matrix_path: str | Path) -> Path:
    """The identity file beside a matrix file."""
    return Path(matrix_path).with_suffix(".items.json")


def save_identity(matrix_path: str | Path, items: Iterable[str], identity: Mapping) -> Path:
    """Write the identity of a matrix's `items` (atomically) beside it."""
    path = identity_path(matrix_path)
    data = {str(i): dict(identity[i]) for i in items if i in identity}
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(data))
    put_file(tmp, path)
    return path


def anchor_sources(matrix_path: str | Path, anchors: Iterable[str], benchmark: str) -> dict | None:
    """{anchor: {task, doc_id, hash, id_kind}} for the manifest (None: no identity file)."""
    try:
        stored = json.loads(identity_path(matrix_path).read_text())
    except (OSError, ValueError):
        return None
    return {a: _entry(a, benchmark, stored.get(a) or {}) for a in map(str, anchors)}


def _entry(item: str, benchmark: str, stored: Mapping) -> dict:
    """One anchor's entry: an opaque id has no task or doc id; other ids follow the id rules."""
    entry = {k: stored[k] for k in ("hash", "id_kind") if stored.get(k)}
    if entry.get("id_kind") == OPAQUE:
        return entry
    try:
        task, doc = item_source(item, benchmark)
    except LmEvalError:
        return entry | {"id_kind": OPAQUE}  # no doc id can be named for it
    return {"task": task, "doc_id": doc} | entry


__all__ = [
    "anchor_sources",
    "identity_path",
    "save_identity",
]
