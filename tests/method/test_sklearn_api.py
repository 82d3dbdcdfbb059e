"""scikit-learn conventions: get_params / set_params / clone on SparseEval and the baselines."""

import logging

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

from sparseeval.method.baselines import (
    AllItemsRidge,
    AnchorPoints,
    GreedyRidge,
    LinearGD,
    RandomMean,
    RandomRidge,
)
from sparseeval.method.estimator import SparseEval
from sparseeval.method.paper import PaperSparseEval
from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.settings import Settings


def quiet(message: str) -> None:
    pass


# Fast configurations: a tiny SparseEval and every baseline.
FAST = {
    SparseEval: dict(
        n_anchors=8, refine_steps=1, epochs=20, ensemble=1, predictor="ridge", progress=quiet
    ),
    RandomMean: dict(n_anchors=8, seed=3),
    RandomRidge: dict(n_anchors=8, seed=3),
    GreedyRidge: dict(n_anchors=8),
    AllItemsRidge: dict(),
    AnchorPoints: dict(n_anchors=8, seed=3),
    LinearGD: dict(n_anchors=8, seed=3, epochs=20),
    PaperSparseEval: dict(
        n_anchors=8, refine_steps=2, proxy_steps=5, steps=30, check_every=5, progress=quiet
    ),
}
CLASSES = list(FAST)
IDS = [c.__name__ for c in CLASSES]


@pytest.fixture(scope="module")
def data():
    m = make_synthetic(300, 60, seed=0)
    sp = split_models(m.model_ids, n_test=80, n_valid=80, seed=0)
    valid = {"X_valid": m.values[sp.valid], "y_valid": m.y[sp.valid]}
    return (m.values[sp.train], m.y[sp.train]), valid, m.values[sp.test]


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_is_a_base_estimator_and_get_params_round_trips(cls):
    kw = FAST[cls]
    est = cls(**kw)
    assert isinstance(est, BaseEstimator)
    params = est.get_params()
    for name, value in kw.items():
        assert params[name] is value, name
    # every constructor argument is reported, and rebuilding from them is equivalent
    assert cls(**params).get_params() == params
    assert repr(est).startswith(cls.__name__)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_set_params_and_clone_unfitted(cls):
    est = cls(**FAST[cls])
    assert est.set_params(n_anchors=5) is est
    assert est.n_anchors == 5 and est.get_params()["n_anchors"] == 5
    copy = clone(est)
    assert type(copy) is cls and copy is not est
    assert copy.get_params() == est.get_params()
    with pytest.raises(ValueError):
        est.set_params(no_such_parameter=1)


@pytest.mark.parametrize("cls", CLASSES, ids=IDS)
def test_clone_fitted_is_unfitted_and_refits_identically(cls, data):
    fit_args, valid, X_test = data
    est = cls(**FAST[cls]).fit(*fit_args, **valid)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "anchors_")
    copy.fit(*fit_args, **valid)
    np.testing.assert_array_equal(copy.anchors_, est.anchors_)
    np.testing.assert_allclose(copy.predict(X_test), est.predict(X_test))


def test_init_stores_arguments_unchanged():
    candidates = ["kmeans", "random"]
    est = SparseEval(init_candidates=candidates)
    assert est.init_candidates is candidates
    assert est.progress is None
    assert clone(est).init_candidates == candidates


def test_invalid_predictor_is_refused_at_fit_time(data):
    fit_args, valid, _ = data
    est = SparseEval(n_anchors=5, predictor="nope", progress=quiet)  # no error yet
    assert est.get_params()["predictor"] == "nope"
    assert clone(est).predictor == "nope"
    with pytest.raises(ValueError, match="predictor must be one of"):
        est.fit(*fit_args, **valid)
    est.set_params(predictor="ridge", refine_steps=1)
    assert est.fit(*fit_args, **valid).predictor_name_ == "ridge"


def test_progress_none_logs_and_callable_is_called(data, caplog):
    fit_args, valid, _ = data
    kw = FAST[SparseEval] | {"progress": None}
    with caplog.at_level(logging.INFO, logger="sparseeval"):
        SparseEval(**kw).fit(*fit_args, **valid)
    assert any("final predictor" in r.getMessage() for r in caplog.records)
    said = []
    SparseEval(**(kw | {"progress": said.append})).fit(*fit_args, **valid)
    assert any("final predictor" in s for s in said)


