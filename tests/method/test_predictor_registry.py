"""The one table of predictors (`method.registry`): names, trainers, published kinds, readers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from sparseeval.consume.scoring.inference import READERS, load_predictor, save_predictor, widen
from sparseeval.method.estimator import SparseEval
from sparseeval.method.registry import (
    AUTO,
    PREDICTOR_CHOICES,
    PREDICTORS,
    needed,
    predictor_from_state,
)
from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.settings import Settings

FAST = dict(n_anchors=6, refine_steps=1, epochs=40, patience=5, progress=lambda s: None)


@pytest.fixture(scope="module")
def data():
    m = make_synthetic(160, 30, seed=7)
    s = split_models(m.model_ids, n_test=40, n_valid=40, seed=0)
    return m.values[s.train], m.y[s.train], m.values[s.valid], m.y[s.valid], m.values[s.test]


def test_every_registered_predictor_publishes_a_kind_a_numpy_reader_reads():
    assert {spec.kind for spec in PREDICTORS.values()} <= set(READERS)
    assert set(AUTO) <= set(PREDICTORS)
    assert needed(("blend",)) == {"blend", "mlp", "nnridge"}
    for name, spec in PREDICTORS.items():
        assert spec.trainer_class().kind == spec.kind, name
        assert set(spec.uses) <= set(PREDICTORS)


def test_settings_accept_exactly_the_registered_names():
    assert ("auto", *PREDICTORS) == PREDICTOR_CHOICES
    for name in PREDICTOR_CHOICES:
        assert Settings.of(predictor=name).predictor.predictor == name
    with pytest.raises(ValueError, match="predictor must be one of auto, ridge, nnridge, mlp"):
        Settings.of(predictor="forest")


@pytest.mark.parametrize("name", list(PREDICTORS))
def test_each_predictor_trains_publishes_and_comes_back(name, data, tmp_path):
    X, y, Xv, yv, Xt = data
    est = SparseEval(predictor=name, ensemble=2, **FAST).fit(X, y, X_valid=Xv, y_valid=yv)
    assert est.predictor_name_ == name and list(est.valid_scores_) == [name]
    XA = Xt[:, est.anchors_].astype(np.float32)
    expected = est.predictor_.predict(XA)
    config, arrays = est.predictor_.state()
    assert config["kind"] in READERS
    restored = predictor_from_state(config, arrays)  # the trainer side again: exactly equal
    assert np.array_equal(restored.predict(XA), expected)
    save_predictor(est.predictor_, tmp_path / name)
    assert np.max(np.abs(load_predictor(tmp_path / name).predict(XA) - expected)) < 1e-6
    cols = np.arange(2, 2 + XA.shape[1])
    wide = np.zeros((len(XA), XA.shape[1] + 4), dtype=np.float32)
    wide[:, cols] = XA
    assert (
        np.max(np.abs(widen(est.predictor_, cols, wide.shape[1]).predict(wide) - expected)) < 1e-6
    )


def test_an_unregistered_kind_is_refused():
    with pytest.raises(ValueError, match="no registered predictor publishes kind 'forest'"):
        predictor_from_state({"kind": "forest"}, {})


def test_reading_the_names_imports_no_torch():
    code = ("import sys, sparseeval.method.registry, sparseeval.pipeline.settings; "
            "print(sorted({'torch', 'sklearn', 'scipy'} & set(sys.modules)))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
