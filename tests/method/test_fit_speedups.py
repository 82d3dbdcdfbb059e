"""The fit's speed-ups compute what the code they replaced computed (issue 30, item 5).

Each test pins one replacement against the original computation: our Adam against
`torch.optim.Adam`, the dropout bits against `rng.bytes`, the reduced nnridge solve against
nnls of the stacked problem, the side-by-side swap trials against one at a time, the raw
uint32 draws against `rng.integers`; the mini-batches (issue 47) cover every row once an epoch;
`refit = "auto"` skips only the refits that would add under a tenth more rows.
"""

import numpy as np
import pytest
import torch
from scipy.optimize import nnls
from torch import nn

from sparseeval import make_synthetic, split_models
from sparseeval.method import selection
from sparseeval.method.estimator import SparseEval
from sparseeval.method.predictors import (
    ALPHAS,
    Adam,
    Dropout,
    MLPPredictor,
    _batches,
    _centre,
    _nn_ridge,
)
from sparseeval.method.selection import AnchorSelector
from sparseeval.method.training import MonotoneMix, uint32_draws


def _trained(opt_class, weight_decay: float) -> list[torch.Tensor]:
    torch.manual_seed(3)
    net = nn.Sequential(nn.Linear(7, 16), nn.GELU(), nn.Linear(16, 1), nn.Sigmoid())
    x, y = torch.randn(50, 7), torch.rand(50)
    opt = opt_class(net.parameters(), lr=3e-3, weight_decay=weight_decay)
    for _ in range(25):
        opt.zero_grad()
        ((net(x)[:, 0] - y) ** 2).mean().backward()
        opt.step()
    return [p.detach().clone() for p in net.parameters()]


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_adam_is_torch_adam_bit_for_bit(weight_decay):
    ours, torchs = _trained(Adam, weight_decay), _trained(torch.optim.Adam, weight_decay)
    assert all(torch.equal(a, b) for a, b in zip(ours, torchs, strict=True))


@pytest.mark.parametrize("shape", [(41, 128), (3, 5), (1, 1)])
def test_dropout_bits_are_rng_bytes(shape):
    """The mask draws the same 16-bit words `rng.bytes(2 * n)` gave, and leaves the
    generator where it left it."""
    drop, rng = Dropout(0.1, np.random.default_rng(9)), np.random.default_rng(9)
    x = torch.ones(shape)
    out = drop(x)
    bits = np.frombuffer(rng.bytes(2 * x.numel()), dtype=np.uint16).reshape(shape)
    expected = torch.from_numpy((bits >= round(0.1 * 65536)).astype(np.float32)) / 0.9
    assert torch.equal(out, expected)
    assert drop.rng.integers(2**62) == rng.integers(2**62)


def test_monotone_mix_trains_with_torch_clamps_gradients_bit_for_bit():
    """The saved-mask clamp gives what `torch.clamp` gives, forward and backward, with
    units clipped at both ends and one exactly on a bound."""
    mix = MonotoneMix()
    mix(torch.zeros(1, 64))
    low, high = mix._bounds[(64, "cpu")]
    x = torch.randn(300, 64) * 3
    x[0, 0], x[1, 1] = low[0], high[1]  # exactly on a bound: torch passes the gradient
    grad = torch.randn(300, 64)
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    out = mix(ours)
    expected = torch.clamp(theirs, low, high)
    out.backward(grad)
    expected.backward(grad)
    assert torch.equal(out, expected) and torch.equal(ours.grad, theirs.grad)
    assert 0 < int((ours.grad == 0).sum()) < x.numel()  # some units clipped, some not


def test_raw_draws_are_the_generators_uint32s_in_any_order_of_sizes():
    """Even and odd counts in turn (an odd one leaves a half word pending, which the next
    draw must use first): the same words as `rng.integers`, the generator left alike."""
    ours, theirs = np.random.default_rng(4), np.random.default_rng(4)
    for n in (264_960, 7, 10, 3, 1, 66_240, 2, 5, 128):
        expected = theirs.integers(0, 2**32, size=n, dtype=np.uint32)
        assert np.array_equal(uint32_draws(ours, n), expected), n
    assert ours.integers(2**62) == theirs.integers(2**62)


