"""The models x items correctness matrix, validated, with its ids."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_MODELS = 10
MIN_ITEMS = 2


class MatrixError(ValueError):
    """The input cannot be read as a correctness matrix."""


@dataclass(frozen=True)
class ResponseMatrix:
    """A +-1 int8 matrix `values` (models x items) with ids and optional targets.

    `targets` is each model's full-benchmark accuracy in [0, 1]; when absent it is
    the row mean of the 0/1 results (the benchmark is the items themselves).
    """

    values: np.ndarray
    model_ids: np.ndarray
    item_ids: np.ndarray
    targets: np.ndarray | None = None

    @classmethod
    def from_array(
        cls,
        values: np.ndarray | Sequence[Sequence[float]],
        model_ids: Sequence[str] | None = None,
        item_ids: Sequence[str] | None = None,
        targets: Sequence[float] | None = None,
        min_models: int = MIN_MODELS,
        min_items: int = MIN_ITEMS,
    ) -> ResponseMatrix:
        """Validate 0/1, boolean or +-1 input and store it as +-1 int8."""
        signs = to_signs(values)
        m, n = signs.shape
        if m < min_models or n < min_items:
            raise MatrixError(
                f"need at least {min_models} models and {min_items} items, got {m} x {n}"
            )
        models = _ids(model_ids, m, "model", "m")
        items = _ids(item_ids, n, "item", "i")
        y = None
        if targets is not None:
            y = np.asarray(targets, dtype=np.float64).reshape(-1)
            if y.shape != (m,):
                raise MatrixError(f"targets has {y.size} values for {m} models")
            if not np.all(np.isfinite(y)) or y.min() < 0 or y.max() > 1:
                raise MatrixError("targets must be finite accuracies in [0, 1]")
        return cls(signs, models, items, y)

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape  # type: ignore[return-value]

    @property
    def y(self) -> np.ndarray:
        """Full-benchmark accuracy per model (given targets, else the row mean)."""
        return self.targets if self.targets is not None else row_accuracy(self.values)

    def rows(self, index: np.ndarray) -> ResponseMatrix:
        """The sub-matrix of the given model rows."""
        t = None if self.targets is None else self.targets[index]
        return ResponseMatrix(self.values[index], self.model_ids[index], self.item_ids, t)

    def fingerprint(self) -> str:
        """sha256 over ids, values and targets: equal data, equal fingerprint."""
        h = hashlib.sha256()
        for ids in (self.model_ids, self.item_ids):
            h.update("\x1f".join(map(str, ids)).encode())
            h.update(b"\x1e")
        h.update(np.ascontiguousarray(self.values).tobytes())
        if self.targets is not None:
            h.update(np.round(self.targets, 12).tobytes())
        return h.hexdigest()


def to_signs(values: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Map a 0/1, boolean or +-1 2-D array to +-1 int8, or raise MatrixError."""
    a = np.asarray(values)
    if a.ndim != 2:
        raise MatrixError(f"expected a 2-D models x items array, got {a.ndim}-D")
    if a.dtype == bool:
        return np.where(a, 1, -1).astype(np.int8)
    if not np.issubdtype(a.dtype, np.number):
        raise MatrixError(f"values must be numeric or boolean, got dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.floating) and np.isnan(a).any():
        r, c = np.argwhere(np.isnan(a))[0]
        raise MatrixError(f"missing value (NaN) at row {r}, column {c}")
    seen = set(np.unique(a).tolist())
    if seen <= {0, 1}:
        return (2 * a - 1).astype(np.int8)
    if seen <= {-1, 1}:
        return a.astype(np.int8)
    bad = sorted(seen - {-1, 0, 1})[:5] or ["a mix of 0 and -1"]
    raise MatrixError(f"values must be 0/1, boolean or -1/+1; found {bad}")


def row_accuracy(signs: np.ndarray) -> np.ndarray:
    """Mean 0/1 correctness of each row of a +-1 matrix."""
    return (signs.astype(np.float64).mean(axis=1) + 1.0) / 2.0


def _ids(ids: Sequence[str] | None, size: int, kind: str, prefix: str) -> np.ndarray:
    if ids is None:
        return np.array([f"{prefix}{i}" for i in range(size)], dtype=object)
    out = np.array([str(i) for i in ids], dtype=object)
    if out.shape != (size,):
        raise MatrixError(f"got {out.size} {kind} ids for {size} {kind}s")
    uniq, counts = np.unique(out.astype(str), return_counts=True)
    if (counts > 1).any():
        raise MatrixError(f"duplicate {kind} ids: {', '.join(uniq[counts > 1][:5])}")
    return out
