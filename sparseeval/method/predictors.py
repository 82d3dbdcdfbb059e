"""Predictors of full-benchmark accuracy from anchor answers (+-1 inputs, [0, 1] outputs).

Every predictor has `fit(X, y, X_valid=None, y_valid=None) -> self`, `predict(X)`,
`input_gradient(X, y)` (d loss / d input, used by AIS) and a pickle-free state:
`state() -> (config, arrays)`, which `sparseeval.consume.scoring.inference` writes as the published
predictor format and reads back with NumPy alone.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
import torch
from scipy.linalg import solve_triangular
from scipy.optimize import nnls
from torch import nn

from sparseeval.method.memory import keep_freed_memory
from sparseeval.method.parallel import training_slot
from sparseeval.method.training import Adam, Dropout, MonotoneMix, mask_generator

ALPHAS = np.logspace(-2, 4, 25)


class Predictor(Protocol):
    def fit(self, X, y, X_valid=None, y_valid=None) -> Predictor: ...
    def predict(self, X: np.ndarray) -> np.ndarray: ...
    def input_gradient(self, X: np.ndarray, y: np.ndarray) -> np.ndarray: ...
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]: ...


class RidgePredictor:
    """Ridge regression on centred anchors; `alpha=None` picks it by leave-one-out error.

    `loo_residuals_` holds each training row's leave-one-out residual (target scale).
    """

    kind = "ridge"

    def __init__(self, alpha: float | None = None, alphas: np.ndarray = ALPHAS) -> None:
        self.alpha = alpha
        self.alphas = alphas

    def fit(self, X, y, X_valid=None, y_valid=None) -> RidgePredictor:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        self.mean_ = X.mean(axis=0)
        self.intercept_ = y.mean()
        U, s, Vt = _thin_svd(X - self.mean_)
        yc = y - self.intercept_
        Uty = U.T @ yc
        alphas = np.asarray([self.alpha] if self.alpha is not None else self.alphas, dtype=float)
        loo = _ridge_loo_residuals(U, s, Uty, yc, alphas)  # one column per alpha
        best = int(np.argmin(np.mean(loo**2, axis=0)))
        self.alpha_, self.loo_residuals_ = float(alphas[best]), loo[:, best]
        self.coef_ = Vt.T @ (s / (s**2 + self.alpha_) * Uty)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.clip(self._linear(X), 0.0, 1.0)

    def _linear(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, dtype=np.float64) - self.mean_) @ self.coef_ + self.intercept_

    def input_gradient(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        residual = self.predict(X) - np.asarray(y)
        return 2.0 * residual[:, None] * self.coef_[None, :]

    def state(self):
        config = {"kind": self.kind, "alpha": float(self.alpha_)}
        arrays = {"mean": self.mean_, "coef": self.coef_, "intercept": np.array([self.intercept_])}
        return config, arrays

    @classmethod
    def candidate(cls, estimator, XA, y, parts: list) -> RidgePredictor:
        """This predictor as `SparseEval` trains it on anchor columns (`method.registry`):
        a published reader is monotone, so where ridge gives an anchor a negative weight it
        is refitted with every weight >= 0 at its alpha (`NonNegativeRidge`)."""
        fitted = cls().fit(XA, y)
        if (fitted.coef_ < 0).any():
            return NonNegativeRidge(alpha=fitted.alpha_).fit(XA, y)
        return fitted

    @classmethod
    def from_state(cls, config: dict, arrays: dict) -> RidgePredictor:
        """The fitted predictor back from `state()` (predicts exactly as the saved one)."""
        p = cls(alpha=config["alpha"])
        p.alpha_, p.mean_, p.coef_ = config["alpha"], arrays["mean"], arrays["coef"]
        p.intercept_ = arrays["intercept"][0]
        return p


def _thin_svd(Xc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """U, s, Vt of a tall matrix from the eigendecomposition of its k x k Gram matrix.

    Several times faster than `np.linalg.svd` when models far outnumber anchors (the
    selection fits ridge over a hundred times). Directions with s^2 below 1e-10 of the
    largest are dropped: they carry no signal a ridge penalty of >= 1e-2 would keep.
    """
    evals, V = np.linalg.eigh(Xc.T @ Xc)
    keep = evals > 1e-10 * max(float(evals.max(initial=0.0)), 1e-300)
    s, V = np.sqrt(evals[keep]), V[:, keep]
    return (Xc @ V) / s, s, V.T


def _ridge_loo_residuals(U, s, Uty, yc, alphas: np.ndarray) -> np.ndarray:
    """Leave-one-out residuals of ridge for every alpha at once (rows x alphas).

    From one decomposition: the hat matrix diagonal plus the intercept's 1/n.
    """
    shrink = s[:, None] ** 2 / (s[:, None] ** 2 + alphas[None, :])
    fitted = U @ (shrink * Uty[:, None])
    hat = (U**2) @ shrink + 1.0 / len(yc)
    return (yc[:, None] - fitted) / (1.0 - hat)


class NonNegativeRidge(RidgePredictor):
    """Ridge whose anchor weights are all >= 0: a correct answer never lowers the estimate.

    With few training models this prior keeps noise from giving items negative weights
    (bench/accuracy.py measures it against plain ridge); with many it rarely binds.
    `alpha=None` picks it by `folds`-fold cross-validated squared error.
    """

    kind = "nnridge"

    def __init__(
        self, alpha: float | None = None, alphas: np.ndarray = ALPHAS[::2], folds: int = 5
    ) -> None:
        super().__init__(alpha, alphas)
        self.folds = folds

    def fit(self, X, y, X_valid=None, y_valid=None) -> NonNegativeRidge:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        alphas = [self.alpha] if self.alpha is not None else list(self.alphas)
        self.alpha_ = alphas[0] if len(alphas) == 1 else self._cv_alpha(X, y, alphas)
        self.mean_, self.intercept_, self.coef_ = _nn_ridge(_centre(X, y), self.alpha_)
        return self

    def _cv_alpha(self, X: np.ndarray, y: np.ndarray, alphas: list[float]) -> float:
        """The alpha of least `folds`-fold cross-validated squared error (the first of
        equals); each fold is centred once, not once per alpha."""
        fold = np.random.default_rng(0).permutation(len(y)) % self.folds
        held = [fold == f for f in range(self.folds)]
        train = [_centre(X[~h], y[~h]) for h in held]

        def sse(alpha: float) -> float:
            fits = (_nn_ridge(c, alpha) for c in train)
            return sum(
                np.sum(((X[h] - m) @ w + b - y[h]) ** 2)
                for h, (m, b, w) in zip(held, fits, strict=True)
            )

        return min(alphas, key=sse)


def _centre(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """(column means, mean of y, Xc'Xc, Xc'yc) of the centred data Xc, yc."""
    mean, intercept = X.mean(axis=0), y.mean()
    Xc = X - mean
    return mean, intercept, Xc.T @ Xc, Xc.T @ (y - intercept)


def _nn_ridge(centred: tuple, alpha: float) -> tuple[np.ndarray, float, np.ndarray]:
    """Non-negative ridge on centred data: (mean, intercept, coef).

    The problem is nnls of [Xc; sqrt(alpha) I] c ~ [yc; 0], whose objective is
    c'(G + alpha I)c - 2 c'Xc'yc + const (G = Xc'Xc). With L L' = G + alpha I that is
    ||L'c - L^-1 Xc'yc||^2 + const: the same minimiser from a k x k nnls instead of an
    (n + k) x k one, ~10x less CPU (coefficients equal to ~1e-15; speed_issue30_round3.txt).
    """
    mean, intercept, gram, xty = centred
    k = len(xty)
    L = np.linalg.cholesky(gram + alpha * np.eye(k))
    coef, _ = nnls(L.T, solve_triangular(L, xty, lower=True), maxiter=50 * k)
    return mean, intercept, coef


_BUILD_LOCK = threading.Lock()


def fit_all(predictors: list, X, y, n_jobs: int = 1) -> list:
    """Fit predictors on the same data, `n_jobs` at a time in threads (torch frees the GIL)."""
    if n_jobs <= 1 or len(predictors) <= 1:
        return [p.fit(X, y) for p in predictors]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        return list(pool.map(lambda p: p.fit(X, y), predictors))


class MLPPredictor:
    """The paper's MLP: k -> 128 -> 64 -> 32 -> 1, dropout, sigmoid, Adam, MSE.

    Adam on shuffled mini-batches of `batch_size` rows (None: the whole training set at
    each step, as the paper) that stops early on validation error, checked once an epoch
    (a held-out share of the training rows when no validation set is given), and keeps the
    best weights.
    `hidden=()` gives a linear-in-inputs predictor trained the same way.
    `monotone=True` (the default): every weight >= 0 (started at |init| / sqrt(fan-in),
    projected back after each Adam step) and `MonotoneMix` between layers, so answering one
    more anchor right never lowers the estimate (the paper's GELU net, `monotone=False`,
    can). `activation` names the function between layers (default by `monotone`; "tanh":
    monotone sets published before "monotone-mix").
    """

    kind = "mlp"
    outputs_ = 1  # a 2-D `y` in `fit` trains one output per column (see `output`)

    def __init__(
        self,
        hidden: tuple[int, ...] = (128, 64, 32),
        dropout: float = 0.1,
        lr: float = 5e-4,
        epochs: int = 2000,
        patience: int = 100,
        weight_decay: float = 0.0,
        holdout: float = 0.1,
        sigmoid: bool = True,
        seed: int = 0,
        monotone: bool = True,
        device: str = "cpu",
        activation: str | None = None,
        batch_size: int | None = None,
    ) -> None:
        self.hidden, self.dropout, self.lr = tuple(hidden), dropout, lr
        self.batch_size = batch_size
        self.epochs, self.patience, self.weight_decay = epochs, patience, weight_decay
        self.holdout, self.sigmoid, self.seed = holdout, sigmoid, seed
        self.monotone = monotone
        self.device = device  # trains there ("cuda": a GPU); predicts on the CPU
        self.activation = activation or ("monotone-mix" if monotone else "gelu")

    def _build(self, k: int) -> nn.Sequential:
        """A fresh net: weights and its dropout generator's seed from torch's generator."""
        seed = int(torch.randint(0, 2**62, (1,)).item())
        net = self._layers(k, mask_generator(seed, self.device))
        if self.monotone:
            with torch.no_grad():
                for layer in _linear(net):
                    layer.weight.abs_().div_(layer.weight.shape[1] ** 0.5)
        return net

    def _layers(self, k: int, rng: np.random.Generator | torch.Generator) -> nn.Sequential:
        layers: list[nn.Module] = []
        for width in self.hidden:
            layers += [nn.Linear(k, width), _ACTIVATIONS[self.activation](),
                       Dropout(self.dropout, rng)]  # fmt: skip
            k = width
        layers.append(nn.Linear(k, self.outputs_))
        if self.sigmoid:
            layers.append(nn.Sigmoid())
        return nn.Sequential(*layers)

    def fit(self, X, y, X_valid=None, y_valid=None) -> MLPPredictor:
        # These nets are tiny: one thread is fastest, and parallel fits do not fight.
        torch.set_num_threads(1)
        keep_freed_memory()  # each epoch frees and reallocates the same activations
        X, y = np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.float32)
        if X_valid is None:
            X, y, X_valid, y_valid = _hold_out(X, y, self.holdout, self.seed)
        self.mean_ = X.mean(axis=0)
        self.outputs_ = 1 if y.ndim == 1 else y.shape[1]
        with training_slot():  # one of the slots a caller's `trainings_at_once` sets, if any
            with _BUILD_LOCK:  # fits in parallel threads each seed and draw their net in turn
                torch.manual_seed(self.seed)
                self.net_ = self._build(X.shape[1]).to(self.device)
            self.epochs_, self.valid_mse_ = _train(
                self.net_,
                *self._tensors(X, y, self.device),
                *self._tensors(np.asarray(X_valid), np.asarray(y_valid), self.device),
                lr=self.lr,
                epochs=self.epochs,
                patience=self.patience,
                weight_decay=self.weight_decay,
                project=_non_negative if self.monotone else None,
                batch_size=self.batch_size,
                seed=self.seed,
            )
        self.net_.cpu()  # predicts, and is published, on the CPU
        return self

    def _tensors(self, X: np.ndarray, y: np.ndarray | None = None, device="cpu"):
        xt = torch.from_numpy(np.asarray(X, dtype=np.float32) - self.mean_).to(device)
        return (xt,) if y is None else (xt, torch.from_numpy(np.asarray(y, np.float32)).to(device))

    def predict(self, X: np.ndarray) -> np.ndarray:
        self.net_.eval()
        with torch.no_grad():
            out = self.net_(*self._tensors(X)).double().numpy()
            out = out[:, 0] if self.outputs_ == 1 else out
        return np.clip(out, 0.0, 1.0)

    def input_gradient(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        self.net_.eval()
        (xt,), yt = self._tensors(X), torch.as_tensor(np.asarray(y, dtype=np.float32))
        xt.requires_grad_(True)
        loss = ((self.net_(xt).squeeze(1) - yt) ** 2).sum()
        loss.backward()
        return xt.grad.double().numpy()

    def state(self):
        if self.outputs_ != 1:
            raise ValueError("a multi-output MLP is published one output at a time: output(j)")
        return self._state()

    def _state(self):
        config = {
            "kind": self.kind,
            "hidden": list(self.hidden),
            "dropout": self.dropout,
            "sigmoid": self.sigmoid,
            "n_inputs": int(self.mean_.size),
            "activation": self.activation,
        }
        arrays = {"mean": self.mean_} | {
            f"net.{k}": v.detach().cpu().numpy() for k, v in self.net_.state_dict().items()
        }
        return config, arrays

    @classmethod
    def candidate(cls, estimator, XA, y, parts: list):
        """The estimator's MLP ensemble on anchor columns: one MLP, or the mean of several."""
        members = estimator.fit_mlp_members(XA, y)
        if len(members) == 1:
            return members[0]
        return BlendPredictor(members, [1 / len(members)] * len(members))

    @classmethod
    def from_state(cls, config: dict, arrays: dict) -> MLPPredictor:
        """The fitted net back from `state()` (same weights: predicts exactly as the saved one)."""
        torch.set_num_threads(1)  # as `fit`: the saved net predicted with one thread
        p = cls(hidden=tuple(config["hidden"]), dropout=config["dropout"],
                sigmoid=config["sigmoid"],
                activation=config.get("activation", "gelu"),
                monotone=config.get("activation", "gelu") != "gelu")  # fmt: skip
        p.mean_ = np.asarray(arrays["mean"], dtype=np.float32)
        p.net_ = p._layers(int(config["n_inputs"]), np.random.default_rng(0))  # eval: no dropout
        weights = {k[len("net.") :]: torch.from_numpy(np.array(v)) for k, v in arrays.items()
                   if k.startswith("net.")}  # fmt: skip
        p.net_.load_state_dict(weights)
        return p

    def output(self, j: int):
        """Output `j` of a multi-output MLP as a one-output NumPy reader (last layer sliced)."""
        from sparseeval.consume.scoring.inference import reader_from_state

        config, arrays = self._state()
        last = f"net.{3 * len(self.hidden)}"  # Linear, activation, Dropout per hidden layer
        for part in ("weight", "bias"):
            arrays[f"{last}.{part}"] = arrays[f"{last}.{part}"][j : j + 1]
        return reader_from_state(config, arrays)


