"""The suite's fits side by side (`method.parallel`): the same results as one at a time,
and at most the cap of MLPs training at once."""

from __future__ import annotations

import threading
import time

import numpy as np

from sparseeval.method import predictors
from sparseeval.method.estimator import SparseEval
from sparseeval.method.parallel import side_by_side, training_slot, trainings_at_once
from sparseeval.method.pool import suite_pool_checks
from sparseeval.method.suite import SuiteSparseEval
from sparseeval.method.synthetic import make_leaderboard
from tests.method.test_method_reuse import QUIET, assert_identical, suite_arrays

ITEMS = {"arc": 40, "gsm8k": 30, "mmlu": 50}


def test_side_by_side_keeps_the_order_and_one_job_runs_here():
    tasks = [lambda i=i: (time.sleep(0.01 * (3 - i)), i)[1] for i in range(4)]
    assert side_by_side(tasks) == [0, 1, 2, 3]
    assert side_by_side(tasks, 2) == [0, 1, 2, 3]
    here = threading.get_ident()
    assert side_by_side([threading.get_ident] * 3, 1) == [here] * 3


def test_the_cap_holds_in_nested_fits_and_is_lifted_after():
    running, most, lock = [0], [0], threading.Lock()

    def train() -> None:
        with training_slot():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.02)
            with lock:
                running[0] -= 1

    def nested() -> list:
        with trainings_at_once(5):  # inside the outer cap: the outer one stands
            return side_by_side([train] * 4)

    with trainings_at_once(2):
        side_by_side([nested] * 3)
    assert most[0] == 2
    most[0] = 0
    side_by_side([train] * 4)  # no cap outside
    assert most[0] == 4


def fitted_suite(n_jobs: int | None) -> tuple:
    """A small suite's arrays and its pool checks, fitted with `n_jobs`."""
    lb = make_leaderboard(220, ITEMS, seed=4)
    tr, va, te = np.arange(0, 120), np.arange(120, 170), np.arange(170, 220)
    X = lambda r: {b: m.values[r] for b, m in lb.items()}  # noqa: E731
    y = lambda r: {b: m.y[r] for b, m in lb.items()}  # noqa: E731
    template = SparseEval(refine_steps=2, epochs=40, patience=5, ensemble=2, n_jobs=n_jobs,
                          **QUIET)  # fmt: skip
    suite = SuiteSparseEval(6, template, **QUIET).fit(X(tr), y(tr), X(va), y(va))
    pools = suite_pool_checks(suite, X(tr), X(va), y(tr))
    return suite_arrays(suite, X(te)), {k: v.to_dict() for k, v in pools.items()}


def test_a_suite_side_by_side_equals_one_fit_at_a_time(monkeypatch):
    trained: list[tuple] = []
    real = predictors.MLPPredictor.fit

    def counted(self, X, *args, **kwargs):
        trained.append((self.seed, self.hidden, len(X)))
        return real(self, X, *args, **kwargs)

    monkeypatch.setattr(predictors.MLPPredictor, "fit", counted)
    serial = fitted_suite(1)
    serial_fits, trained[:] = sorted(trained), []
    parallel = fitted_suite(None)
    assert_identical(serial[0], parallel[0])
    assert serial[1] == parallel[1]
    assert serial_fits == sorted(trained)  # the same MLPs: none trained twice or skipped
