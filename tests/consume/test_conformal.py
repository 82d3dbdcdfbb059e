"""Split-conformal intervals: the quantile rule, coverage, differences, and real coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparseeval.consume.scoring.conformal import (
    ConformalInterval,
    conformal_quantile,
    difference_halfwidth,
    empirical_coverage,
)


def test_quantile_rule_and_too_few_points():
    scores = np.arange(1, 10) / 100  # 9 values
    assert conformal_quantile(scores, 0.9) == pytest.approx(0.09)  # ceil(10 * .9) = 9th
    assert conformal_quantile(scores, 0.5) == pytest.approx(0.05)  # ceil(5) = 5th
    assert conformal_quantile(scores[:5], 0.9) == math.inf  # ceil(6 * .9) = 6 > 5
    assert conformal_quantile(-scores, 0.9) == pytest.approx(0.09)  # absolute values
    with pytest.raises(ValueError, match="between 0 and 1"):
        conformal_quantile(scores, 1.0)
    with pytest.raises(ValueError, match="at least one"):
        conformal_quantile([], 0.9)


def test_leave_one_out_coverage_is_exactly_k_over_n_plus_one():
    # 41 distinct scores; calibrating on 40 and testing the one left out covers
    # exactly the points of rank <= ceil(41 * 0.9) = 37: coverage 37/41, no noise.
    scores = np.arange(1, 42) / 100
    covered = [abs(scores[i]) <= conformal_quantile(np.delete(scores, i), 0.9) for i in range(41)]
    assert sum(covered) == 37
    assert covered == [True] * 37 + [False] * 4


def test_marginal_coverage_on_exchangeable_residuals():
    rng = np.random.default_rng(0)
    n, reps, level = 40, 2000, 0.9
    r = rng.standard_t(4, size=(reps, n + 1)) * 0.03
    q = np.array([conformal_quantile(row[:n], level) for row in r])
    cov = empirical_coverage(-q, q, r[:, n])
    # theory: 37 / 41 = 0.902 exactly for continuous scores; 2000 reps: sd 0.007
    assert cov == pytest.approx(37 / 41, abs=0.02)


def test_difference_halfwidth_covers_pairs():
    rng = np.random.default_rng(1)
    calib = rng.normal(0, 0.02, 1500)
    qd = difference_halfwidth(calib, 0.9)
    q = conformal_quantile(calib, 0.9)
    assert q < qd < 2 * q  # about sqrt(2) q for independent normal errors
    a, b = rng.normal(0, 0.02, (2, 20000))
    assert np.mean(np.abs(a - b) <= qd) == pytest.approx(0.9, abs=0.02)
    with pytest.raises(ValueError, match="two"):
        difference_halfwidth([0.1], 0.9)


def test_interval_object_clips_widens_and_round_trips():
    ci = ConformalInterval.fit(np.linspace(-0.05, 0.05, 99), 0.8)
    assert ci.n_calibration == 99 and ci.level == 0.8
    low, high = ci.interval(0.02)
    assert low == 0.0 and high == pytest.approx(0.02 + ci.halfwidth)
    lo2, hi2 = ci.interval(0.5, extra=0.1)
    assert hi2 - lo2 == pytest.approx(2 * (ci.halfwidth + 0.1))
    lows, highs = ci.interval(np.array([0.1, 0.99]))
    assert highs[1] == 1.0 and lows.shape == (2,)
    d, _dlo, dhi = ci.difference(0.6, 0.5)
    assert d == pytest.approx(0.1) and dhi - d == pytest.approx(ci.diff_halfwidth)
    again = ConformalInterval.from_dict(ci.to_dict())
    assert again == ci
    tiny = ConformalInterval.fit([0.01, -0.02], 0.9)
    assert tiny.halfwidth == math.inf and tiny.to_dict()["halfwidth"] is None
    assert ConformalInterval.from_dict(tiny.to_dict()).interval(0.4) == (0.0, 1.0)
    assert empirical_coverage([0, 0], [1, 0.5], [0.5, 0.7]) == 0.5


def test_sparseeval_intervals_cover_test_models_near_nominal():
    """Empirical 90% coverage on held-out test models of synthetic leaderboards."""
    from sparseeval.method.estimator import SparseEval
    from sparseeval.method.splits import split_models
    from sparseeval.method.synthetic import make_synthetic

    covs = []
    for seed in range(8):
        m = make_synthetic(600, 60, seed=seed)
        sp = split_models(m.model_ids, n_test=200, n_valid=150, seed=seed)
        est = SparseEval(
            n_anchors=8,
            refine_steps=1,
            epochs=50,
            ensemble=1,
            predictor="ridge",
            seed=seed,
            progress=lambda s: None,
        ).fit(m.values[sp.train], m.y[sp.train], X_valid=m.values[sp.valid], y_valid=m.y[sp.valid])
        ci = ConformalInterval.fit(est.valid_residuals_, 0.9)
        covs.append(ci.coverage(est.predict(m.values[sp.test]), m.y[sp.test]))
    mean = float(np.mean(covs))
    assert abs(mean - 0.9) <= 0.04, (mean, covs)
    assert min(covs) >= 0.8, covs


def _tiny(seed: int = 0, **kw):
    from sparseeval.method.estimator import SparseEval

    return SparseEval(
        n_anchors=8, refine_steps=1, epochs=50, ensemble=1, predictor="ridge", seed=seed,
        progress=lambda s: None, **kw,
    )  # fmt: skip


def test_cross_calibrate_residuals_come_from_fits_that_never_saw_the_model():
    from sparseeval.method.splits import split_models
    from sparseeval.method.synthetic import make_synthetic

    covs = []
    for seed in range(4):
        m = make_synthetic(500, 60, seed=seed)
        sp = split_models(m.model_ids, n_test=200, n_valid=100, seed=seed)
        X, y = m.values, m.y
        args = (X[sp.train], y[sp.train], X[sp.valid], y[sp.valid])
        est = _tiny(seed).fit(*args[:2], X_valid=args[2], y_valid=args[3])
        pred_test = est.predict(X[sp.test])
        assert est.cross_calibrate(*args, folds=4) is est
        r = est.calibration_residuals_
        assert est.calibration_source_ == "cross-fit" and r.shape == (300,)
        assert np.all(np.isfinite(r))
        # not the in-sample residuals of the final predictor
        assert not np.allclose(r[:200], est.predict(X[sp.train]) - y[sp.train])
        covs.append(ConformalInterval.fit(r, 0.9).coverage(pred_test, y[sp.test]))
        np.testing.assert_array_equal(est.predict(X[sp.test]), pred_test)  # model unchanged
    assert abs(float(np.mean(covs)) - 0.9) <= 0.04, covs
    with pytest.raises(ValueError, match="folds must be in"):
        est.cross_calibrate(*args, folds=1)


def test_fit_comparison_calibrates_on_models_no_method_trained_on():
    from sparseeval.method.synthetic import make_synthetic
    from sparseeval.pipeline.compare import compare_methods
    from sparseeval.pipeline.settings import Settings

    fast = dict(refine_steps=1, ensemble=1, predictor="ridge", epochs=20, n_anchors=5,
                stable_split=False)  # fmt: skip
    m = make_synthetic(300, 40, seed=1)
    s = Settings.of(n_test=60, n_valid=60, **fast)
    out = compare_methods(m, [5], s, baselines=("random",), progress=lambda x: None)
    calib = out.split.calib
    used = np.concatenate([out.split.train, out.split.valid, out.split.test])
    assert len(calib) == 36 and not set(calib) & set(used)  # a fifth of 180
    assert len(used) + len(calib) == 300
    est = out.fitted[5].est
    assert est.calibration_source_ == "calibration" and len(est.calibration_residuals_) == 36
    # too few models for a calibration split: cross-fitted residuals, not validation ones
    few = compare_methods(
        make_synthetic(120, 40, seed=2), [5], Settings.of(n_test=10, n_valid=15, n_calib=5, **fast),
        baselines=(), progress=lambda x: None,
    )  # fmt: skip
    est = few.fitted[5].est
    assert len(few.split.calib) == 0 and est.calibration_source_ == "cross-fit"
    assert len(est.calibration_residuals_) == 95 + 15
