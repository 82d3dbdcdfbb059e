"""Baselines in the same API as `SparseEval`: `fit(X, y, X_valid, y_valid)`, `predict(X)`.

Every baseline takes `n_anchors` and `seed` (scikit-learn conventions: the constructor
only stores them) and is fitted on ±1 correctness `X` (models x items) and accuracies `y`
in [0, 1]. Every `fit` checks its input with `sparseeval.method.matrix.check_Xy` (through
`anchor_estimator.check_fit_input`): 0/1 or boolean `X` is converted to ±1 explicitly, any other
value (NaN included) is refused naming its 1-based row and column, and `y` outside [0, 1]
(e.g. percentages) is refused with a message to divide by 100.
"""

from __future__ import annotations

import numpy as np

from sparseeval.method.anchor_estimator import AnchorEstimator
from sparseeval.method.matrix import row_accuracy
from sparseeval.method.predictors import MLPPredictor, RidgePredictor
from sparseeval.method.selection import greedy_anchors, kmeans_clusters, random_anchors


class Baseline(AnchorEstimator):
    """Base of the baselines.

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items.
    seed : int, default=0
        Seed of random draws and k-means (unused by deterministic selections).
    """

    def __init__(self, n_anchors: int = 100, seed: int = 0) -> None:
        self.n_anchors = n_anchors
        self.seed = seed

    def fit(self, X, y, X_valid=None, y_valid=None):
        """Choose anchors (and fit a reader of them) from training models.

        Parameters
        ----------
        X : array-like of shape (n_models, n_items)
            Correctness of the training models on every item: -1/+1, or 0/1 / boolean
            (converted to -1/+1). Other values (NaN included) are refused.
        y : array-like of shape (n_models,)
            Full-benchmark accuracy of the training models, in [0, 1] (not percent).
        X_valid, y_valid : array-like, default=None
            Validation models: extra training rows for the ridge baselines,
            early-stopping rows for `LinearGD`, ignored by the others.

        Returns
        -------
        self
            The fitted estimator.
        """
        raise NotImplementedError


class RandomMean(Baseline):
    """k random items; the estimate is their mean correctness.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the randomly chosen anchor items.
    """

    def fit(self, X, y, X_valid=None, y_valid=None) -> RandomMean:
        X, y, _, _ = self._check_fit_input(X, y, X_valid, y_valid)
        rng = np.random.default_rng(self.seed)
        self.anchors_ = random_anchors(X.shape[1], self.n_anchors, rng)
        return self

    def predict_anchors(self, XA):
        return row_accuracy(np.asarray(XA))


class RidgeOnAnchors(Baseline):
    """Ridge calibration (alpha by leave-one-out) on anchors chosen by `_select`.

    Nothing here needs a validation split, so validation rows, when given, are used
    as training rows: every method then learns from the same labelled models.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the anchor items.
    predictor_ : RidgePredictor
        Ridge fitted on the anchor columns.
    """

    def _select(self, X, y) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, y, X_valid=None, y_valid=None) -> RidgeOnAnchors:
        X, y, Xv, yv = self._check_fit_input(X, y, X_valid, y_valid)
        if Xv is not None:
            X, y = np.vstack([X, Xv]), np.concatenate([y, yv])
        X = X.astype(np.float64)
        self.anchors_ = self._select(X, y)
        self.predictor_ = RidgePredictor().fit(X[:, self.anchors_], y)
        return self

    def predict_anchors(self, XA):
        return self.predictor_.predict(XA)


class RandomRidge(RidgeOnAnchors):
    """k random items with a ridge calibration."""

    def _select(self, X, y):
        return random_anchors(X.shape[1], self.n_anchors, np.random.default_rng(self.seed))


class GreedyRidge(RidgeOnAnchors):
    """Forward selection on the ridge residual (a cousin of CIS), then ridge."""

    def _select(self, X, y):
        return greedy_anchors(X, y, self.n_anchors)


class AllItemsRidge(RidgeOnAnchors):
    """Ridge on every item (`n_anchors` unused): the information limit of a linear reader."""

    def _select(self, X, y):
        return np.arange(X.shape[1])


class AnchorPoints(Baseline):
    """k-means medoids of item vectors, weighted by their cluster's size.

    Each weight stays paired with its own cluster's anchor (the reference code sorted
    weights by cluster id but anchors by item index, mismatching them).

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the cluster medoids, sorted.
    weights_ : ndarray of float
        Share of items in each anchor's cluster (sums to 1).
    """

    def fit(self, X, y, X_valid=None, y_valid=None) -> AnchorPoints:
        X, y, _, _ = self._check_fit_input(X, y, X_valid, y_valid)
        anchors, sizes = kmeans_clusters(X, self.n_anchors, self.seed)
        order = np.argsort(anchors)
        self.anchors_, self.weights_ = anchors[order], sizes[order] / sizes.sum()
        return self

    def predict_anchors(self, XA):
        return (np.asarray(XA, dtype=np.float64) + 1) / 2 @ self.weights_


class LinearGD(Baseline):
    """k-means anchors with linear weights learned by gradient descent (Adam, MSE).

    Parameters
    ----------
    n_anchors, seed
        As for every baseline.
    epochs : int, default=2000
        Maximum training epochs.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the k-means medoids, sorted.
    predictor_ : MLPPredictor
        The linear model (no hidden layer, no sigmoid) on the anchor columns.
    """

    def __init__(self, n_anchors: int = 100, seed: int = 0, epochs: int = 2000) -> None:
        super().__init__(n_anchors, seed)
        self.epochs = epochs

    def fit(self, X, y, X_valid=None, y_valid=None) -> LinearGD:
        X, y, Xv, yv = self._check_fit_input(X, y, X_valid, y_valid)
        anchors, _ = kmeans_clusters(X, self.n_anchors, self.seed)
        self.anchors_ = np.sort(anchors)
        self.predictor_ = MLPPredictor(
            hidden=(),
            sigmoid=False,
            lr=1e-2,
            epochs=self.epochs,
            seed=self.seed,
            monotone=False,
        )
        valid = None if Xv is None else Xv[:, self.anchors_]
        self.predictor_.fit(X[:, self.anchors_], y, valid, yv)
        return self

    def predict_anchors(self, XA):
        return self.predictor_.predict(XA)


BASELINES = {
    "random": RandomMean,
    "random+ridge": RandomRidge,
    "anchor-points": AnchorPoints,
    "linear-gd": LinearGD,
    "greedy+ridge": GreedyRidge,
    "all-items-ridge": AllItemsRidge,
}


__all__ = [
    "BASELINES",
    "AllItemsRidge",
    "AnchorPoints",
    "Baseline",
    "GreedyRidge",
    "LinearGD",
    "RandomMean",
    "RandomRidge",
    "RidgeOnAnchors",
]
