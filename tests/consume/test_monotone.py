"""Monotone estimates: turning one wrong anchor answer right never lowers a published set's
estimate, nor either end of its interval (`MLPPredictor(monotone=True)`, `flags.interval_of`)."""

from __future__ import annotations

import numpy as np
import pytest

from sparseeval.consume.scoring import inference
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import KEY, Edge, PoolCheck, Saturation, interval_of
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.method.estimator import SparseEval
from sparseeval.method.pool import estimator_pool_check
from sparseeval.method.predictors import MLPPredictor, NonNegativeRidge, RidgePredictor
from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit


def single_flip_drops(read, sheets: np.ndarray) -> np.ndarray:
    """For every sheet and every anchor it answered wrong, read(with it right) - read(as is):
    one value per flip (a negative one is a violation)."""
    base = read(sheets)
    out = []
    for j in range(sheets.shape[1]):
        wrong = sheets[:, j] < 0
        flipped = sheets[wrong].copy()
        flipped[:, j] = 1.0
        out.append(read(flipped) - base[wrong])
    return np.concatenate(out)


def sheets(n: int, k: int, seed: int = 0) -> np.ndarray:
    """`n` random +-1 answer sheets of `k` anchors, each with its own share right."""
    rng = np.random.default_rng(seed)
    share = rng.uniform(0.05, 0.95, size=(n, 1))
    return np.where(rng.random((n, k)) < share, 1.0, -1.0).astype(np.float32)


def non_monotone_data(n: int = 400, k: int = 6, seed: int = 0):
    """Answers whose target falls with anchor 0 right when anchor 1 is right too (an
    interaction a GELU net learns and a monotone one cannot)."""
    X = sheets(n, k, seed)
    y = 0.5 + 0.05 * X[:, 1:].sum(1) - 0.15 * (X[:, 0] > 0) * (X[:, 1] > 0)
    return X, np.clip(y, 0.0, 1.0).astype(np.float32)


def test_the_monotone_mlp_never_drops_where_the_gelu_one_does():
    X, y = non_monotone_data()
    kw = {"hidden": (16, 8), "epochs": 300, "patience": 300, "lr": 5e-3, "seed": 0}
    mono = MLPPredictor(**kw).fit(X, y)
    gelu = MLPPredictor(monotone=False, **kw).fit(X, y)
    probe = sheets(200, 6, seed=1)
    assert single_flip_drops(mono.predict, probe).min() >= -1e-6  # torch's float32 rounding
    read = inference.reader_from_state(*mono.state()).predict  # what a published set reads
    assert single_flip_drops(read, probe).min() >= 0.0
    assert single_flip_drops(gelu.predict, probe).min() < -0.01  # the check can fail
    for layer in ("net.0.weight", "net.3.weight", "net.6.weight"):
        assert mono.state()[1][layer].min() >= 0.0


def test_the_numpy_reader_reads_both_activations_as_torch():
    X, y = non_monotone_data(seed=2)
    for monotone in (True, False):
        net = MLPPredictor(hidden=(8,), epochs=40, monotone=monotone).fit(X, y)
        config, arrays = net.state()
        assert config["activation"] == ("monotone-mix" if monotone else "gelu")
        got = inference.reader_from_state(config, arrays).predict(X)
        assert np.max(np.abs(got - net.predict(X))) < 1e-6
        if not monotone:  # sets published before the key: the paper's GELU, as before
            old = {k: v for k, v in config.items() if k != "activation"}
            assert np.array_equal(inference.reader_from_state(old, arrays).predict(X), got)


def test_a_monotone_set_published_with_tanh_still_reads_as_torch_did():
    X, y = non_monotone_data(seed=4)
    net = MLPPredictor(hidden=(8,), epochs=40, activation="tanh").fit(X, y)
    config, arrays = net.state()
    assert config["activation"] == "tanh" and arrays["net.0.weight"].min() >= 0.0
    back = MLPPredictor.from_state(config, arrays)
    assert back.activation == "tanh" and back.monotone
    got = inference.reader_from_state(config, arrays).predict(X)
    assert np.max(np.abs(got - net.predict(X))) < 1e-6
    assert np.max(np.abs(back.predict(X) - net.predict(X))) < 1e-6


