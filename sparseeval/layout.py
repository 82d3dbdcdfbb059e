"""The published folder layout, shared by writers and readers (NumPy-free, standard library).

    {root}/{benchmark}/v{N}/manifest.json        what this is, how good it is, sha256 of files
    {root}/{benchmark}/v{N}/predictor/            predictor.json + weights.npz (no pickle)
    {root}/{benchmark}/v{N}/report.md|.html       evaluation report (plots under plots/)
    {root}/{benchmark}/latest                     {"version": N, ...} (replaced atomically)

With several anchor budgets (`n_anchors = [25, 50, 100]`) each budget is a set of its own,
one level down: `{root}/{benchmark}/k{budget}/v{N}/...` and `{root}/{benchmark}/k{budget}/latest`;
readers pick the largest budget unless asked for one. A discarded version leaves a
tombstone `.discarded-v{N}` (with its reason) so its number is never reused.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .hashing import file_sha256

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
LATEST = "latest"
PREDICTOR_DIR = "predictor"
KIND = "sparseeval.anchor_set"
VERSION_DIR = re.compile(r"^v(\d+)$")
BUDGET_DIR = re.compile(r"^k(\d+)$")
TOMBSTONE = re.compile(r"^\.discarded-v(\d+)$")


class AnchorSetError(ValueError):
    """A published anchor set is missing, damaged, or cannot be read by this version."""


def set_dir(root: str | Path, benchmark: str, budget: int | None = None) -> Path:
    """The folder of one anchor set's versions: `{root}/{benchmark}[/k{budget}]`."""
    folder = Path(root) / benchmark
    return folder if budget is None else folder / f"k{int(budget)}"


def list_budgets(root: str | Path, benchmark: str) -> list[int]:
    """The budgets published as sets of their own under `{root}/{benchmark}/k*`, ascending."""
    folder = Path(root) / benchmark
    if not folder.is_dir():
        return []
    found = (BUDGET_DIR.match(p.name) for p in folder.iterdir() if p.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


def latest_version(root: str | Path, benchmark: str, budget: int | None = None) -> int | None:
    """The version `latest` points to, or None when nothing is published yet."""
    pointer = set_dir(root, benchmark, budget) / LATEST
    if not pointer.is_file():
        return None
    try:
        return int(json.loads(pointer.read_text())["version"])
    except (ValueError, KeyError, TypeError) as e:
        raise AnchorSetError(f"{pointer}: unreadable latest pointer ({e})") from None


def list_versions(root: str | Path, benchmark: str, budget: int | None = None) -> list[int]:
    """Published version numbers present on disk, ascending."""
    folder = set_dir(root, benchmark, budget)
    if not folder.is_dir():
        return []
    found = (VERSION_DIR.match(p.name) for p in folder.iterdir() if p.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


def parse_version(version: int | str) -> int:
    """3, "3" or "v3" -> 3."""
    s = str(version).strip().lower().removeprefix("v")
    if not s.isdigit():
        raise AnchorSetError(f"version must be 'latest', N or vN, got {version!r}")
    return int(s)


def resolve_version_dir(
    root: str | Path, benchmark: str, version: int | str = LATEST, budget: int | None = None
) -> Path:
    """The local folder of a version ("latest", 3, "v3"); also accepts a version folder itself.

    budget: which budget's set when several are published (default: the largest one that
    has a live version).
    """
    root = Path(root)
    if (root / MANIFEST).is_file():
        return root
    if not (root / benchmark).is_dir():
        if any(f(root.parent, root.name) for f in (latest_version, list_versions, list_budgets)):
            root, benchmark = root.parent, root.name  # a benchmark folder was given
        else:
            raise AnchorSetError(f"no published {benchmark!r} anchor sets at {root}")
    budget = _pick_budget(root, benchmark, budget)
    folder = set_dir(root, benchmark, budget)
    where = f"{benchmark}" + (f" k{budget}" if budget is not None else "")
    if version in (None, LATEST):
        n = latest_version(root, benchmark, budget)
        if n is None:
            have = list_versions(root, benchmark, budget)
            hint = f" (versions on disk: {', '.join(f'v{v}' for v in have)})" if have else ""
            raise AnchorSetError(f"no latest {where!r} anchor set under {root}{hint}")
    else:
        n = parse_version(version)
    if not (folder / f"v{n}").is_dir():
        raise AnchorSetError(f"{where} v{n} not found under {root}")
    return folder / f"v{n}"


def _pick_budget(root: Path, benchmark: str, budget: int | None) -> int | None:
    """The budget asked for, else None for a single-budget set, else the largest live one."""
    budgets = list_budgets(root, benchmark)
    if budget is not None:
        if int(budget) not in budgets:
            have = ", ".join(f"k{b}" for b in budgets) or "none"
            raise AnchorSetError(f"no {benchmark!r} set with {budget} anchors (budgets: {have})")
        return int(budget)
    if not budgets or (set_dir(root, benchmark) / LATEST).is_file():
        return None
    live = [b for b in budgets if (set_dir(root, benchmark, b) / LATEST).is_file()]
    return max(live or budgets)


def manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest without its own seal."""
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def seal(manifest: dict) -> dict:
    """The manifest with its `manifest_sha256` seal."""
    return {k: v for k, v in manifest.items() if k != "manifest_sha256"} | {
        "manifest_sha256": manifest_digest(manifest)
    }


def read_manifest(folder: str | Path) -> dict:
    """The sealed manifest of a version folder; refuses damaged or newer-schema manifests."""
    from ._version import __version__

    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise AnchorSetError(f"{folder}: no {MANIFEST} (not an anchor set, or incomplete)")
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AnchorSetError(f"{path}: damaged or truncated manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise AnchorSetError(f"{path}: not a sparseeval anchor-set manifest")
    schema = manifest.get("schema_version")
    if not isinstance(schema, int):
        raise AnchorSetError(f"{path}: manifest has no schema_version")
    if schema > SCHEMA_VERSION:
        raise AnchorSetError(
            f"{path}: schema version {schema} is newer than this sparseeval "
            f"({__version__}) reads (up to {SCHEMA_VERSION}); upgrade sparseeval"
        )
    if manifest.get("manifest_sha256") != manifest_digest(manifest):
        raise AnchorSetError(f"{path}: manifest was modified after publishing (seal mismatch)")
    return manifest


def verify(folder: str | Path, manifest: dict) -> None:
    """Every file listed in the manifest exists and has its recorded sha256."""
    bad = []
    for rel, digest in manifest.get("files", {}).items():
        p = Path(folder) / rel
        if not p.is_file():
            bad.append(f"{rel} (missing)")
        elif file_sha256(p) != digest:
            bad.append(f"{rel} (checksum mismatch)")
    if bad:
        raise AnchorSetError(
            f"{folder}: anchor set failed verification, refusing to use it: {', '.join(bad)}"
        )
