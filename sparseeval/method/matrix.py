"""The models x items correctness matrix, validated, with its ids.

Item scales: `binary` items are right or wrong, held as +-1 int8; `graded` items have a
score in [0, 1] (F1, ROUGE, a judge's score), held as 2*score - 1, float32 in [-1, 1], so a
graded 0 or 1 is the binary -1 or +1 and every reader reads both alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sparseeval.consume.answers.responses import BINARY, GRADED
from sparseeval.consume.errors import SparseEvalError

MIN_MODELS = 10
MIN_ITEMS = 2
AUTO = "auto"
SCALES = (BINARY, GRADED)


class MatrixError(SparseEvalError, ValueError):
    """The input cannot be read as a correctness matrix."""


@dataclass(frozen=True)
class ResponseMatrix:
    """A +-1 matrix `values` (models x items) with ids, optional targets and its item scale.

    `targets` is each model's full-benchmark accuracy in [0, 1]; when absent it is
    the row mean of the 0/1 results (the benchmark is the items themselves).
    `scale`: `binary` (int8 -1/+1) or `graded` (float32 2*score - 1 in [-1, 1]).
    """

    values: np.ndarray
    model_ids: np.ndarray
    item_ids: np.ndarray
    targets: np.ndarray | None = None
    scale: str = BINARY

    @classmethod
    def from_array(
        cls,
        values: np.ndarray | Sequence[Sequence[float]],
        model_ids: Sequence[str] | None = None,
        item_ids: Sequence[str] | None = None,
        targets: Sequence[float] | None = None,
        min_models: int = MIN_MODELS,
        min_items: int = MIN_ITEMS,
        scale: str = BINARY,
    ) -> ResponseMatrix:
        """Validate 0/1, boolean or +-1 input and store it as +-1 int8; with `scale`
        `graded`, scores in [0, 1] stored as 2*score - 1 (float32)."""
        if scale not in SCALES:
            raise MatrixError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
        signs = graded_signs(values) if scale == GRADED else to_signs(values, scale=BINARY)
        m, n = signs.shape
        if m < min_models or n < min_items:
            raise MatrixError(
                f"need at least {min_models} models and {min_items} items, got {m} x {n}"
            )
        models = _ids(model_ids, m, "model", "m")
        items = _ids(item_ids, n, "item", "i")
        y = None
        if targets is not None:
            y = check_y(np.asarray(targets, dtype=np.float64).reshape(-1), m, what="targets")
        return cls(signs, models, items, y, scale)

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
        return ResponseMatrix(
            self.values[index], self.model_ids[index], self.item_ids, t, self.scale
        )

    def fingerprint(self) -> str:
        """sha256 over ids, values and targets: equal data, equal fingerprint."""
        h = hashlib.sha256()
        for ids in (self.model_ids, self.item_ids):
            h.update("\x1f".join(map(str, ids)).encode())
            h.update(b"\x1e")
        h.update(np.ascontiguousarray(self.values).tobytes())
        if self.targets is not None:
            h.update(np.round(self.targets, 12).tobytes())
        if self.scale != BINARY:  # a binary matrix's fingerprint is what it always was
            h.update(self.scale.encode())
        return h.hexdigest()


def to_signs(
    values: np.ndarray | Sequence[Sequence[float]], what: str = "values", scale: str | None = None
) -> np.ndarray:
    """Map a 0/1, boolean or +-1 2-D array to +-1 int8, or raise MatrixError.

    0/1 (and boolean) answers become -1/+1 explicitly; any other value (NaN included),
    or a mix of 0 and -1, is refused with the first bad cell named by its 1-based row
    and column. Graded values (2*score - 1 in [-1, 1]) come back as float32, as they are:
    with `scale` `graded`, or (None, `auto`) when a float array in [-1, 1] holds a value
    strictly between -1 and 1 other than 0 (a graded matrix of only -1, 0 and +1, half credit and
    nothing else, needs `scale="graded"`: 0 would read as a 0/1 answer).
    """
    if type(values).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{what}: sparse input is not supported; pass a dense 0/1 or +-1 array")
    a = np.asarray(values)
    if a.ndim != 2:
        raise MatrixError(f"{what}: expected a 2-D models x items array, got {a.ndim}-D")
    if np.iscomplexobj(a):
        raise MatrixError(f"{what}: Complex data not supported (answers are 0/1 or +-1)")
    if 0 in a.shape:
        raise MatrixError(f"{what}: {a.shape[0]} sample(s) x {a.shape[1]} feature(s)"
                          f" (shape={a.shape}) while a minimum of 1 is required.")  # fmt: skip
    if scale not in (None, AUTO, *SCALES):
        raise MatrixError(f"scale must be one of auto, {', '.join(SCALES)}, got {scale!r}")
    if a.dtype == bool:
        signs = np.where(a, 1, -1).astype(np.int8)
        return signs.astype(np.float32) if scale == GRADED else signs
    if not np.issubdtype(a.dtype, np.number):
        raise MatrixError(f"{what} must be numeric or boolean, got dtype {a.dtype}")
    if scale == GRADED or (scale != BINARY and _fractional(a)):
        return _graded(a, what, "[-1, 1] (2*score - 1)", -1.0)
    one = a == 1
    minus, zero = a == -1, a == 0
    has_zero, has_minus = bool(zero.any()), bool(minus.any())
    if not (one | minus | zero).all():
        r, c = np.argwhere(~(one | minus | zero))[0]
        v = a[r, c]
        if np.issubdtype(a.dtype, np.floating) and np.isnan(v):
            raise MatrixError(f"{what}: missing value (NaN) at row {r + 1}, column {c + 1}")
        raise MatrixError(
            f"{what} must be 0/1, boolean or -1/+1; found {v.item()!r} at row {r + 1}, "
            f"column {c + 1}"
        )
    if has_zero and has_minus:
        (r0, c0), (r1, c1) = np.argwhere(zero)[0], np.argwhere(minus)[0]
        raise MatrixError(
            f"{what} must be 0/1, boolean or -1/+1, not a mix of 0 and -1 (0 at row {r0 + 1}, "
            f"column {c0 + 1}; -1 at row {r1 + 1}, column {c1 + 1})"
        )
    if has_zero:
        return np.where(one, 1, -1).astype(np.int8)
    return a.astype(np.int8)


def graded_signs(scores, what: str = "values") -> np.ndarray:
    """Graded scores in [0, 1] (2-D) as 2*score - 1, float32; MatrixError naming the first
    cell that is no score (NaN, outside [0, 1])."""
    a = np.asarray(scores)
    if a.ndim != 2 or 0 in a.shape:
        raise MatrixError(f"{what}: expected a non-empty 2-D models x items array of scores")
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise MatrixError(f"{what}: graded scores must be real numbers in [0, 1]")
    _graded(a, what, "[0, 1]", 0.0)
    return (2 * a.astype(np.float64) - 1).astype(np.float32)


def scale_of_scores(values) -> str:
    """`graded` when a table of answers holds a score strictly between 0 and 1 (its 0/1 are
    then scores too), else `binary`: how `from_array` should read a file's table."""
    a = np.asarray(values)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        return BINARY
    return GRADED if bool(((a > 0) & (a < 1)).any()) else BINARY


