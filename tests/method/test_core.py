"""Core library: matrices, splits, selection, predictors, baselines, metrics."""

import inspect
import itertools
import json

import numpy as np
import pytest

from sparseeval import MatrixError, ResponseMatrix, make_synthetic, split_models
from sparseeval.consume.scoring.inference import load_predictor, save_predictor
from sparseeval.method.baselines import (
    AllItemsRidge,
    AnchorPoints,
    GreedyRidge,
    RandomMean,
    RandomRidge,
)
from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import evaluate, kendall_tau, mae_points
from sparseeval.method.predictors import (
    BlendPredictor,
    MLPPredictor,
    NonNegativeRidge,
    RidgePredictor,
)
from sparseeval.method.selection import AnchorSelector
from sparseeval.pipeline.settings import Settings

QUIET = {"progress": lambda s: None}


@pytest.fixture(scope="module")
def small():
    return make_synthetic(300, 60, seed=1)


# -- matrices -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        np.array([[0, 1], [1, 0]] * 6),
        np.array([[False, True], [True, False]] * 6),
        np.array([[-1, 1], [1, -1]] * 6),
        np.array([[0.0, 1.0], [1.0, 0.0]] * 6),
    ],
)
def test_matrix_accepts_binary_boolean_and_signs(values):
    m = ResponseMatrix.from_array(values)
    assert m.values.dtype == np.int8
    assert set(np.unique(m.values)) == {-1, 1}
    assert m.values[0].tolist() == [-1, 1]
    assert m.y[0] == 0.5


@pytest.mark.parametrize(
    ("values", "kwargs", "message"),
    [
        (np.zeros((12, 3, 1)), {}, "2-D"),
        (np.array([[0, 2]] * 12), {}, "0/1"),
        (np.array([[0.0, np.nan]] * 12), {}, "NaN"),
        (np.array([[0, 1]] * 3), {}, "at least"),
        (np.array([["a", "b"]] * 12), {}, "numeric"),
        (np.array([[0, 1]] * 12), {"item_ids": ["x", "x"]}, "duplicate item"),
        (np.array([[0, 1]] * 12), {"model_ids": ["a"] * 12}, "duplicate model"),
        (np.array([[0, 1]] * 12), {"item_ids": ["x"]}, "item ids"),
        (np.array([[0, 1]] * 12), {"targets": [2.0] * 12}, "targets"),
    ],
)
def test_matrix_rejects_bad_input_with_clear_error(values, kwargs, message):
    with pytest.raises(MatrixError, match=message):
        ResponseMatrix.from_array(values, **kwargs)


def test_fingerprint_changes_with_values_and_ids(small):
    same = ResponseMatrix(small.values.copy(), small.model_ids.copy(), small.item_ids.copy())
    assert same.fingerprint() == small.fingerprint()
    flipped = small.values.copy()
    flipped[0, 0] *= -1
    assert ResponseMatrix(flipped, small.model_ids, small.item_ids).fingerprint() != (
        small.fingerprint()
    )


# -- splits -------------------------------------------------------------------------------


def test_split_counts_fractions_and_disjointness():
    ids = [f"org/m{i}" for i in range(100)]
    s = split_models(ids, n_test=20, n_valid=0.1, seed=3)
    assert s.sizes() == {"train": 70, "valid": 10, "test": 20}
    assert len(set(s.train) | set(s.valid) | set(s.test)) == 100
    assert np.array_equal(split_models(ids, 20, 0.1, seed=3).test, s.test)


def test_stable_split_keeps_assignments_when_models_arrive():
    old = [f"org/m{i}" for i in range(500)]
    new = old + [f"new/m{i}" for i in range(300)]
    a, b = split_models(old, 0.2, 0.2, stable=True), split_models(new, 0.2, 0.2, stable=True)
    for part in ("train", "valid", "test"):
        before = {old[i] for i in getattr(a, part)}
        after = {new[i] for i in getattr(b, part)}
        assert before == {m for m in after if m in set(old)}
    assert 100 < len(b.test) < 220


def test_split_refuses_too_few_training_models():
    with pytest.raises(ValueError, match="training"):
        split_models([str(i) for i in range(10)], n_test=5, n_valid=4)


# -- selection ----------------------------------------------------------------------------


def _parts(m, seed=0):
    s = split_models(m.model_ids, 60, 60, seed=seed)
    X = m.values.astype(np.float32)
    return X, m.y, s


