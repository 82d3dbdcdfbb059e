"""More items for one model: which to answer next, and the anchor estimate they correct.

A set fit with item curves carries every item of its benchmark (`items/items.json`: ids and,
where known, lm-eval task, doc id and hash) and one logistic curve per item
(`items/curves.npz`): P(model answers item j) = sigmoid(a_j + b_j * theta), theta being the
model's ability, fitted on the training models with theta = logit of their accuracy.

The correction is a difference estimator. For a model with anchor estimate v, theta is the
ability at which the curves, with the anchors' own answers in place, average v over the
benchmark (v' when v is out of their reach). With E the n extra items it answered (not
anchors; taken as a simple random sample of the N_R non-anchor items of the N), the estimate is

    v' + (N_R / N) * mean over E of (x_j - p_j)

It is unbiased over the draw of E whatever the curves and the anchor estimate are, so its
interval, +- t(n-1) * sd with sd = (N_R / N) * sqrt((1 - n / N_R) * s2 / n) and s2 the
sample variance of the residuals x_j - p_j (finite-population corrected), does not rest on
the model being like the training models; it narrows as n grows and is 0 once every item is
answered. That interval is the one reported. The point reported inside it moves from v
toward the unbiased value by 1 - w, w = sd^2 / (sd^2 + max(sA^2, shift^2 - sd^2)), with sA
the anchor estimate's own spread (its conformal half-width / z) and shift the unbiased
value minus v: a model whose residuals say the anchors are off (shift^2 well above sd^2)
gets the unbiased value, a familiar one keeps most of the anchors' (measured lower error,
same interval: bench/results/next_items.txt).
It corrects the mean over the set's items, so a set applies it only when that mean is its
target (`ItemCurves.item_mean`): not for a leaderboard score that is no function of these
items (TruthfulQA's mc2, or a score over items the set does not list).
NumPy only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.errors import SettingsError, SparseEvalError

CURVES_DIR = "items"
ITEMS_FILE = "items.json"
CURVES_FILE = "curves.npz"
KEY = "item_curves"  # the manifest key
RANDOM, INFORMATIVE = "random", "informative"
STRATEGIES = (RANDOM, INFORMATIVE)
DEFAULT_STRATEGY = RANDOM  # measured: bench/next_items.py (bench/results/next_items.txt)
MIN_RESIDUAL_VAR = 0.01  # s2 floor: a handful of residuals that agree say little about the rest


class CurvesError(SparseEvalError, ValueError):
    """Item curves that cannot serve (damaged, or not matching the set's anchors)."""


@dataclass(frozen=True)
class ItemCurves:
    """Every item of a benchmark with its logistic curve against ability."""

    items: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    item_mean: bool = True  # the set's target is the mean over these items
    sources: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        n = len(self.items)
        a, b = np.asarray(self.a, float), np.asarray(self.b, float)
        if a.shape != (n,) or b.shape != (n,):
            raise CurvesError(f"curves have shapes {a.shape} and {b.shape}, expected ({n},)")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise CurvesError("curve parameters are not all finite")
        if len(set(self.items)) != n:
            raise CurvesError("an item is listed twice")

    def manifest_entry(self) -> dict[str, Any]:
        return {"folder": CURVES_DIR, "n_items": len(self.items), "item_mean": self.item_mean}

    def save(self, folder: str | Path) -> list[Path]:
        """Write `items.json` and `curves.npz` (no pickles) into `folder`; the files."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"items": list(self.items), "item_mean": self.item_mean,
                "sources": dict(self.sources or {})}  # fmt: skip
        (folder / ITEMS_FILE).write_text(json.dumps(meta))
        np.savez(folder / CURVES_FILE, a=np.asarray(self.a, float), b=np.asarray(self.b, float))
        return [folder / ITEMS_FILE, folder / CURVES_FILE]

    @classmethod
    def load(cls, folder: str | Path) -> ItemCurves:
        folder = Path(folder)
        try:
            meta = json.loads((folder / ITEMS_FILE).read_text())
            with np.load(folder / CURVES_FILE, allow_pickle=False) as npz:
                a, b = npz["a"], npz["b"]
        except (OSError, ValueError, KeyError) as e:
            raise CurvesError(f"cannot read item curves ({e})") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("items"), list):
            raise CurvesError("items.json has no list of items")
        return cls(tuple(map(str, meta["items"])), a, b, bool(meta.get("item_mean", True)),
                   meta.get("sources") or None)  # fmt: skip

    def probabilities(self, theta) -> np.ndarray:
        """P(correct) per model (rows, one per theta) and item."""
        t = np.atleast_1d(np.asarray(theta, float))
        return _sigmoid(self.a[None, :] + self.b[None, :] * t[:, None])


@dataclass(frozen=True)
class Correction:
    """What the extra items did to one model's estimate."""

    value: float  # the corrected estimate (inside the interval)
    shift: float  # value - anchor estimate
    sd: float  # the unbiased value's standard error (sampling of the extra items)
    n_extra: int
    n_rest: int  # non-anchor items of the benchmark
    items: tuple[str, ...]  # the extra items used
    unbiased: float = float("nan")  # the difference estimator's value (the interval's centre)

    def within(self, low: float, high: float) -> Correction:
        """The point moved into [low, high] (where the interval clipped it)."""
        point = min(max(self.value, low), high)
        return replace(self, value=point, shift=self.shift + point - self.value)

    def interval(self, level: float) -> tuple[float, float]:
        h = t_quantile(level, self.n_extra - 1) * self.sd
        return max(0.0, self.unbiased - h), min(1.0, self.unbiased + h)

    def as_dict(self, anchors: tuple[float, float, float]) -> dict:
        """As `Estimate.correction` carries it; `anchors`: the anchor estimate, low, high."""
        return {"n_extra": self.n_extra, "n_rest": self.n_rest, "shift": self.shift,
                "sd": self.sd, "unbiased": self.unbiased, "anchor_estimate": list(anchors),
                "items": list(self.items)}  # fmt: skip


def abilities(curves: ItemCurves, known: np.ndarray, known01: np.ndarray, values) -> np.ndarray:
    """theta per model: the curves, with the known answers in place, average `values`.

    known: item positions answered (models share them); known01: (models, len(known)) 0/1.
    Bisection on a monotone function (slopes are >= 0); clipped to [-12, 12].
    """
    values = np.atleast_1d(np.asarray(values, float))
    rest = np.setdiff1d(np.arange(len(curves.items)), known)
    total = np.asarray(known01, float).reshape(len(values), -1).sum(1)
    n = len(curves.items)
    lo, hi = np.full(len(values), -12.0), np.full(len(values), 12.0)
    a, b = curves.a[rest], curves.b[rest]
    for _ in range(50):
        mid = (lo + hi) / 2
        mean = (total + _sigmoid(a[None, :] + b[None, :] * mid[:, None]).sum(1)) / n
        below = mean < values
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def correct(
    curves: ItemCurves,
    anchors: np.ndarray,
    anchors01: np.ndarray,
    value: float,
    extra: np.ndarray,
    extra01: np.ndarray,
    anchor_sd: float = 0.0,
) -> Correction:
    """The difference estimator of one model and the point inside its interval (module
    docstring): positions and 0/1 answers; anchor_sd: the anchor estimate's spread."""
    n_all, n_rest, n = len(curves.items), len(curves.items) - len(anchors), len(extra)
    theta = abilities(curves, anchors, anchors01[None, :], [value])[0]
    p = curves.probabilities(theta)[0]
    rest = np.setdiff1d(np.arange(n_all), anchors)
    base = (float(np.sum(anchors01)) + float(p[rest].sum())) / n_all
    r = np.asarray(extra01, float) - p[extra]
    value_c = base + n_rest / n_all * float(r.mean())
    s2 = max(float(r.var(ddof=1)) if n > 1 else 0.25, MIN_RESIDUAL_VAR)
    sd = n_rest / n_all * math.sqrt(max(0.0, 1 - n / n_rest) * s2 / n)
    value_c = min(1.0, max(0.0, value_c))
    shift = value_c - value
    w = sd * sd / (sd * sd + max(anchor_sd**2, shift * shift - sd * sd)) if sd > 0 else 0.0
    point = value + (1 - w) * shift
    items = tuple(curves.items[j] for j in extra)
    return Correction(point, point - value, sd, n, n_rest, items, value_c)


def choose(
    curves: ItemCurves,
    candidates: np.ndarray,
    n: int,
    strategy: str = DEFAULT_STRATEGY,
    theta: float | None = None,
    seed: int | None = 0,
) -> np.ndarray:
    """`n` positions among `candidates`: at random, or those the model is least sure of."""
    if strategy not in STRATEGIES:
        raise SettingsError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    n = min(int(n), len(candidates))
    if strategy == RANDOM or theta is None:
        return np.sort(np.random.default_rng(seed).choice(candidates, n, replace=False))
    p = curves.probabilities(theta)[0][candidates]
    return np.sort(candidates[np.argsort(-(p * (1 - p)), kind="stable")[:n]])


def items_for_width(
    curves: ItemCurves, n_anchors: int, p_rest: np.ndarray, answered: int, width: float,
    level: float,
) -> int | None:  # fmt: skip
    """How many extra items (in all) bring the corrected interval's width to `width`.

    p_rest: the model's predicted correctness on the non-anchor items (their mean p(1-p)
    guesses s2). None when even every item would not (it cannot happen: all items give 0).
    """
    n_all = len(curves.items)
    n_rest = n_all - n_anchors
    s2 = max(float(np.mean(p_rest * (1 - p_rest))), MIN_RESIDUAL_VAR)
    for n in range(max(answered, 2), n_rest + 1):
        sd = n_rest / n_all * math.sqrt(max(0.0, 1 - n / n_rest) * s2 / n)
        if 2 * t_quantile(level, n - 1) * sd <= width:
            return n
    return n_rest if n_rest else None


def next_step(where: str, benchmark: str, n: int, goal: float, files: str, more: str,
              why: str, lm_eval_ids: bool = True) -> dict:  # fmt: skip
    """The commands that get `n` more items and use them: {n, width_points, anchors,
    export_lm_eval, predict, line}. where: `--anchor-set R --benchmark B ...`.

    lm_eval_ids: the benchmark's item ids are lm-eval doc ids (else no export is suggested:
    export_lm_eval is None and the line says why)."""
    get = f"sparseeval anchors {where} --next {n} --responses {files} --template {more}.csv"
    lm_eval = (
        f"sparseeval export-lm-eval {where} --next {n} --responses {files} --out {more}.json"
        if lm_eval_ids else None
    )  # fmt: skip
    other = (
        f"(or the lm-eval --samples JSON of them: {lm_eval})" if lm_eval
        else "(no lm-eval --samples JSON: this set's item ids are not lm-eval doc ids)"
    )  # fmt: skip
    use = f"sparseeval predict {where} --responses {files} {more}.csv"
    line = (
        f"more items would help ({why}): answer {n} more items of {benchmark} for an"
        f" interval about {goal:.1f} points wide:\n  {get}\n  {other}\nfill {more}.csv,"
        f" then: {use}"
    )
    return {"n": n, "width_points": goal, "anchors": get, "export_lm_eval": lm_eval,
            "predict": use, "line": line}  # fmt: skip


def z_quantile(p: float) -> float:
    """The standard normal quantile (bisection on erf; stdlib only)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def t_quantile(level: float, df: int) -> float:
    """Two-sided `level` quantile of Student's t (Cornish-Fisher in 1/df; df < 1 uses 1)."""
    z = z_quantile(1 - (1 - level) / 2)
    v = max(int(df), 1)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / v + g2 / v**2 + g3 / v**3


def positions(curves: ItemCurves, ids: Sequence[str]) -> np.ndarray:
    """Positions of `ids` in the curves' item list (CurvesError naming one that is not)."""
    index = {item: j for j, item in enumerate(curves.items)}
    missing = [i for i in ids if i not in index]
    if missing:
        raise CurvesError(f"{len(missing)} anchors are not among the set's items: {missing[0]!r}")
    return np.array([index[i] for i in ids], dtype=int)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
