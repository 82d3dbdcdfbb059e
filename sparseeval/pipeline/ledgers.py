"""What publishing remembers of each set's candidates, and when two versions are the same.

Two ledgers per set under `artifacts/published/`, keyed by the candidate's key: the gate's
refusals (`{name}-refused.json`) and the candidates found unchanged from the live version
(`{name}-unchanged.json`), so that a later run with nothing new neither gates nor writes
them again. `substance` is what a consumer loads from a version: equal substance, the
same set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparseeval.consume.sets.layout import MANIFEST, REPORT_FILES, REPORT_INPUTS, latest_version
from sparseeval.pipeline import sealed
from sparseeval.pipeline.artifacts import artifact_path
from sparseeval.pipeline.records import Candidate


def _refusals(artifacts_dir: str | Path, name: str) -> Path:
    return artifact_path(artifacts_dir, "published", f"{name}-refused.json")


def refused_before(artifacts_dir: str | Path, name: str, key: str) -> str | None:
    """The gate's reason if this very candidate (same key) of set `name` was refused before."""
    reason = sealed.read_note(_refusals(artifacts_dir, name), {}).get(key)
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
    seen = sealed.read_note(path, {})
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
    before = sealed.read_note(_unchanged_ledger(artifacts_dir, name), {}).get(key)
    if before != live_version:
        return None
    return f"this candidate was found unchanged from v{live_version} before"


__all__ = [
    "PRESENTATION",
    "SUBSTANCE_KEYS",
    "already_refused",
    "note_refusal",
    "note_unchanged",
    "refused_before",
    "substance",
    "unchanged_before",
    "unchanged_from",
    "unchanged_reason",
]
