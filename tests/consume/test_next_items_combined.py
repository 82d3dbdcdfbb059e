"""The combined estimate of `consume.scoring.next_items`: anchors and extra items together."""

from __future__ import annotations

import numpy as np
import pytest

from sparseeval.consume.scoring import next_items as nx

N_ITEMS, ANCHORS = 100, np.arange(50)  # as metabench keeps of ARC


@pytest.fixture(scope="module")
def world():
    """True item curves, 400 models' answers on every item and their item means."""
    rng = np.random.default_rng(3)
    curves = nx.ItemCurves(tuple(map(str, range(N_ITEMS))), rng.normal(0.3, 1.0, N_ITEMS),
                           rng.uniform(0.5, 2.0, N_ITEMS))  # fmt: skip
    theta = rng.normal(0.0, 1.0, 400)
    x = (rng.random((400, N_ITEMS)) < curves.probabilities(theta)).astype(float)
    return curves, x, x.mean(1)


def _run(world, anchor_error, anchor_sd: float, n: int, off_pool: float = 0.0):
    """Per model: (anchor estimate, combined value, low, high, the unbiased t-interval width)."""
    curves, x, y = world
    rest = np.setdiff1d(np.arange(N_ITEMS), ANCHORS)
    out = []
    for i in range(len(y)):
        v = float(np.clip(y[i] + anchor_error[i], 0, 1))
        extra = nx.choose(curves, rest, n, seed=i)
        c = nx.correct(curves, ANCHORS, x[i, ANCHORS], v, extra, x[i, extra], anchor_sd,
                       off_pool)  # fmt: skip
        lo, hi = c.interval(0.9)
        out.append((v, c.within(lo, hi).value, lo, hi, 2 * nx.t_quantile(0.9, n - 1) * c.sd))
    return np.array(out).T


def test_a_few_items_do_not_make_a_well_judged_model_worse(world):
    """Anchors right on average (their spread as claimed): 10 more items lower the error."""
    _, _, y = world
    error = np.random.default_rng(4).normal(0.0, 0.02, len(y))
    v, value, lo, hi, _ = _run(world, error, 0.02, 10)
    assert np.mean(np.abs(value - y)) < np.mean(np.abs(v - y))
    assert np.mean((lo <= y) & (y <= hi)) >= 0.88


def test_extra_items_remove_most_of_a_flagged_models_bias_inside_a_narrower_interval(world):
    """Anchors 5 points low on a flagged model: 30 items take most of the bias away, and the
    combined interval covers while narrower than the unbiased value's alone."""
    _, _, y = world
    error = -0.05 + np.random.default_rng(5).normal(0.0, 0.01, len(y))
    v, value, lo, hi, unbiased_width = _run(world, error, 0.03, 30, nx.OFF_POOL_FLAGGED)
    assert abs(np.mean(value - y)) < 0.35 * abs(np.mean(v - y))
    assert np.mean(np.abs(value - y)) < 0.5 * np.mean(np.abs(v - y))
    assert np.mean((lo <= y) & (y <= hi)) >= 0.85  # the anchors' own interval: about half
    assert np.mean(hi - lo) < np.mean(unbiased_width)


def test_the_combination_is_the_precision_weighted_mean_on_the_pool():
    centre, sd, weight = nx.combine(0.60, 0.02, 0.70, 0.02)
    assert centre == pytest.approx(0.65) and weight == pytest.approx(0.5)
    assert sd == pytest.approx(0.02 / np.sqrt(2))
    assert nx.combine(0.60, 0.02, 0.70, 0.0)[:2] == pytest.approx((0.70, 0.0))  # all answered


def test_the_anchor_spread_is_the_wider_side_over_z():
    z = nx.z_quantile(0.95)
    assert nx.anchor_spread(0.5, 0.45, 0.6, 0.9) == pytest.approx(0.1 / z)
    assert nx.misjudged([True, False, False], [False, True, False]).tolist() == [
        nx.OFF_POOL_FLAGGED, nx.OFF_POOL_ZONE, nx.OFF_POOL]  # fmt: skip