def test_ridge_with_a_negative_weight_is_published_non_negative():
    X, y = non_monotone_data(seed=3)
    y = np.clip(0.5 - 0.1 * X[:, 0] + 0.05 * X[:, 1], 0, 1)
    assert (RidgePredictor().fit(X, y).coef_ < 0).any()
    published = RidgePredictor.candidate(None, X, y, [])
    assert isinstance(published, NonNegativeRidge) and published.coef_.min() >= 0.0


@pytest.fixture(scope="module")
def mlp_set(tmp_path_factory):
    """A tiny MLP set (monotone by default) with its pool check, top edge and saturation."""
    m = make_synthetic(400, 40, seed=5)
    sp = split_models(m.model_ids, n_test=60, n_valid=80, seed=5)
    est = SparseEval(n_anchors=8, refine_steps=1, epochs=60, ensemble=2, predictor="mlp",
                     progress=lambda s: None)  # fmt: skip
    est.fit(m.values[sp.train], m.y[sp.train], X_valid=m.values[sp.valid],
            y_valid=m.y[sp.valid], item_ids=m.item_ids)  # fmt: skip
    est.calibrate(m.values[sp.test], m.y[sp.test])
    check = estimator_pool_check(est, m.values[sp.train], m.values[sp.valid], m.y[sp.train])
    root = tmp_path_factory.mktemp("mono")
    publish_fit(root, "arc", (m, sp, est), extra={KEY: check.to_dict()})
    set_latest(root, "arc", 1)
    return load_anchor_set(root, "arc")


def test_no_single_flip_lowers_the_estimate_or_either_end(mlp_set):
    aset = mlp_set
    config = aset.predictor.config
    assert {c["activation"] for c in config["members"]} == {"monotone-mix"}, config  # a blend of 2
    assert aset.pool_check is not None and aset.pool_check.saturation is not None
    every = sheets(300, len(aset.items), seed=7)

    def read(part: str):
        def one(X: np.ndarray) -> np.ndarray:
            return np.array([getattr(aset.predict(list(x)), part) for x in X])

        return one

    for part in ("value", "low", "high"):
        drops = single_flip_drops(read(part), every)
        assert drops.size > 800 and drops.min() >= -1e-12, (part, drops.min())


def test_the_ends_are_non_decreasing_in_the_estimate_through_every_cut():
    """Adaptive bands, the range's widening (both sides), the top edge's ramp and saturation:
    each is a step somewhere; the ends step only upward."""
    rng = np.random.default_rng(0)
    pred = rng.uniform(0.2, 0.9, 400)
    conf = ConformalInterval.fit(rng.normal(0, 0.02 + 0.05 * pred, 400), 0.9, pred=pred)
    top = Edge(start=0.8, down=0.05, up=0.12, near=0.03, full=0.85)
    sat = Saturation(top=0.86, peak=0.88, bottom=0.17, trough=0.15, ceiling=0.97, floor=0.05,
                     best=0.93, worst=0.1)  # fmt: skip
    check = PoolCheck(0.25, 0.82, 0.0, (0.0,), (1.0,), -9.0, 0.02, 3.0, top=top, saturation=sat)
    v = np.sort(np.r_[np.linspace(0, 1, 20001), conf.edges, 0.25, 0.82, 0.8, 0.88, 0.15])
    low, high, _ = interval_of(check, conf, v)
    assert np.diff(low).min() >= 0 and np.diff(high).min() >= 0
    assert np.all(low <= v + 1e-12) and np.all(high >= v - 1e-12)
    h = conf.halfwidths(v)  # never narrower than the conformal interval
    assert np.all(high >= np.minimum(v + h, 1) - 1e-3) and np.all(
        low <= np.maximum(v - h, 0) + 1e-3
    )
    assert high[v >= 0.88].min() >= 0.97 and low[v <= 0.15].max() <= 0.05


def test_the_suite_shared_readers_output_is_monotone():
    """The suite's shared reader: one MLP with an output per benchmark, published one output
    at a time (`MLPPredictor.output`); each output is as monotone as the net."""
    X, y = non_monotone_data(seed=4)
    Y = np.stack([y, 1 - y[::-1]], axis=1)
    net = MLPPredictor(hidden=(8, 4), epochs=60, lr=5e-3).fit(X, Y)
    probe = sheets(100, X.shape[1], seed=5)
    for j in range(2):
        assert single_flip_drops(net.output(j).predict, probe).min() >= 0.0