@pytest.mark.parametrize("proxy", ["ridge", "mlp"])
def test_selection_never_reads_test_rows(small, proxy):
    X, y, s = _parts(small)

    def select(values):
        return (
            AnchorSelector(
                8,
                init_candidates=("kmeans", "random", "greedy"),
                refine_steps=2,
                proxy=proxy,
                judge="loo" if proxy == "ridge" else "validation",
                proxy_epochs=30,
                **QUIET,
            )
            .fit(values[s.train], y[s.train], X_valid=values[s.valid], y_valid=y[s.valid])
            .anchors_
        )

    scrambled = X.copy()
    scrambled[s.test] *= -1
    assert np.array_equal(select(X), select(scrambled))
    est = SparseEval(8, refine_steps=1, epochs=30, ensemble=1, **QUIET)
    a = est.fit(X[s.train], y[s.train], X_valid=X[s.valid], y_valid=y[s.valid]).anchors_
    b = est.fit(
        scrambled[s.train], y[s.train], X_valid=scrambled[s.valid], y_valid=y[s.valid]
    ).anchors_
    assert np.array_equal(a, b)


def test_swap_reduces_error_in_the_linear_case():
    rng = np.random.default_rng(0)
    X = np.where(rng.random((400, 30)) < 0.5, 1.0, -1.0)
    y = 0.5 + 0.1 * X[:, 7] + 0.02 * X[:, :5].sum(axis=1) / 5
    sel = AnchorSelector(
        5, init=[10, 11, 12, 13, 14], refine_steps=1, acceptance="always", proxy="ridge", **QUIET
    )
    sel.fit(X[:300], y[:300], X_valid=X[300:], y_valid=y[300:])
    swap = sel.history_[0]
    assert swap.added == 7
    assert 7 in sel.anchors_
    before = np.setdiff1d(np.append(sel.anchors_, swap.removed), [swap.added])

    def train_mse(anchors):
        p = RidgePredictor(alpha=1e-6).fit(X[:300, anchors], y[:300])
        return np.mean((p.predict(X[:300, anchors]) - y[:300]) ** 2)

    assert train_mse(sel.anchors_) < train_mse(before)


def test_validated_acceptance_never_worsens_validation(small):
    X, y, s = _parts(small)
    sel = AnchorSelector(
        8, init="random", refine_steps=4, acceptance="validated", proxy="ridge", **QUIET
    ).fit(X[s.train], y[s.train], X_valid=X[s.valid], y_valid=y[s.valid])
    assert 1 <= len(sel.history_) <= 4
    kept = [h.mae_before for h in sel.history_] + [sel.mae_]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(kept))
    for h in sel.history_:
        assert h.accepted == (h.mae_after < h.mae_before)
    assert all(h.accepted for h in sel.history_[:-1])  # stops at the first rejection


def test_loo_judge_scores_by_exact_leave_one_out(small):
    X, y, s = _parts(small)
    sel = AnchorSelector(6, refine_steps=3, proxy="ridge", judge="loo", **QUIET).fit(
        X[s.train], y[s.train], X_valid=X[s.valid], y_valid=y[s.valid]
    )
    assert set(sel.init_scores_) == {"kmeans", "random"}  # greedy would judge itself
    rows = np.concatenate([s.train, s.valid])
    XA, yr = X[rows][:, sel.anchors_], y[rows]
    alpha = RidgePredictor().fit(XA, yr).alpha_
    errors = []
    for i in range(len(rows)):
        keep = np.arange(len(rows)) != i
        fit = RidgePredictor(alpha=alpha).fit(XA[keep], yr[keep])
        raw = (XA[i] - fit.mean_) @ fit.coef_ + fit.intercept_  # unclipped, as LOO is
        errors.append(abs(raw - yr[i]))
    assert sel.mae_ == pytest.approx(np.mean(errors), rel=1e-6)


def test_loo_judge_needs_the_ridge_proxy():
    with pytest.raises(ValueError, match="ridge"):
        AnchorSelector(5, proxy="mlp", judge="loo")


def test_adaptive_init_records_each_candidate(small):
    X, y, s = _parts(small)
    sel = AnchorSelector(8, refine_steps=0, proxy="ridge", **QUIET).fit(
        X[s.train], y[s.train], X_valid=X[s.valid], y_valid=y[s.valid]
    )
    assert set(sel.init_scores_) == {"kmeans", "random"}
    assert sel.init_ == min(sel.init_scores_, key=sel.init_scores_.get)
    assert len(np.unique(sel.anchors_)) == 8


