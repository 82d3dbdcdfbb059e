"""Fit the pool check of an anchor set (`consume.flags.PoolCheck`) from training arrays."""

from __future__ import annotations

import numpy as np

from sparseeval.consume.flags import PoolCheck, logit, person_fit

# Measured on metabench's held-out groups (`bench/newcomers.py`, bench/results/RESULTS.md).
DEFAULT_RATE = 0.03  # share of calibration models whose answer pattern is flagged
DEFAULT_TAIL = 0.01  # the range is that of the training scores less this share on each side
DEFAULT_MARGIN = 0.0  # accuracy beyond that range before an estimate is flagged
DEFAULT_WIDEN = 2.0  # a flagged estimate's half-width, in multiples of the conformal one
MIN_THRESHOLD_MODELS = 100  # fewer calibration models: the threshold uses the training ones
RIDGE = 1e-2  # keeps the curves finite for anchors every training model got right or wrong


def item_curves(X, values, steps: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """Per-anchor logistic fits P(x_i = +1) = sigmoid(a_i + b_i * logit(value)), by Newton.

    X: models x anchors, +-1; values: each model's estimate. All anchors at once (2 x 2
    systems), with a small ridge on both parameters.
    """
    Y = (np.asarray(X, dtype=np.float64) > 0).astype(np.float64)
    z = logit(values)
    k = Y.shape[1]
    a, b = np.zeros(k), np.ones(k)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a[None, :] + b[None, :] * z[:, None])))
        w, r = p * (1 - p), Y - p
        ga, gb = r.sum(0) - RIDGE * a, (r * z[:, None]).sum(0) - RIDGE * b
        haa = w.sum(0) + RIDGE
        hab = (w * z[:, None]).sum(0)
        hbb = (w * z[:, None] ** 2).sum(0) + RIDGE
        det = haa * hbb - hab**2
        a = a + (hbb * ga - hab * gb) / det
        b = b + (haa * gb - hab * ga) / det
    return a, b


def fit_pool_check(
    X_train,
    pred_train,
    y_train,
    X_calib=None,
    pred_calib=None,
    rate: float = DEFAULT_RATE,
    tail: float = DEFAULT_TAIL,
    margin: float = DEFAULT_MARGIN,
    widen: float = DEFAULT_WIDEN,
) -> PoolCheck:
    """The check of a fitted set: the `tail` and `1 - tail` quantiles of `y_train` as its
    range, curves on the training models' estimates, the l_z threshold at the `rate`
    quantile of the calibration models (of the training models when fewer than
    MIN_THRESHOLD_MODELS calibration models are given)."""
    if not 0.0 < rate < 1.0:
        raise ValueError(f"flag rate must be between 0 and 1, got {rate}")
    low, high = np.quantile(np.asarray(y_train, dtype=np.float64), [tail, 1 - tail])
    a, b = item_curves(X_train, pred_train)
    use_calib = X_calib is not None and len(X_calib) >= MIN_THRESHOLD_MODELS
    Xt, pt = (X_calib, pred_calib) if use_calib else (X_train, pred_train)
    lz = person_fit(Xt, pt, a, b)
    return PoolCheck(
        low=float(low), high=float(high), margin=float(margin),
        a=tuple(map(float, a)), b=tuple(map(float, b)),
        threshold=float(np.quantile(lz, rate)), rate=float(rate), widen=float(widen),
        n_models=len(y_train),
    )  # fmt: skip


def estimator_pool_check(est, X, y, train, calib, **kw) -> PoolCheck:
    """`fit_pool_check` of a fitted estimator (`SparseEval`-like: `anchors_`, `predict`) on the
    rows `train` and `calib` of the full matrix X (keywords as `fit_pool_check`)."""
    X = np.asarray(X)
    XA = lambda r: X[r][:, est.anchors_]  # noqa: E731
    return fit_pool_check(XA(train), est.predict(X[train]), np.asarray(y)[train], XA(calib),
                          est.predict(X[calib]) if len(calib) else None, **kw)  # fmt: skip
