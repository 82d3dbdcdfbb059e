"""Fit the pool check of an anchor set (`consume.scoring.flags.PoolCheck`) from training arrays."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from sparseeval.consume.errors import SettingsError
from sparseeval.consume.scoring.conformal import conformal_quantile
from sparseeval.consume.scoring.flags import Edge, PoolCheck, Saturation, logit, person_fit
from sparseeval.method.item_curves import fit_logistic

# Measured on metabench's held-out groups (`bench/newcomers.py`, bench/RESULTS.md).
DEFAULT_RATE = 0.02  # share of training + calibration models whose pattern is flagged (3%:
# 2.8-5.4% of random held-out metabench models flagged in all, ARC over the 5% target)
DEFAULT_TAIL = 0.01  # the range: training models' estimates less this share on each side
DEFAULT_MARGIN = 0.0  # accuracy beyond that range before an estimate is flagged
# A flagged estimate's half-width, in multiples of the conformal one: the smallest whole
# factor that covers flagged held-out models at nominal in every group measured; the suite's
# readers take 4, which the suite average needs on the strongest decile (86.2% at 3).
DEFAULT_WIDEN = 3.0
SUITE_WIDEN = 4.0
# The pool's top share by target, held out to fit the top edge: 0.1 and 0.15 (tried on earlier
# forms of the zone) left ARC's strongest metabench decile at 84% and 88%; at 0.2 every
# benchmark's is >= 87% (bench/RESULTS.md). No bottom edge: next models are
# stronger (a bottom one cost ARC 27% more width on random models for nothing measured).
EDGE_TAIL = 0.2
# The share of the zone over which its upper half-width grows from the nearer held-out half's
# miss to the far half's (`fit_edge`): 0 (a step, as before) left MMLU's random-model width
# +23.8% over no edge; 0.5 +16.1%, 0.625 +14.0%, with ARC's strongest decile at 91.1, 89.2,
# 88.7% (5 seeds, bench/RESULTS.md).
EDGE_RAMP = 0.625
# The suite's readers keep the step: at 0.625 the suite's ARC own reader covered metabench's
# strongest decile 83.0 / 85.4% (k = 50, seeds 0 / 1), as a step 86.2 / 87.0%
# (bench/RESULTS.md).
SUITE_RAMP = 0.0
MIN_TAIL = 10  # fewer models held out (or left): no edge
# Saturation (`fit_saturation`): the zone starts at this quantile of the estimates of the
# pool's strongest SATURATION_SHARE of models (at least MIN_TAIL). On metabench (k = 50) a
# share of 0.005 or 10 models, at 0.1, flags every one of ARC's and GSM8K's 10 strongest
# held-out models (0.25: 7 and 10 of 10 at 40 models) and 14% of ARC's random ones.
SATURATION_SHARE = 0.005
SATURATION_QUANTILE = 0.1
STEP = 1.0  # largest Newton step per parameter (full steps overshoot on near-separable anchors)


def item_curves(X, values, steps: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Per-anchor logistic fits P(x_i = +1) = sigmoid(a_i + b_i * logit(value))
    (`item_curves.fit_logistic` from (0, 1), steps of at most STEP, slopes of any sign).

    X: models x anchors, +-1 (graded: 2*score - 1, fit as the score); values: each model's
    estimate.
    """
    Y = (np.asarray(X, dtype=np.float64) + 1) / 2
    return fit_logistic(Y, logit(values), steps, start="zero", max_step=STEP, monotone=False)


def fit_pool_check(
    X_train,
    pred_train,
    X_calib=None,
    pred_calib=None,
    rate: float = DEFAULT_RATE,
    tail: float = DEFAULT_TAIL,
    margin: float = DEFAULT_MARGIN,
    widen: float = DEFAULT_WIDEN,
) -> PoolCheck:
    """The check of a fitted set: the `tail` and `1 - tail` quantiles of the training
    models' estimates as its range (a predictor shrinks toward the middle: new models
    beyond its pool pile up at the edge of its estimates, not of the true scores), curves
    on those estimates, the l_z threshold at the `rate` quantile of the training and
    calibration models together (200 calibration models alone make a noisy 3% quantile:
    3-6% of random held-out metabench models flagged, against 1.5-3.7% pooled)."""
    if not 0.0 < rate < 1.0:
        raise SettingsError(f"flag rate must be between 0 and 1, got {rate}")
    low, high = np.quantile(np.asarray(pred_train, dtype=np.float64), [tail, 1 - tail])
    a, b = item_curves(X_train, pred_train)
    lz = person_fit(X_train, pred_train, a, b)
    if X_calib is not None and len(X_calib):
        lz = np.concatenate([lz, person_fit(X_calib, pred_calib, a, b)])
    return PoolCheck(
        low=float(low), high=float(high), margin=float(margin),
        a=tuple(map(float, a)), b=tuple(map(float, b)),
        threshold=float(np.quantile(lz, rate)), rate=float(rate), widen=float(widen),
        n_models=len(pred_train),
    )  # fmt: skip


