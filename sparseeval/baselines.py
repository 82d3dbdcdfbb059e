"""Baselines in the same API as `SparseEval`: `fit(X, y, X_valid, y_valid)`, `predict(X)`."""

from __future__ import annotations

import numpy as np

from .estimator import AnchorEstimator
from .matrix import row_accuracy
from .predictors import MLPPredictor, RidgePredictor
from .selection import greedy_anchors, kmeans_clusters, random_anchors


class RandomMean(AnchorEstimator):
    """k random items; the estimate is their mean correctness.

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items.
    seed : int, default=0
        Random seed.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the randomly chosen anchor items.
    """

    def __init__(self, n_anchors: int = 100, seed: int = 0) -> None:
        self.n_anchors = n_anchors
        self.seed = seed

    def fit(self, X, y, X_valid=None, y_valid=None) -> RandomMean:
        """Draw `n_anchors` random items.

        Parameters
        ----------
        X : array-like of shape (n_models, n_items)
            Correctness (+1 / -1) of the training models on every item.
        y : array-like of shape (n_models,)
            Full-benchmark accuracy of the training models.
        X_valid : array-like of shape (n_valid, n_items), default=None
            Ignored.
        y_valid : array-like of shape (n_valid,), default=None
            Ignored.

        Returns
        -------
        self : RandomMean
            The fitted estimator.
        """
        self.anchors_ = random_anchors(
            np.shape(X)[1], self.n_anchors, np.random.default_rng(self.seed)
        )
        return self

    def predict_anchors(self, XA):
        return row_accuracy(np.asarray(XA))


class RidgeOnAnchors(AnchorEstimator):
    """Ridge calibration (alpha by leave-one-out) on anchors chosen by `_select`.

    Nothing here needs a validation split, so validation rows, when given, are used
    as training rows: every method then learns from the same labelled models.

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items.
    seed : int, default=0
        Seed of subclasses that draw anchors at random.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the anchor items.
    predictor_ : RidgePredictor
        Ridge fitted on the anchor columns.
    """

    def __init__(self, n_anchors: int = 100, seed: int = 0) -> None:
        self.n_anchors = n_anchors
        self.seed = seed

    def _select(self, X, y) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, y, X_valid=None, y_valid=None) -> RidgeOnAnchors:
        """Select anchors, then fit the ridge on them.

        Parameters
        ----------
        X : array-like of shape (n_models, n_items)
            Correctness (+1 / -1) of the training models on every item.
        y : array-like of shape (n_models,)
            Full-benchmark accuracy of the training models.
        X_valid : array-like of shape (n_valid, n_items), default=None
            Appended to the training rows.
        y_valid : array-like of shape (n_valid,), default=None
            Accuracy of the validation models (appended to `y`).

        Returns
        -------
        self : RidgeOnAnchors
            The fitted estimator.
        """
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if X_valid is not None and len(X_valid):
            X, y = np.vstack([X, np.asarray(X_valid)]), np.concatenate([y, np.asarray(y_valid)])
        self.anchors_ = self._select(X, y)
        self.predictor_ = RidgePredictor().fit(X[:, self.anchors_], y)
        return self

    def predict_anchors(self, XA):
        return self.predictor_.predict(XA)


class RandomRidge(RidgeOnAnchors):
    """k random items with a ridge calibration.

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items.
    seed : int, default=0
        Seed of the random draw.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the anchor items.
    predictor_ : RidgePredictor
        Ridge fitted on the anchor columns.
    """

    def _select(self, X, y):
        return random_anchors(X.shape[1], self.n_anchors, np.random.default_rng(self.seed))


class GreedyRidge(RidgeOnAnchors):
    """Forward selection on the ridge residual (a cousin of CIS), then ridge.

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items.
    seed : int, default=0
        Unused (the selection is deterministic); kept for a common signature.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the anchor items.
    predictor_ : RidgePredictor
        Ridge fitted on the anchor columns.
    """

    def _select(self, X, y):
        return greedy_anchors(X, y, self.n_anchors)


class AllItemsRidge(RidgeOnAnchors):
    """Ridge on every item: the information limit of a linear reader.

    Parameters
    ----------
    n_anchors : int, default=100
        Unused (every item is an anchor); kept for a common signature.
    seed : int, default=0
        Unused; kept for a common signature.

    Attributes
    ----------
    anchors_ : ndarray of int
        Every column index.
    predictor_ : RidgePredictor
        Ridge fitted on the anchor columns.
    """

    def _select(self, X, y):
        return np.arange(X.shape[1])


class AnchorPoints(AnchorEstimator):
    """k-means medoids of item vectors, weighted by their cluster's size.

    Each weight stays paired with its own cluster's anchor (the reference code sorted
    weights by cluster id but anchors by item index, mismatching them).

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items (k-means clusters).
    seed : int, default=0
        Seed of the k-means clustering.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the cluster medoids, sorted.
    weights_ : ndarray of float
        Share of items in each anchor's cluster (sums to 1).
    """

    def __init__(self, n_anchors: int = 100, seed: int = 0) -> None:
        self.n_anchors = n_anchors
        self.seed = seed

    def fit(self, X, y, X_valid=None, y_valid=None) -> AnchorPoints:
        """Cluster the items and weight each medoid by its cluster size.

        Parameters
        ----------
        X : array-like of shape (n_models, n_items)
            Correctness (+1 / -1) of the training models on every item.
        y : array-like of shape (n_models,)
            Full-benchmark accuracy of the training models.
        X_valid : array-like of shape (n_valid, n_items), default=None
            Ignored.
        y_valid : array-like of shape (n_valid,), default=None
            Ignored.

        Returns
        -------
        self : AnchorPoints
            The fitted estimator.
        """
        anchors, sizes = kmeans_clusters(np.asarray(X), self.n_anchors, self.seed)
        order = np.argsort(anchors)
        self.anchors_, self.weights_ = anchors[order], sizes[order] / sizes.sum()
        return self

    def predict_anchors(self, XA):
        return (np.asarray(XA, dtype=np.float64) + 1) / 2 @ self.weights_


class LinearGD(AnchorEstimator):
    """k-means anchors with linear weights learned by gradient descent (Adam, MSE).

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items.
    seed : int, default=0
        Random seed.
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
        self.n_anchors = n_anchors
        self.seed = seed
        self.epochs = epochs

    def fit(self, X, y, X_valid=None, y_valid=None) -> LinearGD:
        """Choose k-means anchors and train the linear weights.

        Parameters
        ----------
        X : array-like of shape (n_models, n_items)
            Correctness (+1 / -1) of the training models on every item.
        y : array-like of shape (n_models,)
            Full-benchmark accuracy of the training models.
        X_valid : array-like of shape (n_valid, n_items), default=None
            Early-stopping rows; None holds out a share of the training rows.
        y_valid : array-like of shape (n_valid,), default=None
            Accuracy of the validation models.

        Returns
        -------
        self : LinearGD
            The fitted estimator.
        """
        anchors, _ = kmeans_clusters(np.asarray(X), self.n_anchors, self.seed)
        self.anchors_ = np.sort(anchors)
        self.predictor_ = MLPPredictor(
            hidden=(), sigmoid=False, lr=1e-2, epochs=self.epochs, seed=self.seed
        )
        self.predictor_.fit(
            np.asarray(X)[:, self.anchors_],
            y,
            None if X_valid is None else np.asarray(X_valid)[:, self.anchors_],
            y_valid,
        )
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
