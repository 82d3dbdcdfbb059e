"""Which models a set was fit and tested on: `models.json` beside its manifest (NumPy only).

`{"test": [...], "train": [...], "valid": [...], "calibration": [...]}`: model ids as the
store (or the fit's data file) names them. The test models are the ones its report's
figures come from; all of them together are its pool, which `sparseeval check` refuses to
score as new models. Sets written before this have no such file (None).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

MODELS_FILE = "models.json"
ROLES = ("test", "train", "valid", "calibration")


def models_text(ids: Mapping[str, Iterable]) -> str:
    """The file's text from {role: model ids} (roles not given are empty)."""
    return json.dumps({r: sorted(str(m) for m in ids.get(r, ())) for r in ROLES}, indent=0)


def read_models(folder: str | Path | None) -> dict[str, list[str]] | None:
    """{role: model ids} of a set's folder, or None when it has no models file."""
    path = Path(folder) / MODELS_FILE if folder is not None else None
    if path is None or not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return {r: [str(m) for m in data.get(r, [])] for r in ROLES}


def pool(models: Mapping[str, list[str]]) -> set[str]:
    """Every model the set saw: trained, validated, calibrated or tested on."""
    return {m for r in ROLES for m in models.get(r, [])}


__all__ = ["MODELS_FILE", "ROLES", "models_text", "pool", "read_models"]
