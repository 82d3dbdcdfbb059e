"""Flags for models unlike the training pool: the fitted check, widened intervals, old sets."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from sparseeval.cli import main
from sparseeval.consume.scoring.estimate import Estimate
from sparseeval.consume.scoring.flags import KEY, Edge, PoolCheck, disagreement, widened
from sparseeval.consume.sets.anchorset import AnchorSet, load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError
from sparseeval.method.pool import estimator_pool_check, fit_pool_check
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit

HALF = 0.05

RANGE = "{} the range of the training models' own estimates"  # the flag's wording


class ShareCorrect:
    """A predictor: the share of anchors answered correctly."""

    def predict(self, XA):
        return (np.asarray(XA, dtype=np.float64).mean(axis=1) + 1) / 2


@pytest.fixture(scope="module")
def pool():
    """A check fitted on 500 training and 200 calibration models of a 40-item leaderboard,
    with the share correct as every model's estimate, and 300 held-out models like them."""
    m = make_synthetic(1000, 40, seed=3)
    X, y = m.values.astype(np.float64), m.y
    check = fit_pool_check(X[:500], y[:500], X[500:700], y[500:700])
    return check, X[700:], y[700:]


def random_answers(n_items: int, seed: int, share: float = 0.7) -> np.ndarray:
    """A new user's test model: each answer correct with probability `share`, whatever the item."""
    return np.where(np.random.default_rng(seed).random(n_items) < share, 1.0, -1.0)


def hand_set(check: PoolCheck | None, k: int = 40) -> AnchorSet:
    manifest = {"benchmark": "arc", "version": 1, "items": [f"q{j}" for j in range(k)],
                "interval": {"level": 0.9, "halfwidth": HALF, "diff_halfwidth": 2 * HALF},
                "predictor": {}}  # fmt: skip
    if check is not None:
        manifest[KEY] = check.to_dict()
    return AnchorSet(manifest, ShareCorrect())


def test_the_check_round_trips_through_json(pool):
    check, X, y = pool
    again = PoolCheck.from_dict(json.loads(json.dumps(check.to_dict())))
    assert again == check and len(check.a) == 40 and check.n_models == 500
    assert np.array_equal(again.flagged(X, y), check.flagged(X, y))
    with pytest.raises(ValueError, match="intercepts"):
        PoolCheck.from_dict(check.to_dict() | {"a": [0.0]})


def test_models_like_the_pool_are_mostly_not_flagged(pool):
    check, X, y = pool
    rate = check.flagged(X, y).mean()
    assert rate <= 0.12, rate  # pattern 2% of the fitting models, range 1% at each end


def test_random_answers_are_flagged(pool):
    check = pool[0]
    flagged = [bool(check.reasons(random_answers(40, s), 0.7)) for s in range(20)]
    assert sum(flagged) >= 18, flagged
    lines = check.reasons(random_answers(40, 0), 0.7)
    assert any(line.startswith("answer pattern unlike the training models'") for line in lines)


def test_an_estimate_beyond_the_range_is_flagged_and_widened(pool):
    check, X, y = pool
    x = X[np.argmax(y)]
    above = check.high + 0.05
    assert any(RANGE.format("above") in r for r in check.reasons(x, above))
    assert check.widening(x[None, :], [above], HALF)[0] == pytest.approx((check.widen - 1) * HALF)
    below = check.low - 0.05
    assert any(RANGE.format("below") in r for r in check.reasons(-x, below))
    inside = float(np.clip(y[0], check.low, check.high))
    assert not check.out_of_range(inside)


def test_a_pattern_flag_is_said_and_does_not_widen(pool):
    """A widening that comes and goes with one answer would make the ends fall when it turns
    right (`interval_of`): an unlikely answer pattern is said, the interval follows the
    estimate alone."""
    check = pool[0]
    aset = hand_set(check)
    est = aset.predict(random_answers(40, 0))
    assert est.flags and est.value == pytest.approx((random_answers(40, 0).mean() + 1) / 2)
    assert est.high - est.low == pytest.approx(2 * HALF)
    assert "unlike the training models (trust the interval less)" in str(est)
    assert est.to_dict()["flags"] == list(est.flags)
    X, y = pool[1], pool[2]
    typical = X[np.flatnonzero(~check.flagged(X, y))[0]]
    plain = aset.predict(typical)
    assert plain.flags == () and "unlike" not in str(plain)
    assert plain.high - plain.low == pytest.approx(2 * HALF)


def test_sets_without_a_check_load_and_give_no_flags(fitted, tmp_path):
    est = hand_set(None).predict(random_answers(40, 0))
    assert est.flags == () and est.high - est.low == pytest.approx(2 * HALF)
    publish_fit(tmp_path, "arc", fitted)
    set_latest(tmp_path, "arc", 1)
    aset = load_anchor_set(tmp_path, "arc")
    assert aset.pool_check is None
    assert aset.predict(random_answers(len(aset.items), 1)).flags == ()


def test_a_bad_check_is_refused(pool):
    bad = pool[0].to_dict() | {"a": [0.0] * 3, "b": [1.0] * 3}
    with pytest.raises(AnchorSetError, match="pool check covers 3 anchors"):
        AnchorSet(hand_set(None).manifest.to_dict() | {KEY: bad}, ShareCorrect())


