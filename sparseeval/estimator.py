"""SparseEval end to end: select anchors, then fit and choose the final predictor."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.base import BaseEstimator

from .predictors import BlendPredictor, MLPPredictor, NonNegativeRidge, RidgePredictor
from .selection import PAPER_INITS, AnchorSelector

log = logging.getLogger("sparseeval")

DEFAULT_INITS = ("kmeans", "random", "greedy")
PREDICTORS = ("auto", "mlp", "ridge", "nnridge", "blend")
LINEAR = {"ridge": RidgePredictor, "nnridge": NonNegativeRidge}
AUTO = ("nnridge", "mlp", "blend")  # the candidates of predictor="auto"
# `Settings` fields that configure the estimator (same names, same defaults).
SETTING_NAMES = (
    "n_anchors", "init", "refine_steps", "acceptance", "swap_candidates", "proxy", "judge",
    "predictor", "refit", "lr", "epochs", "patience", "weight_decay", "dropout", "ensemble",
    "seed",
)  # fmt: skip


class AnchorEstimator(BaseEstimator):
    """Base of every method: learned `anchors_` (item columns) and a reader of them.

    Subclasses follow scikit-learn conventions: `__init__` only stores its arguments,
    `fit` validates them and sets the learned attributes (trailing underscore).

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the anchor items, set by `fit`.
    """

    anchors_: np.ndarray

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Estimated accuracy from the full-width +-1 matrix (only anchor columns are read).

        Parameters
        ----------
        X : array-like of shape (n_models, n_items)
            Correctness (+1 / -1) of each model on every item.

        Returns
        -------
        ndarray of shape (n_models,)
            Estimated full-benchmark accuracy of each model.
        """
        return self.predict_anchors(np.asarray(X)[:, self.anchors_])

    def predict_anchors(self, XA: np.ndarray) -> np.ndarray:
        """Estimated accuracy from the anchor columns only, shape (n_models, n_anchors)."""
        raise NotImplementedError