# -- predictors ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ridge", "nnridge", "mlp", "blend"])
def test_predictor_save_load_round_trip(small, tmp_path, kind):
    X, y, s = _parts(small)
    XA = X[:, :10]
    ridge = RidgePredictor().fit(XA[s.train], y[s.train])
    mlp = MLPPredictor(epochs=20).fit(XA[s.train], y[s.train])
    pred = {
        "ridge": ridge,
        "nnridge": NonNegativeRidge().fit(XA[s.train], y[s.train]),
        "mlp": mlp,
        "blend": BlendPredictor([mlp, ridge], [0.3, 0.7]),
    }[kind]
    save_predictor(pred, tmp_path)
    loaded = load_predictor(tmp_path)
    np.testing.assert_allclose(loaded.predict(XA[s.test]), pred.predict(XA[s.test]), atol=1e-6)


def test_non_negative_ridge_never_gives_an_item_negative_weight():
    rng = np.random.default_rng(3)
    X = np.where(rng.random((80, 12)) < 0.5, 1.0, -1.0)
    y = 0.5 + 0.04 * X[:, 0] + 0.03 * X[:, 1] - 0.02 * X[:, 2] + 0.01 * rng.standard_normal(80)
    nn = NonNegativeRidge().fit(X, y)
    assert (nn.coef_ >= 0).all() and nn.coef_[2] == 0.0
    assert nn.coef_[0] > nn.coef_[1] > 0.01
    assert RidgePredictor().fit(X, y).coef_[2] < 0  # plain ridge follows the negative item
    # where the unconstrained fit is already non-negative, both agree
    XP = X[:, :2]
    np.testing.assert_allclose(
        NonNegativeRidge(alpha=1.0).fit(XP, y).coef_,
        RidgePredictor(alpha=1.0).fit(XP, y).coef_,
        atol=1e-8,
    )


def test_predictor_load_refuses_pickled_arrays(tmp_path, small):
    save_predictor(RidgePredictor().fit(small.values[:, :4], small.y), tmp_path)
    np.savez(tmp_path / "weights.npz", mean=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="pickle"):
        load_predictor(tmp_path)


def test_mlp_learns_and_stops_early():
    rng = np.random.default_rng(0)
    X = np.where(rng.random((300, 12)) < 0.5, 1.0, -1.0)
    y = (X.mean(axis=1) + 1) / 2
    p = MLPPredictor(lr=3e-3, epochs=3000, patience=20).fit(X, y)
    assert p.epochs_ < 3000
    assert mae_points(p.predict(X), y) < 3.0


# -- baselines and metrics ----------------------------------------------------------------


def test_random_mean_is_the_mean_of_its_anchors():
    X = np.array([[1, 1, -1, -1], [1, -1, -1, -1], [-1, -1, -1, -1]] * 4, dtype=float)
    b = RandomMean(n_anchors=2, seed=0).fit(X, (X.mean(1) + 1) / 2)
    expected = (X[:, b.anchors_].mean(axis=1) + 1) / 2
    np.testing.assert_allclose(b.predict(X), expected)


def test_anchor_points_pairs_weights_with_their_own_anchor():
    # items 0-5 form a big cluster, items 6-7 a small one with opposite pattern
    rng = np.random.default_rng(0)
    base = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    big = np.tile(base[:, None], (1, 6))
    small_cluster = np.tile(-base[:, None], (1, 2))
    X = np.hstack([small_cluster, big])  # small cluster first: index order != cluster order
    b = AnchorPoints(n_anchors=2, seed=0).fit(X, np.zeros(40))
    weights = dict(zip(b.anchors_.tolist(), b.weights_.tolist(), strict=True))
    small_anchor = next(a for a in weights if a < 2)
    big_anchor = next(a for a in weights if a >= 2)
    assert weights[small_anchor] == pytest.approx(0.25)
    assert weights[big_anchor] == pytest.approx(0.75)
    np.testing.assert_allclose(b.predict(X), (X.mean(axis=1) + 1) / 2)


def test_ridge_baselines_recover_a_linear_target():
    rng = np.random.default_rng(1)
    X = np.where(rng.random((400, 20)) < 0.5, 1.0, -1.0)
    y = 0.5 + 0.05 * X[:, 3] + 0.05 * X[:, 11]
    assert mae_points(AllItemsRidge().fit(X, y).predict(X), y) < 0.2
    g = GreedyRidge(n_anchors=2).fit(X, y)
    assert sorted(g.anchors_.tolist()) == [3, 11]
    assert len(RandomRidge(n_anchors=5).fit(X, y).anchors_) == 5