def test_paper_and_from_config_still_work():
    paper = PaperSparseEval(7, seed=2, progress=quiet)
    assert isinstance(paper, SparseEval) and isinstance(paper, PaperSparseEval)
    assert paper.get_params()["n_anchors"] == 7 and paper.init == "auto"
    assert paper.refine_steps == 10 and paper.proxy_steps == 2000 and paper.seed == 2
    assert (paper.steps, paper.check_every, paper.patience, paper.lr) == (20000, 500, 30, 5e-4)
    assert clone(paper).get_params() == paper.get_params()
    assert PaperSparseEval(7, benchmark="mmlu")._init_name() == "random"
    assert PaperSparseEval(7, benchmark="arc")._init_name() == "kmeans"
    assert PaperSparseEval(7, init="random")._init_name() == "random"
    settings = Settings.of()
    est = SparseEval.from_config(settings.values(), n_anchors=9)
    params = est.get_params()
    assert params["n_anchors"] == 9
    shared = {n for n in SparseEval._get_param_names() if n in settings.values()}
    assert {"init", "proxy", "judge", "lr", "epochs", "seed", "device"} <= shared
    for name in shared - {"n_anchors"}:
        assert params[name] == settings.values()[name], name


def test_cross_val_score_and_grid_search_fit_without_validation_rows():
    """`fit(X, y)` draws its validation rows (a seeded fifth), so sklearn's tools work."""
    from sklearn.model_selection import GridSearchCV, cross_val_score

    from sparseeval.method.anchor_estimator import validation_split

    m = make_synthetic(300, 60, seed=0)
    est = SparseEval(**FAST[SparseEval])
    mae = -cross_val_score(est, m.values, m.y, cv=3, scoring="neg_mean_absolute_error")
    assert mae.shape == (3,) and np.all(mae < 0.12), mae  # 8 of 60 items: ~8 points
    assert np.all(cross_val_score(est, m.values, m.y, cv=3) > 0.6)  # score: R^2
    grid = GridSearchCV(est, {"n_anchors": [3, 8]}, cv=3, scoring="neg_mean_absolute_error")
    assert grid.fit(m.values, m.y).best_params_ == {"n_anchors": 8}
    X, y, Xv, yv = validation_split(m.values, m.y, None, None, seed=0)
    assert len(yv) == 60 and len(y) == 240
    inside = clone(est).fit(m.values, m.y)
    given = clone(est).fit(X, y, X_valid=Xv, y_valid=yv)
    np.testing.assert_array_equal(inside.anchors_, given.anchors_)
    np.testing.assert_array_equal(inside.predict(m.values), given.predict(m.values))
    with pytest.raises(ValueError, match="both X_valid and y_valid"):
        clone(est).fit(X, y, X_valid=Xv)


# scikit-learn's generic checks feed real-valued X; answers are 0/1 or +-1 (or graded,
# 2*score - 1 in [-1, 1]) only, so the checks that need other X fail on that domain, by
# design, and are declared here; X in [-1, 1] is read as graded, and then its y in [0, 2]
# fails on the accuracies' domain.
DOMAINS = ("must be 0/1, boolean or -1/+1", "accuracies must be in [0, 1]")
EXPECTED_FAILURES = {
    "check_dtype_object": "object dtype is no 0/1 answer matrix",
    "check_positive_only_tag_during_fit": "real-valued X",
    "check_fit2d_1sample": "real-valued X is refused before the sample count",
    "check_fit2d_1feature": "real-valued X is refused before the feature count",
    "check_estimators_nan_inf": "its finite X, read as graded, has fewer items than anchors",
}


def test_check_estimator_fails_only_on_the_answer_domain():
    """`check_estimator` (issue [1/5] item 5): unfitted predict, empty, sparse and complex
    input, y=None and 1-D input pass; every other failure is the +-1 domain, said so."""
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(SparseEval(**FAST[SparseEval]), on_fail=None)
    failed = {r["check_name"]: str(r["exception"]) for r in results if r["status"] == "failed"}
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert {"check_estimators_unfitted", "check_estimators_empty_data_messages",
            "check_requires_y_none", "check_estimator_sparse_array", "check_complex_data",
            "check_estimator_sparse_matrix", "check_fit1d"} <= passed  # fmt: skip
    undeclared = {
        n: e for n, e in failed.items()
        if n not in EXPECTED_FAILURES and not any(d in e for d in DOMAINS)
    }  # fmt: skip
    assert not undeclared


def test_predict_before_fit_and_on_another_width(data):
    from sklearn.exceptions import NotFittedError

    from sparseeval.method.matrix import MatrixError

    fit_args, valid, X_test = data
    with pytest.raises(NotFittedError):
        SparseEval(**FAST[SparseEval]).predict(X_test)
    est = SparseEval(**FAST[SparseEval]).fit(*fit_args, **valid)
    assert est.n_features_in_ == X_test.shape[1]
    with pytest.raises(MatrixError, match="fitted on 60"):
        est.predict(X_test[:, :-1])
