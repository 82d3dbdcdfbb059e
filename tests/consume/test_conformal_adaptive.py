"""Adaptive conformal intervals: width that follows the estimate, fallback, serialization."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.consume.scoring.conformal import (
    ADAPTIVE,
    BAND_MODELS,
    CONSTANT,
    MIN_ADAPTIVE,
    ConformalInterval,
    by_band,
    conformal_quantile,
)


def heteroscedastic(n: int, seed: int):
    """Estimates in [0.1, 0.9]; errors about 4x larger in the middle than at the ends."""
    rng = np.random.default_rng(seed)
    pred = rng.uniform(0.1, 0.9, n)
    sd = 0.002 + 0.2 * (pred * (1 - pred)) ** 2
    return pred, pred - rng.normal(0, sd)  # (estimate, truth)


def test_adaptive_covers_every_third_where_the_constant_width_does_not():
    cp, ct = heteroscedastic(400, 0)
    tp, tt = heteroscedastic(6000, 1)
    adaptive = ConformalInterval.fit(cp - ct, 0.9, pred=cp)
    constant = ConformalInterval.fit(cp - ct, 0.9)
    assert adaptive.adaptive and adaptive.method == ADAPTIVE and not constant.adaptive
    cov_a = [r["coverage"] for r in by_band(adaptive, tp, tt)]
    cov_c = [r["coverage"] for r in by_band(constant, tp, tt)]
    assert all(0.86 <= c <= 0.95 for c in cov_a), cov_a
    assert max(cov_c) > 0.95 and min(cov_c) < 0.82, cov_c  # the constant width over/under-covers
    assert 0.88 <= adaptive.coverage(tp, tt) <= 0.92
    # narrower where the errors are small: the mean half-width is below the constant one
    assert adaptive.halfwidths(tp).mean() < constant.halfwidth


def test_too_few_calibration_models_or_no_estimates_fall_back_to_one_width():
    cp, ct = heteroscedastic(MIN_ADAPTIVE - 1, 2)
    few = ConformalInterval.fit(cp - ct, 0.9, pred=cp)
    assert few.spread is None and few.method == CONSTANT
    assert few == ConformalInterval.fit(cp - ct, 0.9)
    cp, ct = heteroscedastic(200, 3)
    assert ConformalInterval.fit(cp - ct, 0.9).spread is None  # no estimates: constant
    with pytest.raises(ValueError, match="calibration estimates"):
        ConformalInterval.fit(cp - ct, 0.9, pred=cp[:-1])


@pytest.mark.parametrize("n, bands", [(MIN_ADAPTIVE, 1), (2 * BAND_MODELS, 2), (200, 3), (900, 3)])
def test_bands_need_enough_calibration_models_each_and_are_conformal_within(n, bands):
    cp, ct = heteroscedastic(n, 8)
    conf = ConformalInterval.fit(cp - ct, 0.9, pred=cp)
    assert len(conf.quantiles) == bands and len(conf.edges) == bands - 1
    band = np.digitize(cp, conf.edges)
    for b, q in enumerate(conf.quantiles):  # each band: its own models' conformal quantile
        m = band == b
        assert m.sum() >= min(BAND_MODELS, n) - 1
        assert q == conformal_quantile((cp - ct)[m] / conf.spread(cp[m]), 0.9)
        assert np.mean(np.abs(cp - ct)[m] <= conf.halfwidths(cp[m]) + 1e-12) >= 0.9


def test_spread_is_floored_and_clipped_to_the_calibration_range():
    cp, ct = heteroscedastic(300, 4)
    conf = ConformalInterval.fit(cp - ct, 0.9, pred=cp)
    s = conf.spread
    assert conf.halfwidths(0.0) == pytest.approx(conf.halfwidths(s.low))
    assert conf.halfwidths(1.0) == pytest.approx(conf.halfwidths(s.high))
    assert np.all(s(np.linspace(0, 1, 50)) >= s.floor)
    assert s.floor == pytest.approx(0.3 * np.mean(np.abs(cp - ct)))


def test_round_trip_through_json_and_extra_widens_each_side():
    cp, ct = heteroscedastic(300, 5)
    conf = ConformalInterval.fit(cp - ct, 0.9, pred=cp)
    back = ConformalInterval.from_dict(json.loads(json.dumps(conf.to_dict())))
    assert back == conf and "adaptive" in conf.to_dict()
    grid = np.linspace(0, 1, 21)
    assert np.allclose(back.interval(grid)[0], conf.interval(grid)[0])
    low, high = conf.interval(0.5)
    wlow, whigh = conf.interval(0.5, extra=0.01)
    assert wlow == pytest.approx(low - 0.01) and whigh == pytest.approx(high + 0.01)


def test_an_old_interval_dict_loads_as_the_constant_width():
    old = {"method": CONSTANT, "level": 0.9, "halfwidth": 0.03, "diff_halfwidth": 0.04,
           "n_calibration": 200}  # fmt: skip
    conf = ConformalInterval.from_dict(old)
    assert not conf.adaptive and conf.to_dict() == old
    low, high = conf.interval(np.array([0.2, 0.99]))
    assert np.allclose(low, [0.17, 0.96]) and np.allclose(high, [0.23, 1.0])


def test_widened_is_never_narrower_and_reaches_nominal_on_the_new_models():
    cp, ct = heteroscedastic(200, 6)
    conf = ConformalInterval.fit(cp - ct, 0.9, pred=cp)
    tp, tt = heteroscedastic(300, 7)
    tt = tp - 2 * (tp - tt)  # test errors twice as large
    assert conf.coverage(tp, tt) < 0.85
    wide = conf.widened(tp - tt, tp)
    grid = np.linspace(0, 1, 41)
    assert np.all(wide.halfwidths(grid) >= conf.halfwidths(grid) - 1e-15)
    assert wide.coverage(tp, tt) >= 0.9 and wide.coverage(cp, ct) >= 0.9
    const = ConformalInterval.fit(cp - ct, 0.9)
    assert const.widened(tp - tt, tp).halfwidth > const.halfwidth


def test_by_band_splits_equal_counts_and_reports_signed_error_in_points():
    pred = np.linspace(0.1, 0.9, 9)
    true = pred - np.r_[0.01, 0.01, 0.01, 0.0, 0.0, 0.0, -0.02, -0.02, -0.02]
    conf = ConformalInterval(0.9, 0.015, 0.02, 10)
    rows = by_band(conf, pred, true)
    assert [r["band"] for r in rows] == ["low", "middle", "high"]
    assert [r["n"] for r in rows] == [3, 3, 3]
    assert [r["signed_error"] for r in rows] == pytest.approx([1.0, 0.0, -2.0])
    assert [r["coverage"] for r in rows] == pytest.approx([1.0, 1.0, 0.0])
    assert rows[0]["from"] == pytest.approx(10) and rows[2]["to"] == pytest.approx(90)
    by_truth = by_band(conf, pred, true, key=true)
    assert sum(r["n"] for r in by_truth) == 9