def test_ridge_baselines_learn_from_validation_rows_too():
    """They have no use for a validation split, so it is training data like any other."""
    rng = np.random.default_rng(2)
    X = np.where(rng.random((60, 8)) < 0.5, 1.0, -1.0)
    y = 0.5 + 0.05 * X[:, 1] + 0.01 * rng.standard_normal(60)
    split = AllItemsRidge().fit(X[:40], y[:40], X_valid=X[40:], y_valid=y[40:])
    pooled = AllItemsRidge().fit(X, y)
    np.testing.assert_allclose(split.predictor_.coef_, pooled.predictor_.coef_)


def test_metrics_on_known_values():
    true = np.array([0.1, 0.2, 0.3, 0.4])
    pred = np.array([0.1, 0.25, 0.2, 0.4])
    m = evaluate(pred, true)
    assert m["mae"] == pytest.approx(3.75)
    assert m["max_error"] == pytest.approx(10.0)
    assert kendall_tau(true, true) == 1.0
    assert m["kendall_tau"] == pytest.approx(4 / 6)


def test_sparseeval_without_validation_models_is_a_clear_error(small):
    X, y, s = _parts(small)
    with pytest.raises(ValueError, match="validation models"):
        SparseEval(5, **QUIET).fit(X[s.train], y[s.train], X_valid=X[:0], y_valid=y[:0])


def test_estimator_defaults_are_the_pipeline_settings():
    defaults = inspect.signature(SparseEval).parameters
    settings = Settings.of().values()
    shared = [n for n in SparseEval._get_param_names() if n in settings]
    assert len(shared) >= 15, shared  # every selection and predictor knob
    for name in shared:
        assert defaults[name].default == settings[name], name


def test_sparseeval_end_to_end_beats_random_mean(small):
    X, y, s = _parts(small)
    est = SparseEval(10, refine_steps=2, epochs=100, ensemble=1, **QUIET).fit(
        X[s.train], y[s.train], X_valid=X[s.valid], y_valid=y[s.valid], item_ids=small.item_ids
    )
    assert est.predictor_name_ in {"nnridge", "mlp", "blend"}
    assert list(est.anchor_ids_) == [str(small.item_ids[a]) for a in est.anchors_]
    ours = mae_points(est.predict(X[s.test]), y[s.test])
    rand = mae_points(RandomMean(10).fit(X[s.train], y[s.train]).predict(X[s.test]), y[s.test])
    assert ours < rand


def test_calibrate_uses_only_the_given_rows(small):
    X, y, s = _parts(small)
    est = SparseEval(8, refine_steps=1, ensemble=1, predictor="ridge", **QUIET).fit(
        X[s.train[:150]], y[s.train[:150]], X_valid=X[s.valid], y_valid=y[s.valid]
    )
    assert est.calibration_residuals_ is est.valid_residuals_

    class ShareCorrect:  # a predictor whose answers are known by hand: mean of (x + 1) / 2
        def predict(self, XA):
            return (np.asarray(XA).mean(axis=1) + 1) / 2

    est.predictor_ = ShareCorrect()
    X_held = np.array([[1] * 60, [0] * 60, [1] * 60])  # every anchor right, wrong, right
    est.calibrate(X_held, np.array([0.75, 0.25, 0.5]))
    assert est.calibration_residuals_.tolist() == [0.25, -0.25, 0.5]  # prediction - truth
    assert est.calibration_predictions_.tolist() == [1.0, 0.0, 1.0]  # what the width follows
    assert est.calibration_source_ == "calibration"


def test_parallel_mlp_ensemble_gives_the_same_fit():
    """Members trained in threads draw only from their own seeded generators."""
    m = make_synthetic(300, 60, seed=5)
    sp = split_models(m.model_ids, n_test=60, n_valid=60, seed=5)
    preds = []
    for n_jobs in (1, 2, 2):
        est = SparseEval(n_anchors=8, refine_steps=1, epochs=60, predictor="mlp", ensemble=3,
                         n_jobs=n_jobs, progress=lambda s: None)  # fmt: skip
        est.fit(
            m.values[sp.train], m.y[sp.train], X_valid=m.values[sp.valid], y_valid=m.y[sp.valid]
        )
        preds.append(est.predict(m.values[sp.test]))
    assert np.array_equal(preds[0], preds[1]) and np.array_equal(preds[1], preds[2])


