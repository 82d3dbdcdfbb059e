"""The NumPy-only readers reproduce the trained (torch / scipy) predictors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparseeval.consume.scoring import inference
from sparseeval.method.predictors import (
    BlendPredictor,
    MLPPredictor,
    NonNegativeRidge,
    RidgePredictor,
)
from sparseeval.method.synthetic import make_synthetic

HEAVY = ("torch", "scipy", "sklearn", "prefect", "duckdb", "polars")


@pytest.fixture(scope="module")
def data():
    m = make_synthetic(300, 60)
    X = m.values[:, :10].astype(np.float32)
    X_new = np.where(np.random.default_rng(1).random((50, 10)) < 0.5, 1.0, -1.0)
    return X, m.y, np.vstack([X, X_new])


@pytest.fixture(scope="module")
def trained(data):
    X, y, _ = data
    mlp = MLPPredictor(hidden=(128, 64, 32), sigmoid=True, epochs=30).fit(X, y)
    nnridge = NonNegativeRidge().fit(X, y)
    return {
        "ridge": RidgePredictor().fit(X, y),
        "nnridge": nnridge,
        "mlp": mlp,
        "blend": BlendPredictor([mlp, nnridge], [0.6, 0.4]),
    }


@pytest.mark.parametrize("kind", ["ridge", "nnridge", "mlp", "blend"])
def test_reader_matches_trained(kind, trained, data, tmp_path):
    _, _, X = data
    inference.save_predictor(trained[kind], tmp_path)
    reader = inference.load_predictor(tmp_path)
    assert reader.config["kind"] == kind
    got, want = reader.predict(X), trained[kind].predict(X)
    assert got.dtype == np.float64 and got.shape == (len(X),)
    assert np.all((got >= 0.0) & (got <= 1.0))
    assert np.max(np.abs(got - want)) < 1e-6


def test_reader_round_trips(trained, data, tmp_path):
    _, _, X = data
    inference.save_predictor(trained["blend"], tmp_path / "a")
    first = inference.load_predictor(tmp_path / "a")
    inference.save_predictor(first, tmp_path / "b")
    second = inference.load_predictor(tmp_path / "b")
    assert second.config == first.config
    assert second.arrays.keys() == first.arrays.keys()
    np.testing.assert_array_equal(second.predict(X), first.predict(X))


def test_unknown_kind_is_refused(trained, tmp_path):
    inference.save_predictor(trained["ridge"], tmp_path)
    config = json.loads((tmp_path / "predictor.json").read_text())
    (tmp_path / "predictor.json").write_text(json.dumps(config | {"kind": "forest"}))
    with pytest.raises(ValueError, match="forest"):
        inference.load_predictor(tmp_path)


def test_wrong_width_is_refused(trained, data, tmp_path):
    inference.save_predictor(trained["mlp"], tmp_path)
    with pytest.raises(ValueError, match="10 columns"):
        inference.load_predictor(tmp_path).predict(data[0][:, :9])


def test_erf_matches_math():
    x = np.concatenate([np.linspace(-8, 8, 20001), [0.0, -0.0, 1.0, -1.0, 6.0, 40.0, -40.0]])
    want = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(inference.erf(x) - want)) < 1e-15


def test_reader_needs_only_numpy(trained, data, tmp_path):
    inference.save_predictor(trained["blend"], tmp_path)
    np.save(tmp_path / "X.npy", data[2])
    np.save(tmp_path / "want.npy", trained["blend"].predict(data[2]))
    module = Path(inference.__file__).resolve()
    code = f"""
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("sparseeval_inference", {str(module)!r})
inference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(inference)
reader = inference.load_predictor({str(tmp_path)!r})
got = reader.predict(np.load({str(tmp_path / "X.npy")!r}))
assert np.max(np.abs(got - np.load({str(tmp_path / "want.npy")!r}))) < 1e-6
heavy = [m for m in {HEAVY!r} if m in sys.modules]
assert not heavy, heavy
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