_ACTIVATIONS = {"gelu": nn.GELU, "tanh": nn.Tanh, "monotone-mix": MonotoneMix}


def _hold_out(X, y, share: float, seed: int):
    """Split off `share` of the rows (at least one) for early stopping."""
    order = np.random.default_rng(seed).permutation(len(y))
    cut = max(1, round(share * len(y)))
    keep, held = order[cut:], order[:cut]
    return X[keep], y[keep], X[held], y[held]


def _linear(net: nn.Module) -> list[nn.Linear]:
    return [m for m in net.modules() if isinstance(m, nn.Linear)]


def _non_negative(net: nn.Module) -> None:
    """Project every Linear layer's weights onto >= 0 (biases are free)."""
    with torch.no_grad():
        torch._foreach_clamp_min_([layer.weight for layer in _linear(net)], 0.0)


def _train(
    net, x, y, xv, yv, lr, epochs, patience, weight_decay, project=None, batch_size=None, seed=0
) -> tuple[int, float]:
    """Adam on MSE with early stopping; restores the best weights. Each epoch is one step on
    all rows, or steps on shuffled batches of `batch_size` rows (the order drawn from `seed`).
    `project(net)` runs after each step (a constraint on the weights)."""
    opt = Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    batches = _batches(x, y, batch_size, seed)
    best, best_state, best_epoch = float("inf"), None, 0
    for epoch in range(epochs):
        net.train()
        for xb, yb in next(batches):
            opt.zero_grad()
            loss = ((net(xb).reshape(yb.shape) - yb) ** 2).mean()
            loss.backward()
            opt.step()
            if project is not None:
                project(net)
        net.eval()
        with torch.no_grad():
            valid = float(((net(xv).reshape(yv.shape) - yv) ** 2).mean())
        if valid < best:
            best, best_epoch = valid, epoch
            best_state = {k: v.clone() for k, v in net.state_dict().items()}
        elif epoch - best_epoch >= patience:
            break
    net.load_state_dict(best_state)
    return best_epoch + 1, best