def _fractional(a: np.ndarray) -> bool:
    """Whether a float array lies in [-1, 1] and holds a value strictly between -1 and 1
    other than 0 (a value outside, NaN included, is refused as a binary answer would be)."""
    if not np.issubdtype(a.dtype, np.floating) or not ((a >= -1) & (a <= 1)).all():
        return False
    return bool(((np.abs(a) < 1) & (a != 0)).any())


def _graded(a: np.ndarray, what: str, bounds: str, low: float) -> np.ndarray:
    """`a` as float32 when every value is in [`low`, 1]; else MatrixError at the first bad cell."""
    bad = ~((a >= low) & (a <= 1))  # NaN fails both
    if bad.any():
        r, c = np.argwhere(bad)[0]
        v = a[r, c]
        if np.isnan(v):
            raise MatrixError(f"{what}: missing value (NaN) at row {r + 1}, column {c + 1}")
        raise MatrixError(f"{what}: graded values must lie in {bounds}; found {v.item()!r} at"
                          f" row {r + 1}, column {c + 1}")  # fmt: skip
    return a.astype(np.float32)


def item_scale(values: np.ndarray) -> str:
    """`graded` for a float matrix of `to_signs`, `binary` for its int8 one."""
    return GRADED if np.issubdtype(np.asarray(values).dtype, np.floating) else BINARY


def check_y(y, n_rows: int | None = None, what: str = "y") -> np.ndarray:
    """Accuracies as a float64 vector in [0, 1], or raise MatrixError.

    Scores in percent are refused with a message that says to divide by 100.
    """
    v = np.asarray(y, dtype=np.float64) if y is not None else None
    if v is None or v.ndim != 1:
        raise MatrixError(f"{what} must be a 1-D vector of accuracies in [0, 1]")
    if n_rows is not None and v.size != n_rows:
        raise MatrixError(f"{what} has {v.size} values for {n_rows} models")
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MatrixError(f"{what}: value {v[i]} at position {i + 1} is not a finite accuracy")
    if v.size and (v.min() < 0 or v.max() > 1):
        if v.min() >= 0 and v.max() <= 100:
            raise MatrixError(
                f"{what} looks like percentages (max {v.max():.1f}): divide by 100 "
                "(accuracies must be in [0, 1])"
            )
        raise MatrixError(
            f"{what} must be accuracies in [0, 1]; found values from {v.min():g} to {v.max():g}"
        )
    return v


def check_Xy(
    X, y, what: str = "training", scale: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The shared input check of every estimator: (+-1 matrix, float64 accuracies).

    `X` in 0/1 (or boolean) is converted to -1/+1 (int8); graded `X` (2*score - 1, see
    `to_signs` and its `scale`) stays float32; `X` with other values (NaN included)
    and `y` outside [0, 1] (e.g. percentages) raise MatrixError (a ValueError).
    """
    require_y(y)
    signs = to_signs(X, what=f"X ({what})" if what else "X", scale=scale)
    return signs, check_y(y, signs.shape[0], what=f"y ({what})" if what else "y")


def require_y(y) -> None:
    """A ValueError when the accuracies `y` a fit needs are missing."""
    if y is None:
        raise ValueError("this estimator requires y to be passed, but the target y is None"
                         " (the models' full-benchmark accuracies)")  # fmt: skip


def row_accuracy(signs: np.ndarray) -> np.ndarray:
    """Mean 0/1 correctness (graded: mean score) of each row of a +-1 matrix."""
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


__all__ = [
    "AUTO",
    "MIN_ITEMS",
    "MIN_MODELS",
    "SCALES",
    "MatrixError",
    "ResponseMatrix",
    "check_Xy",
    "check_y",
    "graded_signs",
    "item_scale",
    "require_y",
    "row_accuracy",
    "scale_of_scores",
    "to_signs",
]