def estimator_pool_check(
    est, X_train, X_calib, y_train=None, level: float = 0.9, edge_tail: float = EDGE_TAIL,
    edge_ramp: float = EDGE_RAMP, fit_reader: Callable | None = None, **kw,
) -> PoolCheck:  # fmt: skip
    """`fit_pool_check` of a fitted estimator (`SparseEval`-like: `anchors_`, `predict`) from
    its training and calibration models' answers on every item (keywords as there); with
    the training targets `y_train` and an estimator that can refit its reader, its top edge
    too (`fit_edge`, at interval level `level`, holding out `edge_tail`, ramped over
    `edge_ramp` of its zone), the reader refitted by `fit_reader` (default `est.fit_reader`)."""
    Xt, Xc = np.asarray(X_train), np.asarray(X_calib)
    pred, pred_c = est.predict(Xt), est.predict(Xc) if len(Xc) else None
    check = fit_pool_check(Xt[:, est.anchors_], pred, Xc[:, est.anchors_], pred_c, **kw)
    if y_train is None or not hasattr(est, "fit_reader"):
        return check
    refit = fit_reader or est.fit_reader
    fit = lambda X, y: refit(X, y).predict  # noqa: E731
    XA = Xt[:, est.anchors_]
    check = with_edge(check, fit, XA, y_train, pred, level, edge_tail, ramp=edge_ramp)
    return with_saturation(check, est.predict_anchors, XA, y_train, pred)


def with_saturation(check: PoolCheck, read: Callable, XA, y, pred) -> PoolCheck:
    """`check` with the `Saturation` of a reader `read` of the anchors whose training
    answers are `XA` (models x anchors, +-1), targets `y` and estimates `pred`."""
    return replace(check, saturation=fit_saturation(read, np.shape(XA)[1], y, pred, XA))


