"""Training on a device (issue 47): the `device` setting reaches every MLP, a torch-generator
dropout (the GPU's) is reproducible, and the CPU path stays as it was. Nothing here needs a
GPU: the GPU's code paths run on the CPU with a CPU torch generator."""

import numpy as np
import pytest
import torch

from sparseeval import Settings, make_synthetic
from sparseeval.consume.errors import SettingsError
from sparseeval.method import predictors
from sparseeval.method.estimator import SparseEval
from sparseeval.method.paper import PaperSparseEval, ZeroOneMLP, _paper_train, _Steps
from sparseeval.method.predictors import MLPPredictor
from sparseeval.method.training import Dropout, mask_generator

QUIET = {"progress": lambda s: None}


@pytest.fixture(scope="module")
def data():
    m = make_synthetic(120, 12, seed=3)
    return m.values.astype(np.float32), m.y


def test_device_setting_reaches_every_mlp_of_the_fit(data):
    X, y = data
    assert (
        Settings.of().predictor.device == "cpu"
        and Settings.of(device="cuda:1").predictor.device == "cuda:1"
    )
    est = SparseEval.from_config(Settings.of(device="cpu").values(), ensemble=2, epochs=5, **QUIET)
    assert est.device == "cpu" and est.get_params()["device"] == "cpu"
    members = est.fit_mlp_members(X, y)
    assert [m.device for m in members] == ["cpu", "cpu"]
    for m in members:
        assert all(p.device.type == "cpu" for p in m.net_.parameters())
        drops = [d for d in m.net_.modules() if isinstance(d, Dropout)]
        assert drops and all(isinstance(d.rng, np.random.Generator) for d in drops)
    assert PaperSparseEval(5, device="cpu").get_params()["device"] == "cpu"


@pytest.mark.parametrize("device", ["gpu", "cuda:x", ""])
def test_a_mistyped_device_is_one_clear_line(device):
    with pytest.raises(SettingsError, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        Settings.of(device=device)


def test_mask_generator_is_numpy_on_the_cpu_and_torch_elsewhere():
    assert isinstance(mask_generator(4, "cpu"), np.random.Generator)
    assert isinstance(mask_generator(4, torch.device("cpu")), np.random.Generator)
    with pytest.raises(SettingsError, match="'cuda:99': torch sees no such GPU"):
        mask_generator(4, "cuda:99")  # not the CPU: a torch generator there, if torch had one


def test_torch_generator_dropout_is_reproducible_and_scaled():
    x = torch.ones(400, 50, requires_grad=True)
    a = Dropout(0.2, torch.Generator().manual_seed(7))(x)
    b = Dropout(0.2, torch.Generator().manual_seed(7))(x)
    c = Dropout(0.2, torch.Generator().manual_seed(8))(x)
    assert torch.equal(a, b) and not torch.equal(a, c)
    kept = a != 0
    assert 0.78 < kept.float().mean().item() < 0.82
    assert torch.allclose(a[kept], torch.tensor(1 / 0.8))
    a.sum().backward()  # the gradient flows through the kept units only, scaled alike
    assert torch.equal(x.grad, a.detach())
    drop = Dropout(0.2, torch.Generator().manual_seed(7)).eval()
    assert drop(x) is x


def _torch_masks(monkeypatch):
    """Every net draws its masks from a CPU torch generator: the GPU's path, on the CPU."""
    monkeypatch.setattr(
        predictors, "mask_generator", lambda seed, device: torch.Generator().manual_seed(seed)
    )


def test_an_mlp_on_a_torch_generator_is_reproducible_and_published_as_arrays(data, monkeypatch):
    X, y = data
    numpy_masks = MLPPredictor(epochs=30, seed=2).fit(X, y).predict(X)
    _torch_masks(monkeypatch)
    first, second = (MLPPredictor(epochs=30, seed=2).fit(X, y) for _ in range(2))
    drops = [d for d in first.net_.modules() if isinstance(d, Dropout)]
    assert drops and all(isinstance(d.rng, torch.Generator) for d in drops)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))
    assert not np.array_equal(first.predict(X), numpy_masks)  # the masks did change
    _, arrays = first.state()
    assert all(isinstance(v, np.ndarray) for v in arrays.values())


def test_paper_steps_on_the_cpu_are_torch_adam_with_or_without_graphs(data):
    """On the CPU `cuda_graphs` changes nothing: torch's Adam, eager, as before."""
    X, y = data
    x, t = torch.from_numpy((X + 1) / 2), torch.from_numpy(y.astype(np.float32))
    weights = []
    for graphs in (False, True):
        torch.manual_seed(0)
        net = ZeroOneMLP(seed=0).build(X.shape[1])
        _paper_train(net, x, t, 25, 5e-4, graphs)
        weights.append([p.detach().clone() for p in net.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*weights, strict=True))
    steps = _Steps(ZeroOneMLP().build(X.shape[1]), x, t, 5e-4, graphs=True)
    assert not steps.graphs and steps.graph is None
    assert not steps.opt.defaults["fused"] and not steps.opt.defaults["capturable"]


def test_paper_fit_with_torch_masks_is_reproducible(data, monkeypatch):
    X, y = data
    _torch_masks(monkeypatch)
    kw = dict(refine_steps=1, proxy_steps=5, steps=30, check_every=10, device="cpu", **QUIET)
    fits = [PaperSparseEval(4, seed=1, **kw).fit(X[:80], y[:80], X_valid=X[80:], y_valid=y[80:])
            for _ in range(2)]  # fmt: skip
    np.testing.assert_array_equal(fits[0].anchors_, fits[1].anchors_)
    np.testing.assert_array_equal(fits[0].predict(X), fits[1].predict(X))


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_a_gpu_torch_cannot_see_is_one_clear_line(data):
    X, y = data
    no_gpu = "device 'cuda': torch sees no such GPU here"
    with pytest.raises(SettingsError, match=no_gpu):
        MLPPredictor(epochs=2, device="cuda").fit(X, y)
    with pytest.raises(SettingsError, match=no_gpu):
        SparseEval(4, refine_steps=0, epochs=2, ensemble=1, predictor="mlp", device="cuda",
                   **QUIET).fit(X, y)  # fmt: skip
    with pytest.raises(SettingsError, match=no_gpu):
        PaperSparseEval(4, refine_steps=0, steps=2, device="cuda", **QUIET).fit(X, y)
    with pytest.raises(SettingsError, match="device must be 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        MLPPredictor(epochs=2, device="gpu").fit(X, y)
