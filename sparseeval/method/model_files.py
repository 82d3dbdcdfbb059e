"""The one on-disk format of a fitted model: `anchors.json` plus the published `predictor/`.

    {folder}/anchors.json      item ids, column indices, predictor name, validation scores,
                               calibration residuals (and which models they came from)
    {folder}/predictor/        predictor.json + weights.npz (`sparseeval.consume.inference`)

The pipeline's artifacts, `sparseeval fit --out` and published versions all hold this
predictor folder; it loads with NumPy alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.inference import load_predictor, save_predictor

ANCHORS_FILE = "anchors.json"
PREDICTOR_DIR = "predictor"


@dataclass
class FittedModel:
    """A fitted anchor estimator read back from disk: anchors and a reader of their answers."""

    anchors_: np.ndarray
    anchor_ids_: np.ndarray
    predictor_: Any
    predictor_name_: str | None = None
    calibration_residuals_: np.ndarray = field(default_factory=lambda: np.zeros(0))
    calibration_source_: str = "validation"
    valid_scores_: dict[str, float] = field(default_factory=dict)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Estimated accuracy from the full-width +-1 matrix (only anchor columns are read)."""
        return self.predict_anchors(np.asarray(X)[:, self.anchors_])

    def predict_anchors(self, XA: np.ndarray) -> np.ndarray:
        return self.predictor_.predict(np.asarray(XA, dtype=np.float32))


def save_fitted(est, folder: str | Path) -> Path:
    """Write a fitted estimator (`anchors_`, `anchor_ids_`, `predictor_`, ...) into `folder`."""
    folder = Path(folder)
    save_predictor(est.predictor_, folder / PREDICTOR_DIR)
    residuals = getattr(est, "calibration_residuals_", np.zeros(0))
    meta = {
        "items": [str(i) for i in est.anchor_ids_],
        "anchors": [int(a) for a in est.anchors_],
        "predictor": getattr(est, "predictor_name_", None),
        "valid_scores": {k: float(v) for k, v in getattr(est, "valid_scores_", {}).items()},
        "calibration_residuals": [float(r) for r in np.asarray(residuals, dtype=np.float64)],
        "calibration_source": getattr(est, "calibration_source_", "validation"),
    }
    (folder / ANCHORS_FILE).write_text(json.dumps(meta, indent=1))
    return folder


def load_fitted(folder: str | Path) -> FittedModel:
    """Read a model written by `save_fitted` (nothing is unpickled)."""
    folder = Path(folder)
    meta = json.loads((folder / ANCHORS_FILE).read_text())
    return FittedModel(
        np.asarray(meta["anchors"], dtype=np.int64),
        np.asarray(meta["items"], dtype=object),
        load_predictor(folder / PREDICTOR_DIR),
        meta.get("predictor"),
        np.asarray(meta.get("calibration_residuals", []), dtype=np.float64),
        meta.get("calibration_source", "validation"),
        dict(meta.get("valid_scores") or {}),
    )