def fit_saturation(read: Callable, k: int, y, pred=None, XA=None) -> Saturation | None:
    """Where `read` (+-1 sheets of `k` anchors -> estimates) stops telling models apart.

    `top`: the lower of the median estimate of the k sheets with every anchor right but one
    (the median: one heavy anchor wrong says much, and would else stretch the zone over most
    models, as TruthfulQA's nnridge reader did, 163 of 200 random models flagged) and of
    `_reach(pred, y)`, the estimates the pool's strongest models get: an estimate those
    models also get cannot tell a model from them, nor from one stronger still (metabench
    ARC: the pool's models of leaderboard 75-78 are read 70-73, as its 72% ones, and its 10
    strongest 70.5-72.6). There (`peak` = `top`) the upper end opens to the scale's top
    (`ceiling` 1: nothing in the data bounds it; opened to the pool's best score instead,
    ARC's 10 strongest were all missed, `bench/above_pool.py`). `bottom`: the median of the
    sheets with every anchor wrong but one; every anchor wrong (`trough`) opens the lower
    end to the worst training score (`floor`). No zone from the pool's weakest models, as
    no bottom edge: next models are stronger (opened to 0 there, ARC's random models' mean
    width rose by half as much again). With the training answers `XA` (+-1, graded
    2*score - 1), `rates`: the share of each anchor the pool's strongest models get right
    (`_strongest`; +1/2 right of one more model, so no rate is 0 or 1), the profile
    `PoolCheck.like_top` compares a model's answers with. None for k < 2."""
    if k < 2:
        return None
    eye, one = np.eye(k, dtype=np.float32), np.ones((1, k), dtype=np.float32)
    est = np.asarray(read(np.vstack([one, 1 - 2 * eye, -one, 2 * eye - 1])), dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    top = float(np.median(est[1 : k + 1]))
    if pred is not None:
        top = min(top, _reach(np.asarray(pred, dtype=np.float64), y, SATURATION_QUANTILE))
    best, worst = float(np.max(y)), float(np.min(y))
    rates = None
    if XA is not None:
        right = (np.asarray(XA, dtype=np.float64)[_strongest(y)] + 1) / 2
        rates = tuple(map(float, (right.sum(0) + 0.5) / (len(right) + 1)))
    return Saturation(top=top, peak=top, bottom=float(np.median(est[k + 2 :])),
                      trough=float(est[k + 1]), ceiling=1.0, floor=worst, best=best,
                      worst=worst, rates=rates)  # fmt: skip


def _strongest(y: np.ndarray) -> np.ndarray:
    """The pool's strongest models by target `y`: the SATURATION_SHARE of highest target, at
    least MIN_TAIL, ties included (a mask)."""
    n = min(len(y), max(MIN_TAIL, int(np.ceil(SATURATION_SHARE * len(y)))))
    return y >= np.sort(y)[-n]


def _reach(pred: np.ndarray, y: np.ndarray, q: float) -> float:
    """The `q` quantile of the estimates `pred` of the pool's strongest models (`_strongest`)."""
    return float(np.quantile(pred[_strongest(y)], q))


def once(fit: Callable) -> Callable:
    """`fit(X, y)` that fits once per input: called again with equal X and y (values, any
    dtype), it returns the first call's result. A suite benchmark's own check and its joint
    check's own part refit the same reader on the same models (`suite_pool_checks`)."""
    fitted: list[tuple[np.ndarray, np.ndarray, object]] = []

    def fit_once(X, y):
        X, y = np.asarray(X), np.asarray(y)
        for X0, y0, out in fitted:
            if X0.shape == X.shape and np.array_equal(X0, X) and np.array_equal(y0, y):
                return out
        out = fit(X, y)
        fitted.append((X, y, out))
        return out

    return fit_once


def with_edge(
    check: PoolCheck, fit: Callable, XA, y, pred, level, tail, fit_y=None, ramp=EDGE_RAMP
) -> PoolCheck:
    """`check` with the top edge `fit_edge` fits (same arguments)."""
    return replace(check, top=fit_edge(fit, XA, y, pred, level, tail, fit_y, ramp))


def fit_edge(
    fit: Callable, XA, y, pred, level: float = 0.9, tail: float = EDGE_TAIL, fit_y=None,
    ramp: float = EDGE_RAMP,
) -> Edge | None:  # fmt: skip
    """The top `Edge` of a pool: `fit(XA, y)` (a reader of the anchors, returning its predict)
    refitted without the top `tail` of the models by target `y` reads them as it would read
    models stronger than its pool. The zone: estimates above the 1 - `tail` quantile of the
    pool's own estimates `pred` (where the reduced fit reads its pool's top `tail`; the
    width this costs on models like the pool is that share's, not more); `down` / `up`: the
    `level` conformal quantiles of the misses below / above their estimates of the held-out
    models the reduced fit reads inside its own zone (such models are missed on one side:
    under-estimated). `up` is at least that quantile over the held-out models farther above
    the reduced pool than the held-out median (`far_up`): a next model lies beyond the whole
    pool as those lie beyond the reduced one, and misses grow with that distance (metabench's
    suite, ARC's own reader: up 3.6 -> 4.2 points). The upper side grows across the zone: from
    `near`, the quantile over the held-out half nearer the reduced pool, at `start` to `up` at
    `full`, `ramp` of the way up the zone (0: a step) (the pool's own top models are read low in the
    zone; MMLU, whose top tail is long: near 2.8, up 15 points). Fewer than MIN_TAIL models
    held out, left or in the zone: None.
    `fit_y`: the targets `fit` is given, row for row (default `y`; the suite average refits
    each benchmark's reader on its own column)."""
    XA, y, pred = np.asarray(XA), np.asarray(y, dtype=np.float64), np.asarray(pred, np.float64)
    top = y > np.quantile(y, 1 - tail)
    if min(int(top.sum()), int((~top).sum())) < MIN_TAIL:
        return None
    read = fit(XA[~top], (y if fit_y is None else np.asarray(fit_y))[~top])
    est = np.asarray(read(XA[top]), dtype=np.float64)
    where = np.searchsorted(np.sort(read(XA[~top])), est) / int((~top).sum())  # among the pool's
    zone = where >= 1 - tail
    if zone.sum() < MIN_TAIL:
        return None
    held = y[top][zone]
    miss = held - est[zone]  # > 0: the truth above the estimate
    far = held > np.median(y[top])
    up = far_up(miss, far, level)
    start, full = np.quantile(pred, [1 - tail, 1 - tail * (1 - ramp)])
    edge = Edge(start=float(start), n_models=int(top.sum()),
                down=_quantile(np.maximum(-miss, 0), level), up=up)  # fmt: skip
    if ramp <= 0 or (~far).sum() < MIN_TAIL:
        return edge  # a step
    near = _quantile(np.maximum(miss[~far], 0), level)
    return replace(edge, near=min(near, up), full=float(full))


def far_up(miss: np.ndarray, far: np.ndarray, level: float) -> float:
    """The `level` quantile of the misses above (`miss` > 0), and at least that of the `far`
    ones where there are MIN_TAIL of them."""
    up = _quantile(np.maximum(miss, 0), level)
    if far.sum() < MIN_TAIL:
        return up
    return max(up, _quantile(np.maximum(miss[far], 0), level))


def _quantile(scores: np.ndarray, level: float) -> float:
    """The conformal quantile, or the largest score where there are too few for `level`."""
    q = conformal_quantile(scores, level)
    return float(np.max(scores)) if not np.isfinite(q) else q


TEST_FLAGS = ("test_flag_range", "test_flag_pattern", "test_flag_saturated")


def test_flags(check: PoolCheck, X_anchors, pred) -> dict[str, np.ndarray]:
    """Per test model (the keys TEST_FLAGS; the report's flag rates): flagged by range, by
    answer pattern, and where the anchors stop telling (the saturated zone at either end, or
    answers like the pool's strongest models', `PoolCheck.like_top`)."""
    sat = check.saturation
    saturated = np.zeros(np.shape(pred), dtype=bool)
    if sat is not None:
        saturated = sat.at_top(pred) | sat.at_bottom(pred) | check.like_top(X_anchors, pred)
    return dict(zip(TEST_FLAGS, (check.out_of_range(pred),
                                 check.lz(X_anchors, pred) < check.threshold, saturated),
                    strict=True))  # fmt: skip


def suite_pool_checks(
    suite, X_train, X_calib, y_train=None, level: float = 0.9, edge_tail: float = EDGE_TAIL, **kw
) -> dict[str, PoolCheck]:
    """Pool checks of a fitted `SuiteSparseEval`'s readers: "average" and each benchmark's
    "{b}/joint" over every anchor, "{b}/own" over b's own anchors (X, y: {benchmark: array}),
    as a benchmark set's (`estimator_pool_check`): with `y_train`, each with its top edge,
    the readers refitted without the strongest models (`SuiteSparseEval.refit_reader`).
    The average and each benchmark's two checks are fitted side by side (threads)."""
    kw = {"widen": SUITE_WIDEN} | kw
    XA, XcA = suite.joint_input(X_train), suite.joint_input(X_calib)
    pred, pred_c = suite.predict(X_train), suite.predict(X_calib)
    y = y_train or {}

    def average() -> PoolCheck:
        check = fit_pool_check(XA, pred["average"], XcA, pred_c["average"], **kw)
        if not y:
            return check
        Y = np.stack([np.asarray(y[b], dtype=np.float64) for b in suite.benchmarks_], axis=1)
        check = with_edge(check, suite.refit_average, XA, Y.mean(1), pred["average"], level,
                          edge_tail, fit_y=Y, ramp=SUITE_RAMP)  # fmt: skip
        read = lambda X: np.mean([suite.readers_[b].predict(X) for b in suite.benchmarks_], 0)  # noqa: E731
        return with_saturation(check, read, XA, Y.mean(1), pred["average"])

    def benchmark(b: str) -> tuple[PoolCheck, PoolCheck]:
        est = suite.estimators_[b]
        own_reader = once(est.fit_reader)  # the joint edge's own part is the own edge's fit
        own = estimator_pool_check(est, X_train[b], X_calib[b], y.get(b), level, edge_tail,
                                   SUITE_RAMP, own_reader, **kw)  # fmt: skip
        joint = fit_pool_check(XA, pred[b], XcA, pred_c[b], **kw)
        if y:
            fit = lambda X, t: suite.refit_reader(b, X, t, own_reader)  # noqa: E731
            joint = with_edge(joint, fit, XA, y[b], pred[b], level, edge_tail, ramp=SUITE_RAMP)
            joint = with_saturation(joint, suite.readers_[b].predict, XA, y[b], pred[b])
        return own, joint

    tasks = [average] + [partial(benchmark, b) for b in suite.benchmarks_]
    mean, *checks = suite.side_by_side(tasks)
    out = {"average": mean}
    for b, (own, joint) in zip(suite.benchmarks_, checks, strict=True):
        out[f"{b}/joint"], out[f"{b}/own"] = joint, own
    return out


__all__ = [
    "DEFAULT_MARGIN",
    "DEFAULT_RATE",
    "DEFAULT_TAIL",
    "DEFAULT_WIDEN",
    "EDGE_RAMP",
    "EDGE_TAIL",
    "MIN_TAIL",
    "SATURATION_QUANTILE",
    "SATURATION_SHARE",
    "STEP",
    "SUITE_RAMP",
    "SUITE_WIDEN",
    "TEST_FLAGS",
    "estimator_pool_check",
    "far_up",
    "fit_edge",
    "fit_pool_check",
    "fit_saturation",
    "item_curves",
    "once",
    "suite_pool_checks",
    "test_flags",
    "with_edge",
    "with_saturation",
]
