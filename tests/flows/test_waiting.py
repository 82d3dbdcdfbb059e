"""Waiting is not failing: small benchmarks split smaller, too small ones wait in one line."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline import recipe
from sparseeval.pipeline.records import MatrixInfo, Waiting
from sparseeval.pipeline.settings import Settings
from tests.helpers import release, run


def test_split_sizes_scale_down_for_small_benchmarks(tmp_path):
    s = Settings.of(home=tmp_path)  # n_test = n_valid = n_calib = 200
    assert recipe.heldout_sizes(400, s) == (80, 80)
    assert recipe.heldout_sizes(100, s) == (20, 20)
    assert recipe.heldout_sizes(1000, s) == (200, 200)
    assert recipe.heldout_sizes(5000, s) == (200, 200)
    assert recipe.heldout_sizes(400, s.replace(n_test=0.1, n_valid=50)) == (40, 50)
    exact = s.replace(stable_split=False)  # stable splits hold the sizes in expectation
    split = recipe.split_step(make_synthetic(400, 30, seed=0), exact, "arc")
    assert split.sizes() == {"train": 192, "valid": 80, "test": 80, "calibration": 48}


def test_large_benchmarks_split_as_before(tmp_path):
    s = Settings.of(home=tmp_path)
    m = make_synthetic(1200, 20, seed=1)
    split = recipe.split_step(m, s, "arc")
    before = split_models(m.model_ids, 200, 200, s.splits.seed, s.splits.stable_split)
    assert np.array_equal(split.test, before.test) and np.array_equal(split.valid, before.valid)


def test_too_few_models_wait_with_one_line(tmp_path):
    with pytest.raises(recipe.NotEnoughModels, match=r"arc: 60 models, needs at least 100"):
        recipe.split_step(make_synthetic(60, 20, seed=0), Settings.of(home=tmp_path), "arc")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def logged():
    """Every record of the Prefect and sparseeval loggers during the test."""
    handler = _Records()
    loggers = [logging.getLogger(n) for n in ("prefect", "sparseeval")]
    for lg in loggers:
        lg.addHandler(handler)
    yield handler.records
    for lg in loggers:
        lg.removeHandler(handler)


@pytest.mark.usefixtures("prefect_harness")
def test_a_waiting_benchmark_is_a_completed_task(tmp_path, logged):
    from sparseeval import tasks

    home = tmp_path / "home"
    out = run(home, [release(tmp_path, 0, 60, ["arc"])])
    r = out.results[0]
    assert r.error is None and r.fit is None and r.fit_state == "waiting"
    assert r.outcome == "waiting for more models (arc: 60 models, needs at least 100 to train)"
    assert not out.failed
    assert not [x for x in logged if x.levelno >= logging.ERROR], [x.getMessage() for x in logged]
    assert not [x for x in logged if x.exc_info]  # no traceback

    matrix: MatrixInfo = r.matrix
    fit = Settings.of(home=home)
    state = tasks.fit_benchmark(fit, matrix, 8, return_state=True)
    assert state.is_completed() and isinstance(state.result(), Waiting)


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
@pytest.mark.usefixtures("prefect_harness")
def test_a_400_model_benchmark_trains_with_default_splits(tmp_path):
    home = tmp_path / "home"
    src = release(tmp_path, 0, 400, ["arc"], n_models=400)
    out = run(home, [src], n_test=200, n_valid=200, n_calib=200)
    r = out.results[0]
    assert r.error is None and r.fit is not None and r.fit.trained
    sizes = r.fit.split_sizes  # stable splits: 80 test and 80 validation in expectation
    assert 55 <= sizes["test"] <= 105 and 55 <= sizes["valid"] <= 105, sizes
    assert sum(sizes.values()) == 400 and sizes["calibration"] <= sizes["train"] / 4
    assert out.n_published == 1
