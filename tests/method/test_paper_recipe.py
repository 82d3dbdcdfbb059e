"""The paper's released recipe (`PaperSparseEval`): its mechanics on a tiny matrix, few steps."""

import numpy as np
import pytest
import torch
from torch import nn

from sparseeval import make_synthetic, split_models
from sparseeval.consume.scoring.inference import load_predictor, save_predictor
from sparseeval.method.paper import PaperSparseEval, ZeroOneMLP, _paper_final, paper_kmeans_anchors


def quiet(message: str) -> None:
    pass


TINY = dict(refine_steps=3, proxy_steps=5, steps=40, check_every=10, patience=30, progress=quiet)


@pytest.fixture(scope="module")
def data():
    m = make_synthetic(200, 40, seed=2)
    s = split_models(m.model_ids, n_test=50, n_valid=50, seed=0)
    X = m.values.astype(np.float32)
    return X[s.train], m.y[s.train], X[s.valid], m.y[s.valid], X[s.test], m.y[s.test]


def test_paper_fit_end_to_end_on_a_tiny_matrix(data):
    X, y, Xv, yv, Xt, yt = data
    est = PaperSparseEval(6, seed=1, **TINY).fit(
        X, y, X_valid=Xv, y_valid=yv, item_ids=[f"q{j}" for j in range(40)]
    )
    assert isinstance(est, PaperSparseEval) and est.init_ == "kmeans"
    assert len(est.anchors_) == 6 == len(set(est.anchors_.tolist()))
    assert np.all(np.diff(est.anchors_) > 0)
    assert est.anchor_ids_.tolist() == [f"q{j}" for j in est.anchors_]
    assert est.predictor_name_ == "mlp" and isinstance(est.predictor_, ZeroOneMLP)
    assert len(est.history_) == 3 and all(s.accepted for s in est.history_)
    pred = est.predict(Xt)
    assert pred.shape == (50,) and np.all((pred >= 0) & (pred <= 1))
    assert est.calibration_source_ == "validation"
    assert est.calibrate(Xt, yt).calibration_source_ == "calibration"
    # the kept state's validation MSE is what the (sorted, weight-permuted) predictor gives
    assert np.mean(est.valid_residuals_**2) == pytest.approx(est.valid_mse_, rel=1e-5)
    assert est.steps_ == 40 and est.best_step_ % 10 == 0


def test_paper_init_choice_follows_the_released_code(data):
    X, y, Xv, yv, _, _ = data
    kw, valid = TINY | {"refine_steps": 0, "steps": 1}, {"X_valid": Xv, "y_valid": yv}
    assert PaperSparseEval(5, benchmark="mmlu", **kw).fit(X, y, **valid).init_ == "random"
    assert PaperSparseEval(5, benchmark="Winogrande", **kw).fit(X, y, **valid).init_ == "random"
    assert PaperSparseEval(5, benchmark="gsm8k", **kw).fit(X, y, **valid).init_ == "kmeans"
    assert PaperSparseEval(5, init="random", **kw).fit(X, y, **valid).init_ == "random"
    with pytest.raises(ValueError, match="init must be one of"):
        PaperSparseEval(5, init="greedy", **kw).fit(X, y, **valid)


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")
def test_kmeans_init_takes_nearest_items_and_tops_up_at_random():
    rng = np.random.default_rng(0)
    base = np.where(rng.random((30, 3)) < 0.5, 1.0, -1.0)
    X = np.hstack([base, base, base[:, :1]])  # 7 columns, only 3 distinct item vectors
    anchors = paper_kmeans_anchors(X, 5, seed=0, rng=np.random.default_rng(1))
    assert len(anchors) == 5 == len(set(anchors.tolist()))
    nearest = sorted(anchors[:3].tolist())  # distinct nearest items first, sorted
    assert anchors[:3].tolist() == nearest and len({tuple(X[:, j]) for j in nearest}) == 3


def test_swaps_are_applied_blindly_and_validation_never_selects(data):
    X, y, Xv, yv, _, _ = data
    valid = {"X_valid": Xv, "y_valid": yv}
    start = PaperSparseEval(6, seed=3, **(TINY | {"refine_steps": 0})).fit(X, y, **valid)
    est = PaperSparseEval(6, seed=3, **TINY).fit(X, y, X_valid=Xv, y_valid=yv)
    anchors = set(start.anchors_.tolist())
    for swap in est.history_:
        assert swap.removed in anchors and swap.added not in anchors
        anchors = (anchors - {swap.removed}) | {swap.added}
    assert anchors == set(est.anchors_.tolist())
    # validation rows only stop the final MLP: scrambled validation targets, same anchors
    scrambled = PaperSparseEval(6, seed=3, **TINY).fit(X, y, X_valid=Xv, y_valid=yv[::-1].copy())
    np.testing.assert_array_equal(scrambled.anchors_, est.anchors_)


def test_zero_one_mlp_reads_zero_one_and_publishes_as_plus_minus_one(data, tmp_path):
    X, y, Xv, yv, Xt, _ = data
    est = PaperSparseEval(6, **TINY).fit(X, y, X_valid=Xv, y_valid=yv)
    XA = Xt[:, est.anchors_]
    with torch.no_grad():
        direct = est.predictor_.net_(torch.from_numpy((XA + 1) / 2)).squeeze(1).numpy()
    np.testing.assert_allclose(est.predict(Xt), direct, atol=1e-6)
    save_predictor(est.predictor_, tmp_path / "p")
    np.testing.assert_allclose(load_predictor(tmp_path / "p").predict(XA), direct, atol=1e-6)


class Scripted(nn.Module):
    """Training steps move one weight; validation calls return predictions from a script."""

    def __init__(self, script):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))
        self.script, self.calls = script, 0

    def forward(self, x):
        if self.training:
            return (x[:, :1] * 0 + self.w).reshape(-1, 1)
        out = torch.tensor(self.script[self.calls], dtype=torch.float32)
        self.calls += 1
        return out.reshape(-1, 1) + 0 * self.w


def test_final_training_keeps_best_loss_with_tau_and_stops_on_patience():
    tv = torch.tensor([0.1, 0.2, 0.3, 0.4])
    script = [
        [0.2, 0.3, 0.4, 0.5],  # check at step 0: kept (first)
        [0.3, 0.4, 0.5, 0.6],  # step 5: worse loss -> waited 1
        [0.15, 0.25, 0.35, 0.45],  # step 10: lower loss, tau 1 -> kept
        [0.1, 0.2, 0.351, 0.35],  # step 15: lower loss but lower tau -> waited 1
        [0.9, 0.9, 0.9, 0.8],  # step 20: worse -> waited 2 = patience: stop
        [0.1, 0.2, 0.3, 0.4],  # never reached
    ]
    net = Scripted(script)
    x, t = torch.zeros((3, 2)), torch.zeros(3)
    steps, kept, mse = _paper_final(net, x, t, torch.zeros((4, 2)), tv, 1000, 1e-3, 5, 2)
    assert (steps, kept) == (21, 10) and net.calls == 5
    assert mse == pytest.approx(0.0025, rel=1e-5)
