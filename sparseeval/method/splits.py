"""Train / validation / test splits of models: seeded, or stable under new arrivals."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sparseeval.consume.errors import SettingsError
from sparseeval.method.matrix import MatrixError


@dataclass(frozen=True)
class Split:
    """Row indices of the training, validation and test models."""

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray

    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "valid": len(self.valid), "test": len(self.test)}


def model_count(size: float, total: int) -> int:
    """A count given as a count (>= 1) or a fraction of `total` (< 1)."""
    if size < 0:
        raise SettingsError(f"split size must be >= 0, got {size}")
    return round(size * total) if size < 1 else int(size)


def split_models(
    model_ids: Sequence[str],
    n_test: float = 200,
    n_valid: float = 200,
    seed: int = 0,
    stable: bool = False,
    min_train: int = 5,
) -> Split:
    """Split models into train / valid / test.

    Sizes are counts (>= 1) or fractions of all models (< 1). With `stable=True`
    each model's split depends only on a hash of its id (and the seed), so a model
    keeps its split when new models arrive; sizes then hold in expectation.
    """
    m = len(model_ids)
    t, v = model_count(n_test, m), model_count(n_valid, m)
    if m - t - v < min_train:
        raise MatrixError(
            f"{m} models leave {m - t - v} for training after {t} test and {v} validation; "
            f"need at least {min_train}"
        )
    if stable:
        u = np.array([_unit_hash(str(mid), seed) for mid in model_ids])
        test = np.flatnonzero(u < t / m)
        valid = np.flatnonzero((u >= t / m) & (u < (t + v) / m))
        train = np.flatnonzero(u >= (t + v) / m)
    else:
        order = np.random.default_rng(seed).permutation(m)
        test, valid, train = np.sort(order[:t]), np.sort(order[t : t + v]), np.sort(order[t + v :])
    return Split(train=train, valid=valid, test=test)


def _unit_hash(model_id: str, seed: int) -> float:
    """A uniform number in [0, 1) determined by the id and seed only."""
    digest = hashlib.sha256(f"{seed}:{model_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def calibration_split(
    model_ids: np.ndarray,
    train: np.ndarray,
    n_calib: float,
    calibration: str = "split",
    seed: int = 0,
    stable: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Set aside up to `n_calib` training models (at most a fifth) that only calibrate intervals.

    Validation models also choose anchors and the predictor, so their residuals are
    optimistic; these models are never seen by any selection step. Fewer than 10, or
    `calibration = "cross"` (residuals from cross-fits instead) -> none.
    """
    n_cal = min(int(n_calib), len(train) // 5) if calibration == "split" else 0
    if n_cal < 10:
        return train, train[:0]
    part = split_models(model_ids[train], n_test=n_cal, n_valid=0, seed=seed + 1, stable=stable,
                        min_train=1)  # fmt: skip
    return train[part.train], train[part.test]


__all__ = [
    "Split",
    "calibration_split",
    "model_count",
    "split_models",
]