def test_reduced_nnridge_solves_the_stacked_problem():
    """nnls of the k x k reduced problem: the stacked (n + k) x k problem's solution,
    the same zero weights, to rounding; bounds hit in most cases here."""
    rng = np.random.default_rng(1)
    binding = 0
    for _ in range(60):
        n, k = int(rng.integers(20, 300)), int(rng.integers(3, 40))
        X, y = rng.choice([-1.0, 1.0], size=(n, k)), rng.random(n)
        alpha = float(rng.choice(ALPHAS))
        Xc, yc = X - X.mean(axis=0), y - y.mean()
        A = np.vstack([Xc, np.sqrt(alpha) * np.eye(k)])
        stacked, _ = nnls(A, np.concatenate([yc, np.zeros(k)]), maxiter=50 * k)
        mean, intercept, coef = _nn_ridge(_centre(X, y), alpha)
        np.testing.assert_allclose(coef, stacked, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(coef == 0, stacked == 0)
        np.testing.assert_array_equal(mean, X.mean(axis=0))
        assert intercept == y.mean()
        binding += bool((stacked == 0).any())
    assert binding > 30


def test_side_by_side_swap_trials_change_nothing(monkeypatch):
    m = make_synthetic(400, 80, seed=2)
    s = split_models(m.model_ids, 60, 60, seed=0)
    X, y = m.values.astype(np.float32), m.y

    def select():
        return AnchorSelector(12, refine_steps=6, proxy="ridge", judge="loo", seed=0,
                              progress=lambda s: None).fit(X[s.train], y[s.train], X[s.valid],
                                                           y[s.valid])  # fmt: skip

    monkeypatch.setattr(selection, "usable_cpus", lambda: 3)
    side_by_side = select()
    monkeypatch.setattr(selection, "usable_cpus", lambda: 1)
    one_at_a_time = select()
    np.testing.assert_array_equal(side_by_side.anchors_, one_at_a_time.anchors_)
    assert side_by_side.history_ == one_at_a_time.history_


def _epoch_rows(n: int, batch_size: int | None, seed: int = 4):
    """Each epoch's batches of `_batches` over rows numbered 0..n-1, as their numbers."""
    rows = torch.arange(n)
    for batches in _batches(rows[:, None].float(), rows, batch_size, seed):
        assert all(torch.equal(xb[:, 0].long(), yb) for xb, yb in batches)  # rows stay paired
        yield [yb for _, yb in batches]


@pytest.mark.parametrize("n", [1000, 1100, 1600, 5000])
def test_mini_batches_cover_every_row_once_an_epoch(n):
    epochs = _epoch_rows(n, 512)
    first, second = next(epochs), next(epochs)
    for batches in (first, second):
        assert torch.equal(torch.cat(batches).sort().values, torch.arange(n))
        assert all(256 <= len(b) < 768 for b in batches)  # a short last batch joins the one before
    assert not torch.equal(torch.cat(first), torch.cat(second))  # shuffled again each epoch
    assert torch.equal(torch.cat(next(_epoch_rows(n, 512))), torch.cat(first))  # seeded


@pytest.mark.parametrize("batch_size", [None, 0, 600, 1000])
def test_one_batch_is_every_row_in_order(batch_size):
    assert [b.tolist() for b in next(_epoch_rows(600, batch_size))] == [list(range(600))]


def test_mini_batch_fits_are_reproducible_and_every_full_batch_spelling_is_one_fit():
    m = make_synthetic(400, 12, seed=1)
    X, y = m.values.astype(np.float32), m.y

    def weights(batch_size):
        fit = MLPPredictor(hidden=(8,), epochs=6, patience=6, batch_size=batch_size).fit(X, y)
        return [p.detach().clone() for p in fit.net_.parameters()]

    same = lambda a, b: all(torch.equal(p, q) for p, q in zip(a, b, strict=True))  # noqa: E731
    assert same(weights(64), weights(64))
    full = weights(None)
    assert same(full, weights(0)) and same(full, weights(400))
    assert not same(full, weights(64))  # six epochs of 64-row steps train another net


@pytest.mark.parametrize(("n_valid", "refits"), [(20, False), (40, True)])
def test_refit_auto_skips_a_refit_that_adds_under_a_tenth_more_rows(n_valid, refits):
    m = make_synthetic(420, 40, seed=2)
    X, y = m.values.astype(np.float32), m.y
    Xt, yt, Xv, yv = X[:380], y[:380], X[380 : 380 + n_valid], y[380 : 380 + n_valid]

    def fit(refit) -> tuple[np.ndarray, list[str]]:
        said: list[str] = []
        est = SparseEval(6, refine_steps=1, predictor="nnridge", refit=refit, progress=said.append)
        est.fit(Xt, yt, X_valid=Xv, y_valid=yv)
        return est.predict(X[:50]), [line for line in said if line.startswith(("refit", "kept"))]

    (auto, said), (same, _), (other, _) = fit("auto"), fit(refits), fit(not refits)
    assert np.array_equal(auto, same) and not np.array_equal(auto, other)
    assert said == (
        [f"refitting nnridge on {380 + n_valid} training and validation models"] if refits else
        [f"kept nnridge as trained: {n_valid} validation models would add {n_valid / 380:.1%} "
         "to 380 training models (refit = auto refits from 10%)"]
    )  # fmt: skip


def test_refit_other_than_true_false_or_auto_is_refused_in_one_line():
    from sparseeval.consume.errors import SettingsError

    m = make_synthetic(120, 20, seed=2)
    with pytest.raises(SettingsError, match="refit must be True, False or \"auto\", got 'yes'"):
        SparseEval(4, refit="yes").fit(m.values, m.y)