class SparseEval(AnchorEstimator):
    """Anchor selection plus a final predictor chosen on validation error.

    The MLP is an average of `ensemble` seeds; it stops early on a held-out share of
    the training rows, so validation rows stay a fair judge between predictors. With
    `refit`, the chosen predictor is then trained again on training and validation
    rows together.

    Parameters
    ----------
    n_anchors : int, default=100
        Number of anchor items to select.
    init : str, default="adaptive"
        Anchor initialization: "random", "kmeans", "greedy", "adaptive" (best of
        `init_candidates`) or a sequence of item indices (see `AnchorSelector`).
    init_candidates : sequence of str, default=("kmeans", "random", "greedy")
        Initializations tried by `init="adaptive"`.
    refine_steps : int, default=40
        Maximum number of AIS/CIS swap steps.
    acceptance : {"validated", "always"}, default="validated"
        Whether a swap is kept only if held-out MAE falls, or always.
    swap_candidates : int, default=3
        CIS items tried per step under `acceptance="validated"`.
    proxy : {"ridge", "mlp"}, default="ridge"
        Predictor used to score anchor sets during selection.
    judge : {"loo", "validation"}, default="loo"
        How anchor sets are scored during selection (see `AnchorSelector`).
    predictor : {"auto", "mlp", "ridge", "nnridge", "blend"}, default="auto"
        Final predictor: "mlp" (the paper), "ridge", "nnridge" (ridge with
        non-negative weights), "blend" (mean of the MLP and nnridge) or "auto"
        (whichever of nnridge, MLP and blend has the lowest validation MAE).
    refit : bool, default=True
        Retrain the chosen predictor on training and validation rows together.
    lr : float, default=3e-3
        MLP learning rate.
    epochs : int, default=2000
        Maximum MLP training epochs.
    patience : int, default=50
        MLP early-stopping patience, in epochs.
    weight_decay : float, default=0.0
        MLP weight decay.
    dropout : float, default=0.1
        MLP dropout rate.
    ensemble : int, default=3
        Number of MLP seeds averaged.
    seed : int, default=0
        Random seed (ensemble member i uses `seed + i`).
    progress : callable or None, default=None
        Called with one-line progress messages; None logs them at INFO level.

    Attributes
    ----------
    anchors_ : ndarray of int
        Column indices of the selected anchor items.
    anchor_ids_ : ndarray of str
        Item ids of the anchors.
    selector_ : AnchorSelector
        The fitted anchor selector.
    valid_scores_ : dict of str to float
        Validation MAE of each candidate predictor.
    predictor_name_ : str
        Name of the chosen predictor.
    predictor_ : object
        The fitted final predictor (reads the anchor columns).
    valid_residuals_ : ndarray of shape (n_valid,)
        Prediction minus truth on validation rows (before any refit).
    calibration_residuals_ : ndarray
        Residuals for prediction intervals: the validation residuals until
        `calibrate` is called.
    calibration_source_ : {"validation", "calibration"}
        Where `calibration_residuals_` come from.
    """

    def __init__(
        self,
        n_anchors: int = 100,
        init: str = "adaptive",
        init_candidates: Sequence[str] = DEFAULT_INITS,
        refine_steps: int = 40,
        acceptance: str = "validated",
        swap_candidates: int = 3,
        proxy: str = "ridge",
        judge: str = "loo",
        predictor: str = "auto",
        refit: bool = True,
        lr: float = 3e-3,
        epochs: int = 2000,
        patience: int = 50,
        weight_decay: float = 0.0,
        dropout: float = 0.1,
        ensemble: int = 3,
        seed: int = 0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.n_anchors = n_anchors
        self.init = init
        self.init_candidates = init_candidates
        self.refine_steps = refine_steps
        self.acceptance = acceptance
        self.swap_candidates = swap_candidates
        self.proxy = proxy
        self.judge = judge
        self.predictor = predictor
        self.refit = refit
        self.lr = lr
        self.epochs = epochs
        self.patience = patience
        self.weight_decay = weight_decay
        self.dropout = dropout
        self.ensemble = ensemble
        self.seed = seed
        self.progress = progress

    @classmethod
    def paper(cls, n_anchors: int = 100, seed: int = 0, **kw) -> SparseEval:
        """The paper's recipe: k-means/random init, 10 blind AIS/CIS swaps, one MLP."""
        return cls(
            n_anchors,
            init_candidates=PAPER_INITS,
            refine_steps=10,
            acceptance="always",
            proxy="mlp",
            judge="validation",
            predictor="mlp",
            refit=False,
            lr=5e-4,
            ensemble=1,
            seed=seed,
            **kw,
        )

    @classmethod
    def from_settings(cls, settings, **overrides) -> SparseEval:
        """The estimator the pipeline runs, configured by a `Settings` object."""
        return cls(**({n: getattr(settings, n) for n in SETTING_NAMES} | overrides))

    def fit(self, X_train, y_train, X_valid, y_valid, item_ids=None) -> SparseEval:
        """Select anchors on training rows and choose the predictor on validation rows.

        Parameters
        ----------
        X_train : array-like of shape (n_train, n_items)
            Correctness (+1 / -1) of the training models on every item.
        y_train : array-like of shape (n_train,)
            Full-benchmark accuracy of the training models.
        X_valid : array-like of shape (n_valid, n_items)
            Correctness of the validation models (at least one row).
        y_valid : array-like of shape (n_valid,)
            Full-benchmark accuracy of the validation models.
        item_ids : array-like of shape (n_items,), default=None
            Item ids, for `anchor_ids_`; None uses the column indices.

        Returns
        -------
        self : SparseEval
            The fitted estimator.
        """
        if self.predictor not in PREDICTORS:
            raise ValueError(f"predictor must be one of {PREDICTORS}, got {self.predictor!r}")
        if len(X_valid) == 0:
            raise ValueError("SparseEval needs validation models to choose its predictor; got 0")
        say = self.progress or log.info
        self.selector_ = AnchorSelector(
            self.n_anchors,
            self.init,
            tuple(self.init_candidates),
            self.refine_steps,
            self.acceptance,
            self.swap_candidates,
            self.proxy,
            self.judge,
            seed=self.seed,
            progress=say,
        ).fit(X_train, y_train, X_valid, y_valid)
        self.anchors_ = self.selector_.anchors_
        ids = np.arange(np.shape(X_train)[1]) if item_ids is None else np.asarray(item_ids)
        self.anchor_ids_ = np.array([str(i) for i in ids[self.anchors_]], dtype=object)
        XA, XvA = np.asarray(X_train)[:, self.anchors_], np.asarray(X_valid)[:, self.anchors_]
        y, yv = np.asarray(y_train, dtype=np.float64), np.asarray(y_valid, dtype=np.float64)
        candidates = self._candidates(XA, y)
        self.valid_scores_ = {
            name: float(np.mean(np.abs(p.predict(XvA) - yv))) for name, p in candidates.items()
        }
        self.predictor_name_ = min(self.valid_scores_, key=self.valid_scores_.get)
        self.predictor_ = candidates[self.predictor_name_]
        self.valid_residuals_ = self.predictor_.predict(XvA) - yv
        self.calibration_residuals_ = self.valid_residuals_
        self.calibration_source_ = "validation"
        say(
            "final predictor: "
            + ", ".join(f"{n} {100 * v:.3f}" for n, v in self.valid_scores_.items())
            + f" (validation MAE points) -> {self.predictor_name_}"
        )
        if self.refit:
            name = self.predictor_name_
            both = np.vstack([XA, XvA]), np.concatenate([y, yv])
            self.predictor_ = self._candidates(*both, wanted=(name,))[name]
        return self

    def calibrate(self, X_calib, y_calib) -> SparseEval:
        """Residuals for the prediction intervals, from models no selection step has seen.

        Until called, `calibration_residuals_` are the validation residuals, which are
        optimistic: validation rows also chose the initialization, swaps and predictor.

        Parameters
        ----------
        X_calib : array-like of shape (n_calib, n_items)
            Correctness of calibration models, unseen by `fit`.
        y_calib : array-like of shape (n_calib,)
            Their full-benchmark accuracy.

        Returns
        -------
        self : SparseEval
            The estimator, with `calibration_residuals_` replaced.
        """
        self.calibration_residuals_ = self.predict(X_calib) - np.asarray(y_calib, dtype=np.float64)
        self.calibration_source_ = "calibration"
        return self

    def _mlp(self, XA, y):
        members = [
            MLPPredictor(
                lr=self.lr,
                epochs=self.epochs,
                patience=self.patience,
                weight_decay=self.weight_decay,
                dropout=self.dropout,
                seed=self.seed + i,
            ).fit(XA, y)
            for i in range(self.ensemble)
        ]
        return (
            members[0]
            if len(members) == 1
            else BlendPredictor(members, [1 / len(members)] * len(members))
        )

    def _candidates(self, XA, y, wanted: Sequence[str] | None = None) -> dict:
        """Fitted final-predictor candidates by name (the blend reuses its members)."""
        if wanted is None:
            wanted = AUTO if self.predictor == "auto" else (self.predictor,)
        needed = set(wanted) | ({"mlp", "nnridge"} if "blend" in wanted else set())
        out = {name: cls().fit(XA, y) for name, cls in LINEAR.items() if name in needed}
        if "mlp" in needed:
            out["mlp"] = self._mlp(XA, y)
        if "blend" in needed:
            out["blend"] = BlendPredictor([out["mlp"], out["nnridge"]], [0.5, 0.5])
        return {name: p for name, p in out.items() if name in wanted}

    def predict_anchors(self, XA: np.ndarray) -> np.ndarray:
        return self.predictor_.predict(np.asarray(XA, dtype=np.float32))
