"""Wrong encodings are refused, 0/1 answers are converted: every estimator, one shared check."""

import numpy as np
import pytest

from sparseeval import MatrixError, ResponseMatrix, make_synthetic, split_models
from sparseeval.method.baselines import (
    AllItemsRidge,
    AnchorPoints,
    GreedyRidge,
    LinearGD,
    RandomMean,
    RandomRidge,
)
from sparseeval.method.estimator import SparseEval
from sparseeval.method.matrix import check_Xy, check_y, to_signs
from sparseeval.method.paper import PaperSparseEval


def quiet(message: str) -> None:
    pass


FAST = {
    SparseEval: dict(
        n_anchors=6, refine_steps=1, epochs=10, ensemble=1, predictor="ridge", progress=quiet
    ),
    PaperSparseEval: dict(
        n_anchors=6, refine_steps=1, proxy_steps=3, steps=6, check_every=2, progress=quiet
    ),
    RandomMean: dict(n_anchors=6, seed=1),
    RandomRidge: dict(n_anchors=6, seed=1),
    GreedyRidge: dict(n_anchors=6),
    AllItemsRidge: dict(),
    AnchorPoints: dict(n_anchors=6, seed=1),
    LinearGD: dict(n_anchors=6, seed=1, epochs=10),
}
CLASSES = list(FAST)
IDS = [c.__name__ for c in CLASSES]


@pytest.fixture(scope="module")
def data():
    m = make_synthetic(160, 30, seed=4)
    s = split_models(m.model_ids, n_test=40, n_valid=40, seed=0)
    X = m.values.astype(np.float32)
    return X[s.train], m.y[s.train], X[s.valid], m.y[s.valid], X[s.test]


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_percent_targets_are_refused_with_divide_by_100(cls, data):
    X, y, Xv, yv, _ = data
    with pytest.raises(MatrixError, match=r"y \(training\) looks like percentages \(max [\d.]+\): "
                       "divide by 100"):  # fmt: skip
        cls(**FAST[cls]).fit(X, 100 * y, X_valid=Xv, y_valid=yv)
    with pytest.raises(MatrixError, match="divide by 100"):
        cls(**FAST[cls]).fit(X, y, X_valid=Xv, y_valid=100 * yv)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        cls(**FAST[cls]).fit(X, y - 2, X_valid=Xv, y_valid=yv)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_zero_one_and_boolean_answers_are_converted_to_signs(cls, data):
    X, y, Xv, yv, Xt = data
    signs = cls(**FAST[cls]).fit(X, y, X_valid=Xv, y_valid=yv)
    zero_one = cls(**FAST[cls]).fit((X + 1) / 2, y, X_valid=(Xv + 1) / 2, y_valid=yv)
    boolean = cls(**FAST[cls]).fit(X > 0, y, X_valid=Xv > 0, y_valid=yv)
    expected = signs.predict(Xt)
    for est in (zero_one, boolean):
        np.testing.assert_array_equal(est.anchors_, signs.anchors_)
        np.testing.assert_allclose(est.predict(Xt), expected, atol=1e-6)
    # predict converts 0/1 and boolean rows the same way
    np.testing.assert_allclose(signs.predict((Xt + 1) / 2), expected, atol=1e-6)
    np.testing.assert_allclose(signs.predict(Xt > 0), expected, atol=1e-6)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_other_values_are_refused_naming_row_and_column(cls, data):
    X, y, Xv, yv, _ = data
    bad = X.copy()
    bad[4, 7] = np.nan
    with pytest.raises(
        MatrixError, match=r"X \(training\): missing value \(NaN\) at row 5, column 8"
    ):
        cls(**FAST[cls]).fit(bad, y, X_valid=Xv, y_valid=yv)
    bad = Xv.copy()
    bad[2, 3] = 0.5
    with pytest.raises(MatrixError, match=r"X \(validation\).*found 0\.5 at row 3, column 4"):
        cls(**FAST[cls]).fit(X, y, X_valid=bad, y_valid=yv)
    mixed = X.copy()
    mixed[0, 1] = 0  # a 0 among -1/+1: neither encoding
    with pytest.raises(MatrixError, match="mix of 0 and -1"):
        cls(**FAST[cls]).fit(mixed, y, X_valid=Xv, y_valid=yv)


def test_to_signs_names_the_first_nan_one_based():
    a = np.ones((4, 6))
    a[2, 4] = np.nan
    with pytest.raises(MatrixError, match="row 3, column 5"):
        to_signs(a)
    with pytest.raises(MatrixError, match="row 3, column 5"):
        ResponseMatrix.from_array(np.vstack([a] * 3))


def test_check_y_messages():
    with pytest.raises(MatrixError, match=r"y looks like percentages \(max 87\.0\): divide by 100"):
        check_y([12.0, 87.0, 50.0])
    with pytest.raises(MatrixError, match="position 2"):
        check_y([0.1, np.nan])
    with pytest.raises(MatrixError, match="3 values for 2 models"):
        check_y([0.1, 0.2, 0.3], 2)
    with pytest.raises(MatrixError, match=r"targets looks like percentages"):
        ResponseMatrix.from_array(np.ones((12, 2)), targets=[55.0] * 12)
    signs, y = check_Xy(np.array([[0, 1], [1, 1]]), [0.5, 1.0])
    assert signs.tolist() == [[-1, 1], [1, 1]] and y.dtype == np.float64


def test_calibrate_and_item_ids_are_checked(data):
    X, y, Xv, yv, Xt = data
    est = SparseEval(**FAST[SparseEval]).fit(X, y, X_valid=Xv, y_valid=yv)
    with pytest.raises(MatrixError, match="divide by 100"):
        est.calibrate(Xt, 100 * est.predict(Xt))
    with pytest.raises(MatrixError, match="item_ids has 2 ids for 30 items"):
        SparseEval(**FAST[SparseEval]).fit(X, y, X_valid=Xv, y_valid=yv, item_ids=["a", "b"])
    with pytest.raises(MatrixError, match="validation models"):
        SparseEval(**FAST[SparseEval]).fit(X, y, X_valid=Xv[:0], y_valid=yv[:0])
