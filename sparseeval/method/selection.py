"""Anchor selection: initialization (random, k-means, greedy, adaptive) and AIS/CIS refinement.

Only training and validation rows are passed in; test rows never are. The judge of an
anchor set is either validation MAE (validation rows only compare candidates and accept
swaps) or leave-one-out MAE of ridge over training and validation rows together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans

from sparseeval.consume.errors import SettingsError
from sparseeval.method.anchor_estimator import check_item_ids
from sparseeval.method.matrix import MatrixError
from sparseeval.method.parallel import usable_cpus
from sparseeval.method.predictors import MLPPredictor, RidgePredictor

log = logging.getLogger("sparseeval")

PAPER_INITS = ("kmeans", "random")
JUDGES = ("validation", "loo")


def random_anchors(n_items: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct items uniformly at random."""
    return np.sort(rng.choice(n_items, size=k, replace=False))


def kmeans_clusters(X_train: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Cluster L2-normalized item vectors (columns over training models).

    Returns (anchors, cluster_sizes): for each cluster the item nearest its centre and
    the number of items in it, in the same order; clusters whose nearest item is
    already taken get a random unused item (size kept with it).
    """
    items = np.asarray(X_train, dtype=np.float64).T
    items = items / np.maximum(np.linalg.norm(items, axis=1, keepdims=True), 1e-12)
    km = KMeans(n_clusters=k, n_init=1, random_state=seed).fit(items)
    dist = km.transform(items)  # items x clusters
    sizes = np.bincount(km.labels_, minlength=k)
    anchors = np.full(k, -1)
    taken: set[int] = set()
    for c in range(k):
        for j in np.argsort(dist[:, c]):
            if j not in taken:
                anchors[c] = j
                taken.add(int(j))
                break
    return anchors, sizes


def kmeans_anchors(X_train: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    anchors, _ = kmeans_clusters(X_train, k, int(rng.integers(2**31)))
    return np.sort(anchors)


def centred_columns(X: np.ndarray) -> np.ndarray:
    """Columns centred by their mean and scaled to unit norm (constant columns -> 0)."""
    Xc = X - X.mean(axis=0)
    return Xc / np.maximum(np.linalg.norm(Xc, axis=0), 1e-12)


def greedy_anchors(
    X_train: np.ndarray, y_train: np.ndarray, k: int, alpha: float = 1.0
) -> np.ndarray:
    """Forward selection: add the item most correlated with the current ridge residual."""
    Z = centred_columns(np.asarray(X_train, dtype=np.float64))
    chosen: list[int] = []
    residual = y_train - y_train.mean()
    for _ in range(k):
        score = np.abs(Z.T @ residual)
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
        fit = RidgePredictor(alpha=alpha).fit(X_train[:, chosen], y_train)
        residual = y_train - fit.predict(X_train[:, chosen])
    return np.sort(np.array(chosen))


def contribution_scores(X_train, residual: np.ndarray, Z: np.ndarray | None = None) -> np.ndarray:
    """CIS of every item: |centred, normalized column . residual| over training models.

    `Z`, when given, is `centred_columns(X_train)` computed once (it does not change
    between refinement steps; recomputing it was a fifth of a refinement's time).
    """
    if Z is None:
        Z = centred_columns(np.asarray(X_train, dtype=np.float64))
    return np.abs(Z.T @ residual)


def importance_scores(proxy, XA: np.ndarray, y: np.ndarray) -> np.ndarray:
    """AIS of each anchor: mean |d loss / d input| over training models."""
    return np.abs(proxy.input_gradient(XA, y)).mean(axis=0)


@dataclass
class Swap:
    """One refinement step, as recorded in `AnchorSelector.history_`."""

    step: int
    removed: int
    added: int
    ais: float
    cis: float
    mae_before: float
    mae_after: float
    accepted: bool


def swap_words(removed: int, added: int, item_ids: np.ndarray) -> str:
    """`item 914 -> item 231`: a swap in item ids (column indices are no one's ids)."""
    return f"item {item_ids[removed]} -> item {item_ids[added]}"


def _mae(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - y)))


def anchors_that_fit(budget: int, n_items: int, share: float = 1.0) -> int:
    """`budget` capped at `share` of `n_items` and at `n_items - 1` (at least one item stays
    out of the anchors); a MatrixError when there are under 2 items to select from."""
    if n_items < 2:
        raise MatrixError(f"{n_items} item(s): selecting anchors needs at least 2 items")
    return max(1, min(budget, n_items - 1, int(share * n_items + 1e-9)))


class AnchorSelector:
    """Choose `n_anchors` items: initialize, then refine by AIS/CIS swaps.

    init: "random", "kmeans", "greedy", "adaptive" (best of `init_candidates` by
    held-out MAE of a quickly trained proxy), or a sequence of item indices.
    acceptance: "always" applies every swap (the paper); "validated" tries the
    `swap_candidates` best CIS items against the weakest anchor and keeps the best
    swap only if held-out MAE falls, and stops refining at the first swap that does
    not (the next step would propose the same swaps).
    proxy: "mlp" (the paper) or "ridge" (fast, closed form).
    judge: what "held-out MAE" is. "validation": the proxy trained on training rows,
    scored on validation rows. "loo": leave-one-out MAE of a ridge proxy over training
    and validation rows together, so every labelled model both selects and judges,
    which matters when there are few (measured in bench/accuracy.py). Under "loo" the
    greedy init is not a candidate: it is fit to the very rows that would judge it.
    """

    def __init__(
        self,
        n_anchors: int = 100,
        init: str = "adaptive",
        init_candidates: Sequence[str] = PAPER_INITS,
        refine_steps: int = 40,
        acceptance: str = "validated",
        swap_candidates: int = 3,
        proxy: str = "ridge",
        judge: str = "loo",
        proxy_epochs: int = 300,
        proxy_lr: float = 2e-3,
        seed: int = 0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.n_anchors, self.init, self.init_candidates = n_anchors, init, tuple(init_candidates)
        self.refine_steps, self.acceptance = refine_steps, acceptance
        self.swap_candidates, self.proxy = swap_candidates, proxy
        if judge not in JUDGES:
            raise SettingsError(f"judge must be one of {JUDGES}, got {judge!r}")
        if judge == "loo" and proxy != "ridge":
            raise SettingsError("judge='loo' needs proxy='ridge' (closed-form leave-one-out)")
        self.judge = judge
        self.proxy_epochs, self.proxy_lr, self.seed = proxy_epochs, proxy_lr, seed
        self.progress = progress or log.info

    def _proxy(self):
        if self.proxy == "ridge":
            return RidgePredictor()
        if self.proxy == "mlp":
            return MLPPredictor(
                lr=self.proxy_lr, epochs=self.proxy_epochs, patience=30, seed=self.seed
            )
        raise SettingsError(f"unknown proxy {self.proxy!r}; use 'mlp' or 'ridge'")

    def _fit_proxy(self, anchors, X, y, Xv, yv):
        """The proxy on these anchors and its held-out MAE (see `judge`)."""
        XA = self._columns(X, anchors)
        if self.judge == "loo":
            proxy = RidgePredictor().fit(XA, y)
            return proxy, float(np.mean(np.abs(proxy.loo_residuals_)))
        proxy = self._proxy().fit(XA, y, Xv[:, anchors], yv)
        return proxy, _mae(proxy.predict(Xv[:, anchors]), yv)

    def _columns(self, X: np.ndarray, anchors: np.ndarray) -> np.ndarray:
        """`X[:, anchors]`, the same array, gathered from the item-major copy `fit` keeps of
        X (rows of it are contiguous: ~8x faster than a strided gather, 200 times a fit)."""
        items = getattr(self, "_items", None)
        if items is None or items.shape[::-1] != X.shape:
            return X[:, anchors]
        return np.ascontiguousarray(items[anchors].T)

    def _initial(self, name: str, X, y, rng) -> np.ndarray:
        k = self.n_anchors
        if name == "random":
            return random_anchors(X.shape[1], k, rng)
        if name == "kmeans":
            return kmeans_anchors(X, k, rng)
        if name == "greedy":
            return greedy_anchors(X, y, k)
        raise SettingsError(f"unknown init {name!r}; use random, kmeans, greedy or adaptive")

    def fit(self, X_train, y_train, X_valid, y_valid, item_ids=None) -> AnchorSelector:
        """Select anchors from training rows; held-out MAE judges candidates and swaps.

        item_ids: names the items in the progress lines (default: the column indices).
        """
        X = np.asarray(X_train, dtype=np.float32)
        Xv = np.asarray(X_valid, dtype=np.float32)
        y, yv = np.asarray(y_train, dtype=np.float64), np.asarray(y_valid, dtype=np.float64)
        if self.judge == "loo":
            X, y = np.vstack([X, Xv]), np.concatenate([y, yv])
        if not 0 < self.n_anchors < X.shape[1]:
            raise SettingsError(f"n_anchors must be in 1..{X.shape[1] - 1}, got {self.n_anchors}")
        ids = check_item_ids(item_ids, X.shape[1])
        rng = np.random.default_rng(self.seed)
        given = not isinstance(self.init, str)
        names = (
            ["given"]
            if given
            else (self.init_candidates if self.init == "adaptive" else (self.init,))
        )
        if self.judge == "loo" and self.init == "adaptive":
            names = [n for n in names if n != "greedy"]
        self._items = np.ascontiguousarray(X.T)  # item-major, for `_columns`
        workers = min(self.swap_candidates, usable_cpus())
        # A refinement step's swap trials are independent fits: side by side in threads
        # (NumPy's BLAS and torch free the GIL), taken in the same order.
        with ThreadPoolExecutor(max_workers=max(1, workers)) as self._pool:
            try:
                return self._fit(X, y, Xv, yv, ids, rng, given, names)
            finally:
                del self._items, self._pool

    def _fit(self, X, y, Xv, yv, ids, rng, given: bool, names) -> AnchorSelector:
        self.init_scores_: dict[str, float] = {}
        best = None
        for name in names:
            anchors = np.sort(np.asarray(self.init)) if given else self._initial(name, X, y, rng)
            proxy, mae = self._fit_proxy(anchors, X, y, Xv, yv)
            self.init_scores_[name] = mae
            self.progress(f"init {name}: held-out MAE {100 * mae:.3f} points")
            if best is None or mae < best[2]:
                best = (name, anchors, mae, proxy)
        self.init_, anchors, mae, proxy = best
        self.history_: list[Swap] = []
        Z = centred_columns(X.astype(np.float64)) if self.refine_steps else None
        for step in range(self.refine_steps):
            anchors, mae, proxy, swap = self._refine_step(
                step, anchors, mae, proxy, X, y, Xv, yv, Z
            )
            self.history_.append(swap)
            self.progress(
                f"refine step {step + 1}/{self.refine_steps}: swap"
                f" {swap_words(swap.removed, swap.added, ids)} "
                f"{'kept' if swap.accepted else 'rejected'}, held-out MAE {100 * mae:.3f}"
            )
            if not swap.accepted:
                break
        self.anchors_, self.mae_, self.proxy_ = anchors, mae, proxy
        return self

    def _refine_step(self, step, anchors, mae, proxy, X, y, Xv, yv, Z=None):
        XA = self._columns(X, anchors)
        ais = importance_scores(proxy, XA, y)
        weakest = int(np.argmin(ais))
        cis = contribution_scores(X, proxy.predict(XA) - y, Z)
        cis[anchors] = -np.inf
        n_try = 1 if self.acceptance == "always" else self.swap_candidates
        n_try = min(n_try, X.shape[1] - len(anchors))  # only items outside the anchors
        tries = [
            (j, np.sort(np.append(np.delete(anchors, weakest), j)))
            for j in np.argsort(-cis)[:n_try]
        ]
        fits = self._pool.map(lambda t: self._fit_proxy(t[1], X, y, Xv, yv), tries)
        trials = [(j, new, *fit) for (j, new), fit in zip(tries, fits, strict=True)]
        j, new, new_proxy, new_mae = min(trials, key=lambda t: t[3])
        accept = self.acceptance == "always" or new_mae < mae
        swap = Swap(
            step,
            int(anchors[weakest]),
            int(j),
            float(ais[weakest]),
            float(cis[j]),
            mae,
            new_mae,
            accept,
        )
        return (new, new_mae, new_proxy, swap) if accept else (anchors, mae, proxy, swap)


__all__ = [
    "JUDGES",
    "PAPER_INITS",
    "AnchorSelector",
    "Swap",
    "anchors_that_fit",
    "centred_columns",
    "contribution_scores",
    "greedy_anchors",
    "importance_scores",
    "kmeans_anchors",
    "kmeans_clusters",
    "random_anchors",
    "swap_words",
]
