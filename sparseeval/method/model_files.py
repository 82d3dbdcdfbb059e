"""The one on-disk format of a fitted model: `anchors.json` plus the published `predictor/`.

    {folder}/anchors.json      item ids, column indices, predictor name, validation scores,
                               calibration residuals and estimates (and which models they
                               came from),
                               validation residuals and the estimator's parameters (so the
                               suite can reuse the fit: `load_estimator`)
    {folder}/predictor/        predictor.json + weights.npz (`sparseeval.consume.scoring.inference`)

The pipeline's artifacts, `sparseeval fit --out` and published versions all hold this
predictor folder; it loads with NumPy alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.answers.responses import BINARY
from sparseeval.consume.scoring.inference import load_predictor, save_predictor

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
    calibration_predictions_: np.ndarray | None = None  # None: saved before they were

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
    if (scale := getattr(est, "item_scale_", BINARY)) != BINARY:  # binary files as they were
        meta["item_scale"] = scale
    if getattr(est, "calibration_predictions_", None) is not None:
        meta["calibration_predictions"] = [float(p) for p in est.calibration_predictions_]
    if hasattr(est, "valid_residuals_") and hasattr(est, "get_params"):
        meta["valid_residuals"] = [float(r) for r in np.asarray(est.valid_residuals_)]
        meta["estimator"] = estimator_params(est)
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
        _predictions(meta),
    )


def _predictions(meta: dict) -> np.ndarray | None:
    p = meta.get("calibration_predictions")
    return None if p is None else np.asarray(p, dtype=np.float64)


# Parameters that do not change what an estimator learns (threads, where messages go).
RUNTIME_PARAMS = ("progress", "n_jobs")


def estimator_params(est) -> dict[str, Any]:
    """The estimator's parameters that shape its fit, as JSON values (tuples as lists)."""
    params = {k: v for k, v in est.get_params(deep=False).items() if k not in RUNTIME_PARAMS}
    return json.loads(json.dumps(params, default=lambda v: np.asarray(v).tolist()))


def load_estimator(folder: str | Path, template):
    """The saved fit as an estimator of `template`'s configuration, or None when it cannot be.

    None when the fit was saved without the state a reuse needs (validation residuals and
    parameters: fits saved before they were written) or with other parameters than the
    template's. The predictor comes back trainer-side (`registry.predictor_from_state`), so
    it predicts exactly as the saved one. It holds no `selector_`: nothing is selected.
    """
    from sklearn.base import clone

    from sparseeval.method.registry import predictor_from_state

    folder = Path(folder)
    meta = json.loads((folder / ANCHORS_FILE).read_text())
    if "valid_residuals" not in meta or meta.get("estimator") != estimator_params(template):
        return None
    reader = load_predictor(folder / PREDICTOR_DIR)
    est = clone(template)
    est.anchors_ = np.asarray(meta["anchors"], dtype=np.int64)
    est.anchor_ids_ = np.asarray(meta["items"], dtype=object)
    est.item_scale_ = meta.get("item_scale", BINARY)
    est.predictor_ = predictor_from_state(reader.config, reader.arrays)
    est.predictor_name_ = meta["predictor"]
    est.valid_scores_ = dict(meta["valid_scores"])
    est.valid_residuals_ = np.asarray(meta["valid_residuals"], dtype=np.float64)
    est.calibration_residuals_ = np.asarray(meta["calibration_residuals"], dtype=np.float64)
    est.calibration_source_ = meta["calibration_source"]
    est.calibration_predictions_ = _predictions(meta)
    return est


__all__ = [
    "ANCHORS_FILE",
    "PREDICTOR_DIR",
    "RUNTIME_PARAMS",
    "FittedModel",
    "estimator_params",
    "load_estimator",
    "load_fitted",
    "save_fitted",
]
