"""The paper's released recipe (`PaperSparseEval`): its k-means start, its 0/1 MLP, its loop.

Kept apart from `SparseEval` (`sparseeval.method.estimator`), which it subclasses so that
calibration, publishing and the sklearn API work alike; every step follows the released
code (`SparseEval/methods/gd_cluster_mlp.py`), see `PaperSparseEval`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import pairwise_distances_argmin_min
from torch import nn

from sparseeval.consume.errors import SettingsError
from sparseeval.method.anchor_estimator import (
    check_item_ids,
    validation_split,
)
from sparseeval.method.estimator import SparseEval
from sparseeval.method.predictors import MLPPredictor
from sparseeval.method.selection import Swap, swap_words
from sparseeval.method.training import Dropout, torch_device

log = logging.getLogger("sparseeval")

PAPER_RANDOM_INIT = ("mmlu", "winogrande")  # the released code's random-init benchmarks
PAPER_INIT_CHOICES = ("auto", "kmeans", "random")


def paper_kmeans_anchors(X_train: np.ndarray, k: int, seed: int, rng) -> np.ndarray:
    """The paper's released k-means initialization, on training models only.

    Item columns (+-1 over the training models) normalised to unit length, k-means with
    `n_init='auto'` and `random_state=seed`, the item nearest each centre; when two centres
    share an item, random unused items top the set up to k. Returns the anchors in the
    released code's order (the distinct nearest items sorted, then the top-ups).
    """
    items = np.asarray(X_train, dtype=np.float64).T
    norms = np.linalg.norm(items, axis=1, keepdims=True)
    norms[norms == 0] = 1e-10
    vectors = items / norms
    km = KMeans(n_clusters=k, random_state=seed, n_init="auto").fit(vectors)
    nearest, _ = pairwise_distances_argmin_min(km.cluster_centers_, vectors)
    anchors = [int(j) for j in np.unique(nearest)]
    while len(anchors) < k:
        j = int(rng.integers(len(vectors)))
        if j not in anchors:
            anchors.append(j)
    return np.array(anchors)


class ZeroOneMLP(MLPPredictor):
    """An MLP that reads 0/1 answers, uncentred, as the paper's released code feeds it.

    Takes +-1 answers like every predictor here and gives the net `(x + 1) / 2`. Built and
    trained by `PaperSparseEval` (which sets `net_`). `state()` folds
    the 0/1 map into the first layer (its weights halved, `mean` = -1: `(x - mean) @ (W/2).T
    = ((x + 1) / 2) @ W.T`), so the published MLP format reads it unchanged.
    """

    def __init__(
        self,
        hidden: tuple[int, ...] = (128, 64, 32),
        dropout: float = 0.1,
        seed: int = 0,
        device: str = "cpu",
    ) -> None:
        super().__init__(hidden=hidden, dropout=dropout, seed=seed, monotone=False, device=device)

    def build(self, k: int) -> nn.Sequential:
        """A fresh, untrained net for k anchors (k-128-64-32-1, GELU, dropout, sigmoid), on
        `device` (its dropout masks drawn there)."""
        self.mean_ = np.full(k, -1.0, dtype=np.float32)
        self.net_ = self._build(k).to(self.device)
        return self.net_

    def fit(self, X, y, X_valid=None, y_valid=None) -> ZeroOneMLP:
        raise NotImplementedError("ZeroOneMLP is trained by PaperSparseEval")

    def _tensors(self, X: np.ndarray, y: np.ndarray | None = None, device="cpu"):
        xt = _zero_one(X, device)
        return (xt,) if y is None else (xt, _tensor(y, device))

    def state(self):
        config, arrays = super().state()
        arrays["net.0.weight"] = arrays["net.0.weight"] / 2.0
        return config, arrays


class PaperSparseEval(SparseEval):
    """The paper's released recipe (`SparseEval/methods/gd_cluster_mlp.py`), run plainly.

    1. **Inputs** are 0/1 answers, `(x + 1) / 2` of the +-1 matrix, not centred.
    2. **Initial anchors**: k-means (`n_init='auto'`, `random_state=seed`) over the item
       columns of the training models normalised to unit length, the item nearest each
       centre, random unused items topping the set up when two centres share one
       (`selection.paper_kmeans_anchors`). `init="random"` draws k items at random instead;
       `init="auto"` is random for `benchmark` "mmlu" or "winogrande" (as the released code
       does) and k-means otherwise.
    3. **Refinement**, `refine_steps` rounds, no validation check: a proxy MLP
       (k-128-64-32-1, GELU, dropout, sigmoid output) is trained from scratch on the
       training models by `proxy_steps` full-batch Adam steps (lr, MSE); the anchor with
       the smallest mean |d MSE / d input| (net in eval mode) is removed, and the non-anchor
       item with the largest |(Y - 0.5)^T (prediction - target)| (Y the 0/1 training
       matrix, predictions in eval mode) is always put in its place.
    4. **Final MLP**, the same net, up to `steps` full-batch Adam steps at lr on the
       training models; at every `check_every`-th step (from the first) the validation MSE
       and Kendall tau are computed, and the state is kept when the MSE is <= the best so
       far and tau >= the best so far (the released code's rule); training stops after
       `patience` checks without a kept state.

    Remaining differences from the released code:

    - k-means sees the training models only (the released code clustered the item vectors
      of all models, test models included);
    - the target is the given full-benchmark accuracy `y_train` (the released code took
      the row mean of its matrix, the same thing when the matrix holds every item);
    - the kept state becomes the predictor (the released code only recorded the test
      error at that state); if no check qualifies (validation tau undefined), the last
      state is kept, where the released code reported no result;
    - random draws come from generators seeded by `seed` (the released code seeds Python's
      `random`, NumPy and torch globally with 42), so draws differ; the anchors are stored
      sorted, with the first layer's weights permuted to match (same function);
    - the test/validation split (200/200 in the released code) is the caller's.

    Parameters
    ----------
    n_anchors : int, default=100
    init : {"auto", "kmeans", "random"}, default="auto"
    benchmark : str or None, default=None
        Only read by `init="auto"`.
    refine_steps : int, default=10
    proxy_steps : int, default=2000
        Full-batch steps of each refinement round's proxy MLP.
    steps : int, default=20000
        Maximum full-batch steps of the final MLP.
    check_every : int, default=500
    patience : int, default=30
        Validation checks without a kept state before the final training stops.
    lr : float, default=5e-4
    dropout : float, default=0.1
    seed : int, default=0
    device : str, default="cpu"
        Torch device of the training ("cuda" if you have one; the predictor ends on CPU).
    cuda_graphs : bool, default=True
        On a GPU, replay each training step from a CUDA graph (`_Steps`); False: run
        every step eagerly. Ignored on the CPU.
    progress : callable or None, default=None

    Attributes
    ----------
    anchors_, anchor_ids_, predictor_, predictor_name_ ("mlp"), valid_scores_,
    valid_residuals_, calibration_residuals_, calibration_source_ : as `SparseEval`.
    init_ : {"kmeans", "random"}
        The initialization used.
    history_ : list of Swap
        One entry per refinement round (every swap is applied; no MAE is measured).
    steps_ : int
        Final-MLP steps run; `best_step_` the step whose state was kept, `valid_mse_` its
        validation MSE.
    """

    def __init__(
        self,
        n_anchors: int = 100,
        init: str = "auto",
        benchmark: str | None = None,
        refine_steps: int = 10,
        proxy_steps: int = 2000,
        steps: int = 20000,
        check_every: int = 500,
        patience: int = 30,
        lr: float = 5e-4,
        dropout: float = 0.1,
        seed: int = 0,
        device: str = "cpu",
        cuda_graphs: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.n_anchors = n_anchors
        self.init = init
        self.benchmark = benchmark
        self.refine_steps = refine_steps
        self.proxy_steps = proxy_steps
        self.steps = steps
        self.check_every = check_every
        self.patience = patience
        self.lr = lr
        self.dropout = dropout
        self.seed = seed
        self.device = device
        self.cuda_graphs = cuda_graphs
        self.progress = progress

    def _init_name(self) -> str:
        if self.init not in PAPER_INIT_CHOICES:
            raise SettingsError(f"init must be one of {PAPER_INIT_CHOICES}, got {self.init!r}")
        if self.init != "auto":
            return self.init
        bench = (self.benchmark or "").lower()
        return "random" if bench in PAPER_RANDOM_INIT else "kmeans"

    def fit(self, X, y, *, X_valid=None, y_valid=None, item_ids=None) -> PaperSparseEval:
        """Initialize, refine blindly, train the final MLP (see the class docstring).

        Inputs as for `SparseEval.fit`; validation rows only stop the final training.
        """
        init = self._init_name()
        X, y, X_valid, y_valid = validation_split(X, y, X_valid, y_valid, self.seed)
        X, y, Xv, yv = self._check_fit_input(X, y, X_valid, y_valid, need_valid=True)
        self.item_scale_ = "binary"  # the released recipe reads 0/1 answers only
        n_items, k = X.shape[1], self.n_anchors
        if not 0 < k < n_items:
            raise SettingsError(f"n_anchors must be in 1..{n_items - 1}, got {k}")
        ids = check_item_ids(item_ids, n_items)
        say = self.progress or log.info
        device = self._seeded_device()
        rng = np.random.default_rng(self.seed)
        anchors = self._initial_anchors(init, X, rng)
        say(f"paper recipe: {init} initialization of {k} anchors")
        Y, t = _zero_one(X, device), _tensor(y, device)
        self.history_ = [self._refine_round(step, anchors, Y, t, device, say, ids)
                         for step in range(self.refine_steps)]  # fmt: skip
        model, net = self._final_mlp(anchors, Y, t, _zero_one(Xv, device), _tensor(yv, device))
        self._keep(init, anchors, model, net, ids, Xv, yv)
        say(
            f"paper final MLP: {self.steps_} steps, state of step {self.best_step_} kept, "
            f"validation MAE {100 * self.valid_scores_['mlp']:.3f} points"
        )
        return self

    def _seeded_device(self) -> torch.device:
        """The torch device, one CPU thread (tiny nets), torch's generator seeded."""
        device = torch_device(self.device)  # a GPU torch cannot see: one SettingsError line
        if device.type == "cpu":
            torch.set_num_threads(1)  # as MLPPredictor: tiny nets, one thread is fastest
        torch.manual_seed(self.seed)
        return device

    def _initial_anchors(self, init: str, X: np.ndarray, rng) -> list[int]:
        k = self.n_anchors
        if init == "kmeans":
            return [int(a) for a in paper_kmeans_anchors(X, k, self.seed, rng)]
        return [int(a) for a in rng.choice(X.shape[1], size=k, replace=False)]

    def _refine_round(self, step: int, anchors: list[int], Y, t, device, say, ids) -> Swap:
        """One blind swap: a fresh proxy MLP; weakest anchor (AIS) out, top CIS item in.

        `anchors` is changed in place; every swap is applied (no MAE is measured).
        """
        net = ZeroOneMLP(dropout=self.dropout, seed=self.seed, device=device).build(len(anchors))
        _paper_train(net, Y[:, anchors], t, self.proxy_steps, self.lr, self.cuda_graphs)
        net.eval()
        xa = Y[:, anchors].clone().requires_grad_(True)
        torch.mean((net(xa).squeeze(1) - t) ** 2).backward()
        ais = xa.grad.abs().mean(dim=0)
        weakest = int(torch.argmin(ais))
        with torch.no_grad():
            error = net(Y[:, anchors]).squeeze(1) - t
            cis = torch.abs((Y - 0.5).T @ error)
            cis[anchors] = -1.0
            added = int(torch.argmax(cis))
        removed = anchors[weakest]
        nan = float("nan")
        anchors[weakest] = added
        words = swap_words(removed, added, ids)
        say(f"paper refine round {step + 1}/{self.refine_steps}: swap {words}")
        return Swap(step, removed, added, float(ais[weakest]), float(cis[added]), nan, nan, True)

    def _final_mlp(self, anchors: list[int], Y, t, Yv, tv) -> tuple[ZeroOneMLP, nn.Sequential]:
        """The final MLP trained with the released code's checks; sets `steps_`, `best_step_`."""
        model = ZeroOneMLP(dropout=self.dropout, seed=self.seed, device=Y.device)
        net = model.build(len(anchors))
        self.steps_, self.best_step_, self.valid_mse_ = _paper_final(
            net, Y[:, anchors], t, Yv[:, anchors], tv,
            self.steps, self.lr, self.check_every, self.patience, self.cuda_graphs,
        )  # fmt: skip
        return model, net

    def _keep(self, init, anchors, model, net, ids, Xv, yv) -> None:
        """Store the fit: anchors sorted (first layer permuted to match), scores, residuals."""
        net.cpu().eval()
        order = np.argsort(anchors)
        with torch.no_grad():  # sorted anchors, same function: permute the first layer's inputs
            net[0].weight.copy_(net[0].weight[:, torch.from_numpy(order)])
        self.init_ = init
        self.anchors_ = np.asarray(anchors, dtype=np.int64)[order]
        self.anchor_ids_ = np.array([str(i) for i in ids[self.anchors_]], dtype=object)
        self.predictor_ = model
        self.predictor_name_ = "mlp"
        self.valid_residuals_ = self.predict_anchors(Xv[:, self.anchors_]) - yv
        self.valid_scores_ = {"mlp": float(np.mean(np.abs(self.valid_residuals_)))}
        self.calibration_residuals_ = self.valid_residuals_
        self.calibration_predictions_ = self.valid_residuals_ + yv
        self.calibration_source_ = "validation"


def _zero_one(X: np.ndarray, device) -> torch.Tensor:
    """+-1 answers as the released code's 0/1 float32 tensor."""
    return torch.from_numpy((np.asarray(X, dtype=np.float32) + 1.0) / 2.0).to(device)


def _tensor(y: np.ndarray, device) -> torch.Tensor:
    return torch.from_numpy(np.asarray(y, dtype=np.float32)).to(device)


WARM_STEPS = 3  # eager steps before a step is captured as a CUDA graph (buffers set up)


class _Steps:
    """Full-batch Adam steps (lr, MSE, dropout on) of `net` on `x`, `t`: call once a step.

    On the CPU: torch's Adam, as the released code. On a GPU: the fused Adam (the same
    update up to rounding), and with `graphs`, after `WARM_STEPS` eager steps the step is
    captured once as a CUDA graph and replayed: one launch a step instead of some sixty,
    no Python between them (the same kernels; the dropout masks from the net's generator,
    registered with the graph so each replay draws new ones).
    """

    def __init__(self, net: nn.Module, x, t, lr: float, graphs: bool = True) -> None:
        self.net, self.x, self.t, self.done, self.graph = net, x, t, 0, None
        cuda = x.device.type == "cuda"
        self.graphs = graphs and cuda
        self.opt = torch.optim.Adam(
            net.parameters(), lr=lr, fused=cuda or None, capturable=self.graphs
        )

    def __call__(self) -> None:
        if self.graph is None and self.graphs and self.done >= WARM_STEPS:
            self.graph = self._capture()
        if self.graph is not None:
            self.graph.replay()
        elif self.graphs:  # the warm-up, on a side stream as torch's capture recipe does
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self._eager()
            torch.cuda.current_stream().wait_stream(side)
        else:
            self._eager()
        self.done += 1

    def _loss(self) -> torch.Tensor:
        return torch.mean((self.net(self.x).squeeze(1) - self.t) ** 2)

    def _eager(self) -> None:
        self.net.train()
        self.opt.zero_grad()
        self._loss().backward()
        self.opt.step()

    def _capture(self) -> torch.cuda.CUDAGraph:
        """The step as a CUDA graph (captured, not run: `replay` runs it)."""
        self.net.train()
        self.opt.zero_grad(set_to_none=True)  # the graph's backward writes fresh gradients
        graph = torch.cuda.CUDAGraph()
        rngs = {id(m.rng): m.rng for m in self.net.modules() if isinstance(m, Dropout)}
        for rng in rngs.values():
            graph.register_generator_state(rng)
        with torch.cuda.graph(graph):
            self._loss().backward()
            self.opt.step()
        return graph


def _paper_train(net, x, t, steps: int, lr: float, graphs: bool = True) -> None:
    """Full-batch Adam on MSE for `steps` steps, dropout on (the proxy of each round)."""
    step = _Steps(net, x, t, lr, graphs)
    for _ in range(steps):
        step()


def _paper_final(
    net, x, t, xv, tv, steps, lr, check_every, patience, graphs: bool = True
) -> tuple[int, int, float]:
    """The final MLP's training with the released code's checks.

    Returns (steps run, step whose state was kept, its validation MSE).

    After step s (s = 0, check_every, 2 check_every, ...): validation MSE and Kendall tau;
    the state is kept when MSE <= best and tau >= best tau, else patience counts one more.
    """
    from scipy.stats import kendalltau

    train = _Steps(net, x, t, lr, graphs)
    best_loss, best_tau, waited = float("inf"), -2.0, 0
    best_state, best_step, step = None, -1, -1
    for step in range(steps):
        train()
        if step % check_every:
            continue
        net.eval()
        with torch.no_grad():
            pred = net(xv).squeeze(1)
            loss = float(torch.mean((pred - tv) ** 2))
        tau = kendalltau(tv.cpu().numpy(), pred.cpu().numpy())[0]
        if loss <= best_loss and tau >= best_tau:  # NaN tau never qualifies
            best_loss, best_tau, waited, best_step = loss, float(tau), 0, step
            best_state = {n: v.detach().clone() for n, v in net.state_dict().items()}
        else:
            waited += 1
        if waited >= patience:
            break
    if best_state is not None:
        net.load_state_dict(best_state)
    else:
        best_step = step
    return step + 1, best_step, best_loss


__all__ = [
    "PAPER_INIT_CHOICES",
    "PAPER_RANDOM_INIT",
    "WARM_STEPS",
    "PaperSparseEval",
    "ZeroOneMLP",
    "paper_kmeans_anchors",
]