def _batches(x: torch.Tensor, y: torch.Tensor, batch_size: int | None, seed: int):
    """Each epoch's (x, y) batches: the rows shuffled (the order drawn from `seed`) and cut
    into batches of `batch_size` (a last batch under half of it joins the one before), or
    [(x, y)] (all rows, in order) when that is one batch or `batch_size` is None or 0.
    The rows are gathered once an epoch; the batches are views of them."""
    n = len(y)
    cuts = list(range(batch_size, n - batch_size // 2, batch_size)) if batch_size else []
    if not cuts:
        while True:
            yield [(x, y)]
    generator = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(n, generator=generator).to(x.device)
        xs, ys = x.index_select(0, order), y.index_select(0, order)
        yield list(zip(torch.tensor_split(xs, cuts), torch.tensor_split(ys, cuts), strict=True))


class BlendPredictor:
    """A weighted average of fitted predictors (e.g. MLP and ridge)."""

    kind = "blend"

    def __init__(self, members: list, weights: list[float]) -> None:
        self.members, self.weights = members, list(weights)

    def fit(self, X, y, X_valid=None, y_valid=None) -> BlendPredictor:
        for m in self.members:
            m.fit(X, y, X_valid, y_valid)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return sum(w * m.predict(X) for w, m in zip(self.weights, self.members, strict=True))

    def input_gradient(self, X, y) -> np.ndarray:
        return sum(
            w * m.input_gradient(X, y) for w, m in zip(self.weights, self.members, strict=True)
        )

    @classmethod
    def candidate(cls, estimator, XA, y, parts: list) -> BlendPredictor:
        """The equal-weight mean of the already fitted `parts` (`method.registry` uses)."""
        return cls(parts, [1 / len(parts)] * len(parts))

    @classmethod
    def from_members(cls, members: list, config: dict) -> BlendPredictor:
        """The blend of a published `config` whose members are rebuilt already (by
        `registry.predictor_from_state`, each by its own kind)."""
        return cls(members, config["weights"])

    def state(self):
        configs, arrays = [], {}
        for i, m in enumerate(self.members):
            c, a = m.state()
            configs.append(c)
            arrays |= {f"m{i}/{k}": v for k, v in a.items()}
        return {"kind": self.kind, "weights": self.weights, "members": configs}, arrays


__all__ = [
    "ALPHAS",
    "BlendPredictor",
    "MLPPredictor",
    "NonNegativeRidge",
    "Predictor",
    "RidgePredictor",
    "fit_all",
]
