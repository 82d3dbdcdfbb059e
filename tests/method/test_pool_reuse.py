"""A suite's pool checks refit each benchmark's own reader once (`method.pool.once`): the own
check's top edge and the joint check's own part are the same fit on the same models."""

from __future__ import annotations

from dataclasses import astuple
from itertools import combinations

import numpy as np
import pytest

from sparseeval.method.estimator import SparseEval
from sparseeval.method.pool import SUITE_RAMP, fit_edge, once, suite_pool_checks
from sparseeval.method.suite import SuiteSparseEval
from sparseeval.method.synthetic import make_leaderboard
from tests.method.test_method_reuse import QUIET


def _same_fit(one: tuple, other: tuple) -> bool:
    """Whether two recorded fits are of one estimator on equal answers and targets."""
    (e, a, t), (f, b, u) = one, other
    return e == f and a.shape == b.shape and bool((a == b).all()) and bool((t == u).all())


def test_once_fits_once_per_input_whatever_its_dtype():
    calls = []
    fit = once(lambda X, y: calls.append(len(X)) or object())
    X, y = np.array([[1, -1], [-1, 1]], dtype=np.int8), np.array([0.2, 0.7])
    first = fit(X, y)
    assert fit(X.astype(np.float32), y.copy()) is first  # equal values: the same fit
    assert fit(X[:1], y[:1]) is not first  # other models: a fit of their own
    assert fit(X, y[::-1]) is not first  # other targets too
    assert calls == [2, 1, 2]


def test_the_suite_pool_checks_fit_no_own_reader_twice_and_keep_the_joint_edge(monkeypatch):
    lb = make_leaderboard(220, {"arc": 40, "gsm8k": 30, "mmlu": 50}, seed=4)
    tr, va = np.arange(0, 150), np.arange(150, 220)
    X = {b: m.values[tr] for b, m in lb.items()}
    y = {b: m.y[tr] for b, m in lb.items()}
    template = SparseEval(refine_steps=2, epochs=40, patience=5, ensemble=2, **QUIET)
    suite = SuiteSparseEval(6, template, **QUIET).fit(
        X, y, {b: m.values[va] for b, m in lb.items()}, {b: m.y[va] for b, m in lb.items()}
    )
    suite.reader_names_ = dict.fromkeys(suite.benchmarks_, "own+joint")  # both parts refit

    own_fits: list[tuple] = []
    real = SparseEval.fit_reader

    def recorded(self, XA, t, name=None):
        if name is None:  # the benchmark's own kind: its own anchor columns
            own_fits.append((id(self), np.asarray(XA, dtype=np.float32), np.asarray(t)))
        return real(self, XA, t, name)

    monkeypatch.setattr(SparseEval, "fit_reader", recorded)
    pools = suite_pool_checks(suite, X, X, y)  # the training models stand in for calibration
    same = [(i, j) for i, j in combinations(range(len(own_fits)), 2)
            if _same_fit(own_fits[i], own_fits[j])]  # fmt: skip
    assert own_fits and not same, f"own readers fitted twice on the same models: {same}"
    # per benchmark: its own and joint edges share one fit, the average's rows are others
    assert len(own_fits) == 2 * len(suite.benchmarks_)

    monkeypatch.setattr(SparseEval, "fit_reader", real)
    XA, pred = suite.joint_input(X), suite.predict(X)
    for b in suite.benchmarks_:  # the joint edge as each part fitted anew gives it
        edge = fit_edge(lambda A, t: suite.refit_reader(b, A, t), XA, y[b], pred[b],  # noqa: B023
                        ramp=SUITE_RAMP)  # fmt: skip
        # the same fit; the sums over its rows may round in another order (1 ulp)
        for got, want in zip(astuple(pools[f"{b}/joint"].top), astuple(edge), strict=True):
            assert got == (want if want is None else pytest.approx(want, rel=1e-12))
