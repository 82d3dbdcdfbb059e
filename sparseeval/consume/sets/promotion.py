"""Promotion: which versions of a set were ever made live (`latest`'s record), and the check
that only those load (see `consume.sets.layout` for the layout and the trust model)."""

from __future__ import annotations

import json
from pathlib import Path

from sparseeval.consume.answers.responses import printable
from sparseeval.consume.sets.layout import (
    BUDGET_DIR,
    VERSION_DIR,
    AnchorSetError,
    read_pointer,
)


def promoted_versions(set_folder: str | Path) -> dict[int, str | None]:
    """{version: manifest seal (None when not recorded)} of every version ever promoted.

    A pointer written before promotions were recorded promotes every version up to its
    own (with its own seal).
    """
    pointer = read_pointer(set_folder)
    if pointer is None:
        return {}
    n = int(pointer["version"])
    record = pointer.get("promoted")
    if isinstance(record, dict):
        out = {int(k): (v if isinstance(v, str) else None) for k, v in record.items()}
    else:  # legacy pointer: everything up to latest was promoted
        out = {v: None for v in range(1, n + 1)}
    out[n] = pointer.get("manifest_sha256") or out.get(n)
    return out


def set_of(folder: str | Path, manifest: dict) -> Path | None:
    """The set a version folder (`.../vN`) is in: `{benchmark}` or `{benchmark}/k{budget}`
    above it; None for a version folder elsewhere (a copy you made, e.g. `mine/v3`)."""
    folder = Path(folder)
    set_folder, bench = folder.parent, manifest.get("benchmark")
    in_set = set_folder.name == bench or (
        BUDGET_DIR.match(set_folder.name) is not None and set_folder.parent.name == bench
    )
    return set_folder if VERSION_DIR.match(folder.name) and in_set else None


def check_promoted(folder: str | Path, manifest: dict) -> None:
    """Refuse a version folder (`.../vN` in a set, `set_of`) that was never promoted or was
    discarded. A version folder elsewhere has no set to ask."""
    folder = Path(folder)
    set_folder = set_of(folder, manifest)
    if set_folder is None:
        return
    n = int(VERSION_DIR.match(folder.name).group(1))
    label = str(manifest.get("benchmark", set_folder.name))
    if BUDGET_DIR.match(set_folder.name):
        label += f" {set_folder.name}"
    label = printable(label)
    tomb = set_folder / f".discarded-v{n}"
    if tomb.is_file():
        try:
            reason = json.loads(tomb.read_text()).get("reason") or "no reason recorded"
        except (ValueError, AttributeError, UnicodeDecodeError):
            reason = "no reason recorded"
        raise AnchorSetError(f"{label} v{n} was discarded ({printable(reason)}); refusing it")
    promoted = promoted_versions(set_folder)
    if n not in promoted:
        live = read_pointer(set_folder)
        hint = f"; the live version is v{int(live['version'])}" if live else ""
        raise AnchorSetError(
            f"{label} v{n} was never promoted (a candidate that did not pass the gate or a "
            f"crashed run); refusing it{hint}"
        )
    seal_then = promoted[n]
    if seal_then is not None and seal_then != manifest.get("manifest_sha256"):
        raise AnchorSetError(
            f"{label} v{n}: manifest differs from the one promoted (seal {seal_then[:12]}, now "
            f"{printable(str(manifest.get('manifest_sha256'))[:12])}); refusing it"
        )


__all__ = [
    "check_promoted",
    "promoted_versions",
    "set_of",
]