def test_candidates_side_by_side_give_the_same_fit():
    """nnridge and the MLP ensemble trained at once in threads (n_jobs=None) or one thing at a
    time (n_jobs=1): the same validation scores, choice and predictions, bit for bit."""
    m = make_synthetic(300, 60, seed=6)
    sp = split_models(m.model_ids, n_test=60, n_valid=60, seed=6)
    fits = []
    for n_jobs in (1, None):
        est = SparseEval(n_anchors=8, refine_steps=2, epochs=60, ensemble=3, n_jobs=n_jobs,
                         progress=lambda s: None)  # fmt: skip
        est.fit(
            m.values[sp.train], m.y[sp.train], X_valid=m.values[sp.valid], y_valid=m.y[sp.valid]
        )
        fits.append((est.valid_scores_, est.predictor_name_, est.predict(m.values[sp.test])))
    (scores1, name1, pred1), (scores2, name2, pred2) = fits
    assert list(scores1.items()) == list(scores2.items()) and name1 == name2
    assert np.array_equal(pred1, pred2)


def test_dropout_keeps_the_boolean_mask_products():
    """The float 0/1 mask gives exactly x * keep / (1 - p) of a boolean mask, and gradients."""
    import torch

    from sparseeval.method.predictors import Dropout

    x = torch.randn(50, 16, requires_grad=True)
    out = Dropout(0.25, np.random.default_rng(3)).train()(x)
    bits = np.frombuffer(np.random.default_rng(3).bytes(2 * x.numel()), dtype=np.uint16)
    keep = torch.from_numpy(bits.reshape(x.shape) >= round(0.25 * 65536))
    x2 = x.detach().clone().requires_grad_(True)
    expected = x2 * keep / 0.75
    assert torch.equal(out, expected)
    out.sum().backward()
    expected.sum().backward()
    assert torch.equal(x.grad, x2.grad)


def test_cross_calibration_setting_sets_no_models_aside_and_cross_fits():
    from sparseeval.pipeline.recipe import select_step, split_step

    m = make_synthetic(300, 40, seed=6)
    s = Settings.of(n_anchors=6, n_test=60, n_valid=60, refine_steps=1, epochs=30, ensemble=1,
                 calibration="cross")  # fmt: skip
    split = split_step(m, s, "demo")
    assert len(split.calib) == 0
    est = select_step(m, split, s, lambda msg: None)
    assert est.calibration_source_ == "cross-fit"
    assert len(est.calibration_residuals_) == len(split.train) + len(split.valid)
    truth = np.concatenate([m.y[split.train], m.y[split.valid]])
    assert np.allclose(est.calibration_predictions_ - truth, est.calibration_residuals_)
    with pytest.raises(ValueError, match="calibration must be 'split' or 'cross'"):
        Settings.of(calibration="both").check()


def test_calibration_estimates_are_saved_and_read_back(tmp_path):
    from sparseeval.method.model_files import load_estimator, load_fitted, save_fitted
    from tests.helpers import tiny_fit

    m, sp, est = tiny_fit(seed=3)
    assert np.allclose(est.calibration_predictions_ - m.y[sp.valid], est.calibration_residuals_)
    est.calibrate(m.values[sp.test], m.y[sp.test])
    save_fitted(est, tmp_path / "fit")
    assert np.allclose(load_fitted(tmp_path / "fit").calibration_predictions_,
                       est.calibration_predictions_)  # fmt: skip
    again = load_estimator(tmp_path / "fit", est)
    assert np.allclose(again.calibration_predictions_, est.predict(m.values[sp.test]))
    meta = json.loads((tmp_path / "fit/anchors.json").read_text())
    del meta["calibration_predictions"]  # a fit saved before they were
    (tmp_path / "fit/anchors.json").write_text(json.dumps(meta))
    assert load_fitted(tmp_path / "fit").calibration_predictions_ is None


def test_one_set_of_selection_defaults():
    """`AnchorSelector`, `SparseEval` and `Settings` default every selection knob alike."""
    import inspect

    from sparseeval.method.selection import AnchorSelector

    selector = inspect.signature(AnchorSelector).parameters
    estimator = inspect.signature(SparseEval).parameters
    settings = Settings.of()
    for name in ("n_anchors", "init", "refine_steps", "acceptance", "swap_candidates",
                 "proxy", "judge"):  # fmt: skip
        assert selector[name].default == estimator[name].default == settings.values()[name]
