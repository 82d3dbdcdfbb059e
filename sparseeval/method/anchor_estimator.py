"""The base of every anchor method, and the input checks every `fit` shares."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from sparseeval.method.matrix import MatrixError, check_Xy, item_scale, require_y, to_signs


class AnchorEstimator(RegressorMixin, BaseEstimator):
    """Base of every method: learned `anchors_` (item columns) and a reader of them.

    A scikit-learn regressor: `score` is R² of the estimated accuracies.

    Subclasses follow scikit-learn conventions: `__init__` only stores its arguments,
    `fit` validates them and sets the learned attributes (trailing underscore).

    Every `fit` checks its input with `sparseeval.method.matrix.check_Xy`: correctness `X` may be
    -1/+1, 0/1 or boolean (0/1 and boolean are converted to -1/+1 explicitly); any other
    value, NaN included, is refused naming its 1-based row and column; accuracies `y` must
    lie in [0, 1] (scores in percent are refused with a message to divide by 100).

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the anchor items, set by `fit`.
    """

    anchors_: np.ndarray
    n_features_in_: int

    def _check_fit_input(
        self, X, y, X_valid=None, y_valid=None, need_valid: bool = False, scale=None
    ):
        """`check_fit_input`, recording the number of items seen (`n_features_in_`)."""
        X, y, Xv, yv = check_fit_input(X, y, X_valid, y_valid, need_valid, scale)
        self.n_features_in_ = X.shape[1]
        return X, y, Xv, yv

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Estimated accuracy from the full-width correctness matrix (only anchors are read).

        Parameters
        ----------
        X : array-like of shape (n_models, n_items)
            Correctness of each model on every item: -1/+1, or 0/1 / boolean (converted
            to -1/+1).

        Returns
        -------
        ndarray of shape (n_models,)
            Estimated full-benchmark accuracy of each model.
        """
        check_is_fitted(self, "anchors_")
        X = to_signs(X, what="X", scale=getattr(self, "item_scale_", None))
        n_items = getattr(self, "n_features_in_", None)  # None: a fit read back from disk
        if n_items is not None and X.shape[1] != n_items:
            raise MatrixError(
                f"X has {X.shape[1]} items per model; this estimator was fitted on {n_items}"
                " (pass every item, in the fitted order)"
            )
        return self.predict_anchors(X[:, self.anchors_])

    def predict_anchors(self, XA: np.ndarray) -> np.ndarray:
        """Estimated accuracy from the +-1 anchor columns only, shape (n_models, n_anchors)."""
        raise NotImplementedError


def check_fit_input(
    X, y, X_valid=None, y_valid=None, need_valid: bool = False, scale: str | None = None
):
    """`check_Xy` on the training rows and, when given, the validation rows.

    Returns (X, y, X_valid, y_valid) with X as +-1 (int8; graded: float32, `to_signs`'s
    `scale`) and y as float64 (validation entries None when not given). Raises MatrixError
    (a ValueError); graded training rows make the validation rows graded too.
    """
    X, y = check_Xy(X, y, "training", scale)
    if X_valid is None or len(X_valid) == 0:
        if need_valid:
            raise MatrixError("SparseEval needs validation models to choose its predictor; got 0")
        return X, y, None, None
    Xv, yv = check_Xy(X_valid, y_valid, "validation", item_scale(X))
    if Xv.shape[1] != X.shape[1]:
        raise MatrixError(f"X (validation) has {Xv.shape[1]} items, X (training) has {X.shape[1]}")
    return X, y, Xv, yv


VALID_FRACTION = 0.2  # of the given rows, held out by `fit(X, y)` without validation rows


def validation_split(X, y, X_valid, y_valid, seed: int = 0, scale: str | None = None) -> tuple:
    """(X, y, X_valid, y_valid): as given, or, when neither validation part is given, the
    rows of X, y split into training and a seeded `VALID_FRACTION` for validation."""
    if X_valid is not None or y_valid is not None:
        if X_valid is None or y_valid is None:
            raise MatrixError("give both X_valid and y_valid, or neither")
        return X, y, X_valid, y_valid
    require_y(y)
    X, y = to_signs(X, what="X", scale=scale), np.asarray(y)
    if len(y) < 2:
        raise MatrixError(f"n_samples={len(y)}: 1 sample cannot be split into training and"
                          " validation models; give at least 2")  # fmt: skip
    n_valid = max(1, round(VALID_FRACTION * len(y)))
    order = np.random.default_rng(seed).permutation(len(y))
    valid, train = np.sort(order[:n_valid]), np.sort(order[n_valid:])
    return X[train], y[train], X[valid], y[valid]


def check_item_ids(item_ids, n_items: int) -> np.ndarray:
    """Item ids as an array of `n_items` (None: the column indices); MatrixError otherwise."""
    if item_ids is None:
        return np.arange(n_items)
    ids = np.asarray(item_ids)
    if ids.shape != (n_items,):
        raise MatrixError(f"item_ids has {ids.size} ids for {n_items} items")
    return ids


__all__ = [
    "VALID_FRACTION",
    "AnchorEstimator",
    "check_fit_input",
    "check_item_ids",
    "validation_split",
]
