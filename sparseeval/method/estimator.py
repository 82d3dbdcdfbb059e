"""SparseEval end to end: select anchors, then fit and choose the final predictor."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from sparseeval.consume.errors import SettingsError
from sparseeval.method.anchor_estimator import (
    AnchorEstimator,
    check_fit_input,
    check_item_ids,
    validation_split,
)
from sparseeval.method.matrix import check_Xy, item_scale
from sparseeval.method.memory import keep_freed_memory
from sparseeval.method.predictors import MLPPredictor, fit_all
from sparseeval.method.registry import AUTO, PREDICTOR_CHOICES, fit_candidates
from sparseeval.method.selection import AnchorSelector

log = logging.getLogger("sparseeval")

DEFAULT_INITS = ("kmeans", "random", "greedy")
# refit = "auto" retrains the chosen predictor when validation adds at least this share of rows
REFIT_MIN_SHARE = 0.1


class SparseEval(AnchorEstimator):
    """Anchor selection plus a final predictor chosen on validation error.

    The MLP is an average of `ensemble` seeds; it stops early on a held-out share of
    the training rows, so validation rows stay a fair judge between predictors. With
    `refit`, the chosen predictor is then trained again on training and validation
    rows together (by default only where that adds at least a tenth more rows).

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
    refit : bool or "auto", default="auto"
        Retrain the chosen predictor on training and validation rows together: True
        always, False never, "auto" when the validation rows number at least
        `REFIT_MIN_SHARE` (a tenth) of the training rows. Below that the refit doubles an
        MLP's training time for nothing measurable (metabench, k = 50, 200 validation
        against 3,678-4,876 training models: test MAE +0.011 +- 0.008 points without it;
        bench/RESULTS.md).
    lr : float, default=3e-3
        MLP learning rate.
    epochs : int, default=2000
        Maximum MLP training epochs.
    patience : int, default=20
        MLP early-stopping patience, in epochs.
    batch_size : int or None, default=512
        MLP training rows per Adam step (each epoch a shuffled pass); None: every
        training row at each step (the paper's full batch); 0 as None.
    weight_decay : float, default=0.0
        MLP weight decay.
    dropout : float, default=0.1
        MLP dropout rate.
    ensemble : int, default=3
        Number of MLP seeds averaged.
    seed : int, default=0
        Random seed (ensemble member i uses `seed + i`).
    device : str, default="cpu"
        Torch device the MLPs train on ("cuda": a GPU; same results within the tolerance
        `bench/gpu.py` measures); they predict, and are published, on the CPU.
    n_jobs : int or None, default=None
        MLP ensemble members trained at once, in threads; None: all of them, with
        nnridge beside them (no core idles while the last member trains); 1: one thing
        at a time. The result does not depend on it.
    progress : callable or None, default=None
        Called with one-line progress messages; None logs them at INFO level.
    item_scale : {"auto", "binary", "graded"}, default="auto"
        How `X` is read (`method.matrix.to_signs`): "binary" 0/1 or -1/+1; "graded"
        2*score - 1 in [-1, 1] (a graded score in [0, 1]: F1, a judge's score); "auto"
        graded when a float `X` holds a value strictly between -1 and 1 other than 0.

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
    calibration_predictions_ : ndarray
        The estimates those residuals are of (an adaptive interval's width follows them).
    calibration_source_ : {"validation", "calibration"}
        Where `calibration_residuals_` come from.
    item_scale_ : {"binary", "graded"}
        The scale of the items `fit` read.
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
        refit: bool | str = "auto",
        lr: float = 3e-3,
        epochs: int = 2000,
        patience: int = 20,
        batch_size: int | None = 512,
        weight_decay: float = 0.0,
        dropout: float = 0.1,
        ensemble: int = 3,
        seed: int = 0,
        device: str = "cpu",
        n_jobs: int | None = None,
        progress: Callable[[str], None] | None = None,
        item_scale: str = "auto",
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
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.dropout = dropout
        self.ensemble = ensemble
        self.seed = seed
        self.device = device
        self.n_jobs = n_jobs
        self.progress = progress
        self.item_scale = item_scale

    @classmethod
    def from_config(cls, config: Mapping[str, Any], **overrides: Any) -> SparseEval:
        """The estimator with every constructor parameter `config` names (the pipeline passes
        `Settings.values()`), then `overrides`."""
        names = [n for n in cls._get_param_names() if n in config]
        return cls(**({n: config[n] for n in names} | overrides))

    def fit(self, X, y, *, X_valid=None, y_valid=None, item_ids=None) -> SparseEval:
        """Select anchors on training rows and choose the predictor on validation rows.

        Parameters
        ----------
        X : array-like of shape (n_train, n_items)
            Correctness of the training models on every item: -1/+1, or 0/1 / boolean
            (converted to -1/+1). Other values (NaN included) are refused.
        y : array-like of shape (n_train,)
            Full-benchmark accuracy of the training models, in [0, 1] (not percent).
        X_valid : array-like of shape (n_valid, n_items), default=None
            Correctness of the validation models (at least one row), encoded as `X`.
            None (with `y_valid` None): a seeded fifth of the given rows is held out for
            validation (`validation_split`), so `cross_val_score` and `GridSearchCV`
            can call `fit(X, y)`.
        y_valid : array-like of shape (n_valid,), default=None
            Full-benchmark accuracy of the validation models.
        item_ids : array-like of shape (n_items,), default=None
            Item ids, for `anchor_ids_`; None uses the column indices.

        Returns
        -------
        self : SparseEval
            The fitted estimator.
        """
        if self.predictor not in PREDICTOR_CHOICES:
            raise SettingsError(
                f"predictor must be one of {PREDICTOR_CHOICES}, got {self.predictor!r}"
            )
        if not (isinstance(self.refit, bool) or self.refit == "auto"):
            raise SettingsError(f'refit must be True, False or "auto", got {self.refit!r}')
        scale = self.item_scale
        X, y, X_valid, y_valid = validation_split(X, y, X_valid, y_valid, self.seed, scale)
        X_train, y_train, X_valid, y_valid = self._check_fit_input(
            X, y, X_valid, y_valid, need_valid=True, scale=scale
        )
        self.item_scale_ = item_scale(X_train)
        say = self.progress or log.info
        keep_freed_memory()  # the selection's and the MLPs' big temporaries, step after step
        # One BLAS/OpenMP thread: the same result, bit for bit, at a third of the CPU time
        # (k-means and the ridge fits of the selection; bench/RESULTS.md).
        with threadpool_limits(limits=1):
            self._select_anchors(X_train, y_train, X_valid, y_valid, item_ids, say)
            XA = np.asarray(X_train)[:, self.anchors_]
            XvA = np.asarray(X_valid)[:, self.anchors_]
            y, yv = np.asarray(y_train, dtype=np.float64), np.asarray(y_valid, dtype=np.float64)
            self._choose_predictor(XA, y, XvA, yv, say)
        return self

    def _select_anchors(self, X, y, Xv, yv, item_ids, say: Callable[[str], None]) -> None:
        """The anchor selection step: `selector_`, `anchors_` and `anchor_ids_`."""
        self.selector_ = AnchorSelector(
            self.n_anchors, self.init, tuple(self.init_candidates), self.refine_steps,
            self.acceptance, self.swap_candidates, self.proxy, self.judge,
            seed=self.seed, progress=say,
        ).fit(X, y, Xv, yv, item_ids)  # fmt: skip
        self.anchors_ = self.selector_.anchors_
        ids = check_item_ids(item_ids, X.shape[1])
        self.anchor_ids_ = np.array([str(i) for i in ids[self.anchors_]], dtype=object)

    def _choose_predictor(self, XA, y, XvA, yv, say: Callable[[str], None]) -> None:
        """Fit the candidates on the anchors, keep the lowest validation MAE, then refit it."""
        wanted = AUTO if self.predictor == "auto" else (self.predictor,)
        say(f"training the final predictor ({', '.join(wanted)}) on {len(y):,} models")
        candidates = self._candidates(XA, y)
        self.valid_scores_ = {
            name: float(np.mean(np.abs(p.predict(XvA) - yv))) for name, p in candidates.items()
        }
        self.predictor_name_ = min(self.valid_scores_, key=self.valid_scores_.get)
        self.predictor_ = candidates[self.predictor_name_]
        self.valid_residuals_ = self.predictor_.predict(XvA) - yv
        self.calibration_residuals_ = self.valid_residuals_
        self.calibration_predictions_ = self.valid_residuals_ + yv
        self.calibration_source_ = "validation"
        say(
            "final predictor: "
            + ", ".join(f"{n} {100 * v:.3f}" for n, v in self.valid_scores_.items())
            + f" (validation MAE points) -> {self.predictor_name_}"
        )
        name = self.predictor_name_
        if self.refits(len(y), len(yv)):
            both = np.vstack([XA, XvA]), np.concatenate([y, yv])
            say(f"refitting {name} on {len(both[1]):,} training and validation models")
            self.predictor_ = self._candidates(*both, wanted=(name,))[name]
        elif self.refit == "auto":
            say(f"kept {name} as trained: {len(yv):,} validation models would add "
                f"{len(yv) / len(y):.1%} to {len(y):,} training models (refit = auto refits "
                f"from {REFIT_MIN_SHARE:.0%})")  # fmt: skip

    def refits(self, n_train: int, n_valid: int) -> bool:
        """Whether the chosen predictor is trained again on training and validation rows."""
        if self.refit == "auto":
            return n_valid >= REFIT_MIN_SHARE * n_train
        return bool(self.refit)

    def calibrate(self, X_calib, y_calib) -> SparseEval:
        """Residuals for the prediction intervals, from models no selection step has seen.

        This is the honest path (split conformal): the residuals of the final predictor
        on models exchangeable with new ones and unseen by `fit`. Until it (or
        `cross_calibrate`) is called, `calibration_residuals_` are the validation
        residuals, which under-cover: they come from the predictor before its refit, on
        models that also chose the anchors (under `judge="loo"`), the initialization and
        the predictor (measured on the built-in demo leaderboard: 71-78% test coverage at
        90% nominal, against 89-91% with calibration models; `bench/coverage.py`).

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
        X_calib, y_calib = check_Xy(X_calib, y_calib, "calibration", self.item_scale_)
        self.calibration_predictions_ = self.predict(X_calib)
        self.calibration_residuals_ = self.calibration_predictions_ - y_calib
        self.calibration_source_ = "calibration"
        return self

    def cross_calibrate(
        self, X_train, y_train, X_valid, y_valid, folds: int = 5, item_ids=None
    ) -> SparseEval:
        """Interval residuals by cross-fitting the whole procedure, when no model can be spared.

        The training and validation models are dealt into `folds` folds; for each fold a
        clone of this estimator is fitted, exactly as `fit` does, on the other folds'
        training and validation models (each model keeps its role), and predicts the
        held-out fold. Every labelled model thus gets a residual from a fit that never saw
        it: no selection step, no choice of predictor, no refit. Costs `folds` extra fits.
        The interval is then the fitted estimator's prediction +- the conformal quantile
        of these residuals (cross-conformal with the full-data predictor: the fold fits
        see 1/folds fewer models, so their residuals are, if anything, slightly larger;
        the exact split-conformal guarantee does not hold, measured coverage is in
        `bench/RESULTS.md`). Call it after `fit`, with the same arguments.

        Returns
        -------
        self : SparseEval
            With `calibration_residuals_` (one per training and validation model, training
            first) and `calibration_source_ = "cross-fit"`.
        """
        from sklearn.base import clone

        X, y, Xv, yv = check_fit_input(
            X_train, y_train, X_valid, y_valid, need_valid=True, scale=self.item_scale
        )
        if not 2 <= int(folds) <= min(len(y), len(yv)):
            raise SettingsError(
                f"folds must be in 2..{min(len(y), len(yv))} (the fewer of training and "
                f"validation models), got {folds}"
            )
        rng = np.random.default_rng(self.seed + 7919)
        fold = rng.permutation(len(y)) % folds
        fold_v = rng.permutation(len(yv)) % folds
        residuals = np.empty(len(y) + len(yv))
        quiet = {"progress": lambda s: None} if "progress" in self.get_params() else {}
        for f in range(folds):
            est = clone(self).set_params(**quiet)
            keep, keep_v = fold != f, fold_v != f
            est.fit(X[keep], y[keep], X_valid=Xv[keep_v], y_valid=yv[keep_v], item_ids=item_ids)
            residuals[: len(y)][~keep] = est.predict(X[~keep]) - y[~keep]
            residuals[len(y) :][~keep_v] = est.predict(Xv[~keep_v]) - yv[~keep_v]
        self.calibration_residuals_ = residuals
        self.calibration_predictions_ = residuals + np.concatenate([y, yv])
        self.calibration_source_ = "cross-fit"
        return self

    def fit_reader(self, X, y, name: str | None = None):
        """A final predictor of this configuration (default: the chosen kind) fitted on any columns.

        The suite (`method.suite`) trains its readers of every benchmark's anchors with it.
        """
        name = name or self.predictor_name_
        return self._candidates(np.asarray(X, dtype=np.float32), y, wanted=(name,))[name]

    def fit_mlp_members(self, X, y, hidden: tuple[int, ...] = (128, 64, 32)) -> list:
        """The `ensemble` MLPs of this configuration fitted on X, y (2-D y: one output each).

        Members are trained `n_jobs` at a time in threads; member i is seeded `seed + i`.
        """
        members = [
            MLPPredictor(
                hidden=hidden,
                lr=self.lr,
                epochs=self.epochs,
                patience=self.patience,
                batch_size=self.batch_size,
                weight_decay=self.weight_decay,
                dropout=self.dropout,
                seed=self.seed + i,
                device=self.device,
            )
            for i in range(self.ensemble)
        ]
        return fit_all(members, X, y, self.n_jobs or self.ensemble)

    def _candidates(self, XA, y, wanted: Sequence[str] | None = None) -> dict:
        """Fitted final-predictor candidates by name (`method.registry`: a blend reuses parts)."""
        if wanted is None:
            wanted = AUTO if self.predictor == "auto" else (self.predictor,)
        return fit_candidates(self, XA, y, tuple(wanted), side_by_side=self.n_jobs != 1)

    def predict_anchors(self, XA: np.ndarray) -> np.ndarray:
        return self.predictor_.predict(np.asarray(XA, dtype=np.float32))


__all__ = [
    "DEFAULT_INITS",
    "REFIT_MIN_SHARE",
    "SparseEval",
]