def test_published_check_loads_and_cli_predict_prints_the_flag_line(fitted, tmp_path, capsys):
    m, sp, est = fitted
    check = estimator_pool_check(est, m.values[sp.train], m.values[sp.valid])
    check = replace(check, low=0.0, high=0.0)  # every estimate is above this range
    publish_fit(tmp_path, "arc", fitted, extra={KEY: check.to_dict()})
    set_latest(tmp_path, "arc", 1)
    aset = load_anchor_set(tmp_path, "arc")
    assert aset.pool_check == check
    answers = tmp_path / "answers.csv"
    answers.write_text("item,correct\n" + "".join(f"{i},1\n" for i in aset.items))
    argv = ["predict", "--anchor-set", str(tmp_path), "--benchmark", "arc"]
    assert main([*argv, "--responses", str(answers)]) == 0
    lines = capsys.readouterr().out.splitlines()
    flag = [line for line in lines if line.startswith("flagged: ")]
    assert len(flag) == 1 and RANGE.format("above") in flag[0], lines
    assert main([*argv, "--responses", str(answers), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flags"]


def test_suite_readers_that_disagree_are_flagged_once_and_widened():
    joint = Estimate(0.755, 0.724, 0.786, 0.9, "arc")
    own = Estimate(0.640, 0.596, 0.683, 0.9, "arc")
    line = disagreement(joint, own)
    assert line.startswith("arc: the suite's joint reader (75.5%, 72.4-78.6%) and arc's own")
    assert disagreement(joint, replace(own, high=0.73)) is None
    wide = widened(joint, (line,), 0.031, widen=3.0)
    assert wide.flags == (line,) and wide.low == pytest.approx(0.724 - 0.062)
    again = widened(wide, ("another",), 0.031, widen=3.0)
    assert again.flags == (line, "another") and (again.low, again.high) == (wide.low, wide.high)
    assert widened(joint, (), 0.031) is joint


def test_the_top_edge_covers_the_held_out_models_farthest_above_the_pool():
    """A reader that misses more the farther a model lies above its pool: the edge's `up`
    is set by the held-out half farthest above the reduced pool, not by the whole held-out
    share (whose nearer half misses little), so next models beyond the whole pool are covered."""
    from sparseeval.method.pool import fit_edge

    rng = np.random.default_rng(0)
    y = np.sort(rng.uniform(0.2, 0.9, 2000))
    XA = y[:, None]

    def fit(X, t):  # the reader sees the truth but stops at its pool's top
        ceiling = float(np.max(t))
        return lambda Z: np.minimum(Z[:, 0], ceiling)

    edge = fit_edge(fit, XA, y, fit(XA, y)(XA), level=0.9, tail=0.2)
    top = y > np.quantile(y, 0.8)
    miss = y[top] - fit(XA[~top], y[~top])(XA[top])
    far = y[top] > np.median(y[top])
    assert np.quantile(miss, 0.9) < np.quantile(miss[far], 0.9)  # the whole share's: too small
    assert edge.up >= np.quantile(miss[far], 0.9) - 1e-9


def test_the_top_edge_grows_across_its_zone_from_the_nearer_half_to_the_far_half():
    """The pool's own top models sit low in the zone, next models beyond it at the top: the
    upper side is the nearer held-out half's miss at the zone's start and the far half's from
    EDGE_RAMP of the way up; a set written before the ramp keeps its step."""
    from sparseeval.method.pool import EDGE_RAMP, fit_edge

    y = np.sort(np.random.default_rng(1).uniform(0.2, 0.9, 2000))
    XA = y[:, None]

    def fit(X, t):
        ceiling = float(np.max(t))
        return lambda Z: np.minimum(Z[:, 0], ceiling)

    pred = fit(XA, y)(XA)
    edge = fit_edge(fit, XA, y, pred, level=0.9, tail=0.2)
    top = y > np.quantile(y, 0.8)
    miss = y[top] - fit(XA[~top], y[~top])(XA[top])
    near = y[top] <= np.median(y[top])
    assert edge.near == pytest.approx(np.quantile(miss[near], 0.9), abs=0.01)
    assert edge.near < edge.up / 1.5
    assert edge.full == pytest.approx(np.quantile(pred, 1 - 0.2 * (1 - EDGE_RAMP)))
    check = PoolCheck(0.0, 1.0, 0.0, (0.0,), (1.0,), -1e9, 0.02, 3.0, top=edge)
    v = np.array([edge.start - 0.01, edge.start, (edge.start + edge.full) / 2, edge.full, 0.95])
    _, above = check.at_edges(v, np.full(5, 0.001))
    assert above.tolist() == pytest.approx(
        [0.001, edge.near, (edge.near + edge.up) / 2, edge.up, edge.up]
    )
    assert Edge.from_dict(edge.to_dict()) == edge
    old = Edge.from_dict({"start": edge.start, "down": 0.0, "up": edge.up})
    assert PoolCheck(0.0, 1.0, 0.0, (0.0,), (1.0,), -1e9, 0.02, 3.0, top=old).at_edges(
        v, np.full(5, 0.001)
    )[1].tolist() == pytest.approx([0.001, edge.up, edge.up, edge.up, edge.up])
