"""More items for one model: which to answer next, and the anchor estimate they correct.

A set fit with item curves carries every item of its benchmark (`items/items.json`: ids and,
where known, lm-eval task, doc id and hash) and one logistic curve per item
(`items/curves.npz`): P(model answers item j) = sigmoid(a_j + b_j * theta), theta being the
model's ability, fitted on the training models with theta = logit of their accuracy.

The correction is a difference estimator. For a model with anchor estimate v, theta is the
ability at which the curves, with the anchors' own answers in place, average v over the
benchmark (v' when v is out of their reach). With E the n extra items it answered (not
anchors; taken as a simple random sample of the N_R non-anchor items of the N), the unbiased
value is

    u = v' + (N_R / N) * mean over E of (x_j - p_j)

It is unbiased over the draw of E whatever the curves and the anchor estimate are, with
sd = (N_R / N) * sqrt((1 - n / N_R) * s2 / n) (finite-population corrected; s2 the residuals'
sample variance pooled with the curves' own mean p(1 - p) as PRIOR_ITEMS residuals' worth):
it narrows as n grows and is 0 once every item is answered. Its error (over E) is independent
of the anchor estimate's, so the two are combined by their spreads (`combine`): the anchor
estimate's sA is its published interval's wider side over z (wider already where the pool
check flags the model or in the top edge's zone), and its error is taken as N(0, sA^2) or,
with prior probability OFF_POOL_FLAGGED where the set flags the model (OFF_POOL_ZONE in the
top edge's zone, OFF_POOL elsewhere), N(0, (OFF_SCALE * sA)^2): a model the anchors
misjudge. The reported value is the posterior mean of that two-part normal model, the
interval +- t(n - 1) times its posterior sd. On a model neither flagged nor in the zone it is
the precision-weighted mean of v and u; where the extra items say the anchors are off by more
than their spread, it moves to u. Measured per group (strongest decile, held-out
organisations, random models; bench/next_items.py, bench/RESULTS.md): with 30
random items, lower MAE than the anchors alone in every metabench group (29.6% lower on
average; GSM8K's strongest decile least, 2.36 to 2.29), 90% coverage 88.7-95.6% and mean
signed error within +-0.22 points; with 10, about the anchors' MAE (a little worse in 9 of
15 groups: the prior of being misjudged, which the strongest decile needs at 30, costs noise
while 10 items cannot yet tell). The default strategy of `next_items`
is random: u is unbiased only over a random draw; the informative items (those the model is
least sure of) are no random sample, and measured biased (TruthfulQA's strongest decile at
30: +3.35 points, 78.7% coverage).
It corrects the mean over the set's items, so a set applies it when that mean is its target
(`ItemCurves.item_mean`) or when its reported target is a straight line of that mean
(`ItemMap`: a leaderboard's `acc_norm` over every item of the benchmark, on whatever scale):
the anchor estimate is read on the items' scale, corrected there and mapped back. The mean
may weigh its items (`ItemCurves.weights`, averaging 1): a macro mean over subjects (MMLU's)
is the mean with each item weighted by its subject's size; the curves' average, the
residuals (w_j (x_j - p_j)) and their variance are then weighted alike, and the estimator
stays unbiased over a random draw of the extra items. Not for a reported score that is no
such function of these items (TruthfulQA's mc2, or a score over items the set does not list,
as metabench's reduced tables: their best line misses the leaderboard by 1.7-3.4 points RMS).
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
DEFAULT_STRATEGY = RANDOM  # measured: bench/next_items.py (bench/RESULTS.md)
MIN_RESIDUAL_VAR = 0.01  # s2 floor: a handful of residuals that agree say little about the rest
PRIOR_ITEMS = 10  # the curves' guess of s2 counts as this many residuals
# the anchor estimate's error: N(0, sA^2), or with prior probability OFF_POOL (OFF_POOL_ZONE
# in the set's top edge zone, OFF_POOL_FLAGGED where its pool check flags the model)
# N(0, (OFF_SCALE * sA)^2): measured in bench/next_items.py (bench/RESULTS.md;
# OFF_POOL_ZONE 0.3 left GSM8K's strongest decile at 2.39 with 30 items against the anchors'
# 2.36, 0.2 and 0.15 gave 2.29 and 2.25, every other group as good)
OFF_POOL, OFF_POOL_ZONE, OFF_POOL_FLAGGED, OFF_SCALE = 0.0, 0.2, 0.8, 4.0
# The largest RMS miss (0-1 scale) of a reported target read as a straight line of the items'
# mean (`ItemMap.usable`): a score computed from these items misses by rounding only.
MAP_TOL = 0.005


class CurvesError(SparseEvalError, ValueError):
    """Item curves that cannot serve (damaged, or not matching the set's anchors)."""


@dataclass(frozen=True)
class ItemMap:
    """A reported target as a straight line of the mean over the set's items, `a + b * mean`
    (least squares on the training models), which misses their targets by `rmse` (RMS)."""

    a: float
    b: float
    rmse: float

    @property
    def usable(self) -> bool:
        """Whether the target is that line (up to MAP_TOL), rising with the items' mean."""
        return self.b > 0 and self.rmse <= MAP_TOL

    def to_items(self, value: float) -> float:
        return (value - self.a) / self.b

    def on_target(self, c: Correction) -> Correction:
        """`c`, made on the items' mean, on the target's scale (the line's miss added to
        its standard errors)."""
        line = lambda v: self.a + self.b * v  # noqa: E731
        sd = lambda s: math.hypot(self.b * s, self.rmse)  # noqa: E731
        return replace(c, value=line(c.value), shift=self.b * c.shift, sd=sd(c.sd),
                       unbiased=line(c.unbiased), combined_sd=sd(c.combined_sd),
                       centre=line(c.centre))  # fmt: skip

    def to_dict(self) -> dict[str, float]:
        return {"a": self.a, "b": self.b, "rmse": self.rmse}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> ItemMap | None:
        if not isinstance(d, Mapping):
            return None
        try:
            return cls(float(d["a"]), float(d["b"]), float(d["rmse"]))
        except (KeyError, TypeError, ValueError):
            raise CurvesError(f"items.json: item_map is not {{a, b, rmse}}: {d!r:.80}") from None


IDENTITY = ItemMap(0.0, 1.0, 0.0)


@dataclass(frozen=True)
class ItemCurves:
    """Every item of a benchmark with its logistic curve against ability."""

    items: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    item_mean: bool = True  # the set's target is the mean over these items
    sources: Mapping[str, Any] | None = None
    item_map: ItemMap | None = None  # a reported target against the items' mean (fitted)
    # Per item, its weight in "the items' mean", averaging 1 (None: all 1): a reported macro
    # mean over groups of items (MMLU's over its subjects) weighs item j of group g by
    # n / (groups * size of g) (`method.item_curves.group_weights`)
    weights: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.items)
        a, b = np.asarray(self.a, float), np.asarray(self.b, float)
        if a.shape != (n,) or b.shape != (n,):
            raise CurvesError(f"curves have shapes {a.shape} and {b.shape}, expected ({n},)")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise CurvesError("curve parameters are not all finite")
        if len(set(self.items)) != n:
            raise CurvesError("an item is listed twice")
        w = self.weights
        if w is not None and (np.shape(w) != (n,) or not np.all(np.isfinite(w))
                              or np.any(np.asarray(w) <= 0)):  # fmt: skip
            raise CurvesError(f"item weights must be {n} positive numbers")

    @property
    def w(self) -> np.ndarray:
        """Each item's weight in the items' mean (all 1 without `weights`)."""
        return np.ones(len(self.items)) if self.weights is None else np.asarray(self.weights)

    @property
    def target_map(self) -> ItemMap | None:
        """How the set's target follows the items' mean: the identity for the mean itself,
        a usable `item_map`, else None (more items cannot correct the target)."""
        if self.item_mean:
            return IDENTITY
        return self.item_map if self.item_map is not None and self.item_map.usable else None

    def manifest_entry(self) -> dict[str, Any]:
        return {"folder": CURVES_DIR, "n_items": len(self.items), "item_mean": self.item_mean,
                "item_map": self.item_map and self.item_map.to_dict()}  # fmt: skip

    def save(self, folder: str | Path) -> list[Path]:
        """Write `items.json` and `curves.npz` (no pickles) into `folder`; the files."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"items": list(self.items), "item_mean": self.item_mean,
                "sources": dict(self.sources or {}),
                "item_map": self.item_map and self.item_map.to_dict()}  # fmt: skip
        (folder / ITEMS_FILE).write_text(json.dumps(meta))
        weights = {} if self.weights is None else {"w": np.asarray(self.weights, float)}
        np.savez(folder / CURVES_FILE, a=np.asarray(self.a, float), b=np.asarray(self.b, float),
                 **weights)  # fmt: skip
        return [folder / ITEMS_FILE, folder / CURVES_FILE]

    @classmethod
    def load(cls, folder: str | Path) -> ItemCurves:
        folder = Path(folder)
        try:
            meta = json.loads((folder / ITEMS_FILE).read_text())
            with np.load(folder / CURVES_FILE, allow_pickle=False) as npz:
                a, b = npz["a"], npz["b"]
                w = npz["w"] if "w" in npz.files else None
        except (OSError, ValueError, KeyError) as e:
            raise CurvesError(f"cannot read item curves ({e})") from None
        if not isinstance(meta, dict) or not isinstance(meta.get("items"), list):
            raise CurvesError("items.json has no list of items")
        line = ItemMap.from_dict(meta.get("item_map"))
        return cls(tuple(map(str, meta["items"])), a, b, bool(meta.get("item_mean", True)),
                   meta.get("sources") or None, line, w)  # fmt: skip

    def probabilities(self, theta) -> np.ndarray:
        """P(correct) per model (rows, one per theta) and item."""
        t = np.atleast_1d(np.asarray(theta, float))
        return _sigmoid(self.a[None, :] + self.b[None, :] * t[:, None])


@dataclass(frozen=True)
class Correction:
    """What the extra items did to one model's estimate."""

    value: float  # the combined estimate (the interval's centre)
    shift: float  # value - anchor estimate
    sd: float  # the unbiased value's standard error (sampling of the extra items)
    n_extra: int
    n_rest: int  # non-anchor items of the benchmark
    items: tuple[str, ...]  # the extra items used
    unbiased: float = float("nan")  # the difference estimator's value
    combined_sd: float = float("nan")  # the combined estimate's standard error (NaN: none)
    weight: float = 1.0  # the share of the extra items' mean residual in the combined value
    centre: float = float("nan")  # the interval's centre (NaN: `value`)

    def within(self, low: float, high: float) -> Correction:
        """The point moved into [low, high] (where the interval clipped it)."""
        point = min(max(self.value, low), high)
        centre = self.value if math.isnan(self.centre) else self.centre
        return replace(self, value=point, shift=self.shift + point - self.value, centre=centre)

    def interval(self, level: float) -> tuple[float, float]:
        """The combined value +- t(n - 1) * its sd (the unbiased value's where the anchor
        estimate's spread is unknown: `correct` without `anchor_sd`), clipped to 0-1."""
        if math.isnan(self.combined_sd):
            centre, h = self.unbiased, t_quantile(level, self.n_extra - 1) * self.sd
        else:
            centre = self.value if math.isnan(self.centre) else self.centre
            h = t_quantile(level, self.n_extra - 1) * self.combined_sd
        return max(0.0, centre - h), min(1.0, centre + h)

    def as_dict(self, anchors: tuple[float, float, float]) -> dict:
        """As `Estimate.correction` carries it; `anchors`: the anchor estimate, low, high."""
        return {"n_extra": self.n_extra, "n_rest": self.n_rest, "shift": self.shift,
                "sd": self.sd, "unbiased": self.unbiased, "combined_sd": self.combined_sd,
                "weight": self.weight, "anchor_estimate": list(anchors),
                "items": list(self.items)}  # fmt: skip


def abilities(curves: ItemCurves, known: np.ndarray, known01: np.ndarray, values) -> np.ndarray:
    """theta per model: the curves, with the known answers in place, average `values`.

    known: item positions answered (models share them); known01: (models, len(known)) 0/1.
    Bisection on a monotone function (slopes are >= 0); clipped to [-12, 12].
    """
    values = np.atleast_1d(np.asarray(values, float))
    rest = np.setdiff1d(np.arange(len(curves.items)), known)
    w = curves.w
    total = np.asarray(known01, float).reshape(len(values), -1) @ w[np.asarray(known, int)]
    n = len(curves.items)
    lo, hi = np.full(len(values), -12.0), np.full(len(values), 12.0)
    a, b = curves.a[rest], curves.b[rest]
    for _ in range(50):
        mid = (lo + hi) / 2
        mean = (total + _sigmoid(a[None, :] + b[None, :] * mid[:, None]) @ w[rest]) / n
        below = mean < values
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def anchor_spread(value, low, high, level: float):
    """The anchor estimate's spread (sd) from its published interval: the wider side over z
    (so wider off the pool, where the set flags the model or in the top edge's zone)."""
    v, lo, hi = (np.asarray(a, dtype=np.float64) for a in (value, low, high))
    return np.maximum(v - lo, hi - v) / z_quantile(1 - (1 - level) / 2)


def residual_variance(r: np.ndarray, p_rest: np.ndarray, w_rest=None) -> float:
    """s2 of the (weighted) residuals: their sample variance pooled with the curves' own
    guess (mean w^2 p(1 - p) over the rest, w the items' weights, 1 without) as PRIOR_ITEMS
    items' worth, at least MIN_RESIDUAL_VAR."""
    n = len(r)
    w2 = 1.0 if w_rest is None else np.asarray(w_rest, float) ** 2
    guess = float(np.mean(w2 * p_rest * (1 - p_rest))) if len(p_rest) else 0.25
    sample = float(r.var(ddof=1)) if n > 1 else guess
    pooled = ((n - 1) * sample + PRIOR_ITEMS * guess) / max(n - 1 + PRIOR_ITEMS, 1)
    return max(pooled, MIN_RESIDUAL_VAR)


def correct(
    curves: ItemCurves,
    anchors: np.ndarray,
    anchors01: np.ndarray,
    value: float,
    extra: np.ndarray,
    extra01: np.ndarray,
    anchor_sd: float | None = None,
    off_pool: float = 0.0,
) -> Correction:
    """The difference estimator of one model and its combination with the anchor estimate
    (module docstring): positions and 0/1 answers; anchor_sd: the anchor estimate's spread
    (None: unknown, the unbiased value alone); off_pool: the prior probability that the
    anchors misjudge this model (`misjudged`)."""
    n_all = len(curves.items)
    rest = np.setdiff1d(np.arange(n_all), anchors)
    n_rest, n = len(rest), len(extra)
    theta = abilities(curves, anchors, np.asarray(anchors01, float)[None, :], [value])[0]
    p, w = curves.probabilities(theta)[0], curves.w
    base = (float(np.asarray(anchors01, float) @ w[anchors]) + float(p[rest] @ w[rest])) / n_all
    r = w[extra] * (np.asarray(extra01, float) - p[extra])  # weighted residuals
    s2 = residual_variance(r, p[rest], w[rest])
    unbiased = min(1.0, max(0.0, base + n_rest / n_all * float(r.mean())))
    sd = n_rest / n_all * math.sqrt(max(0.0, 1 - n / n_rest) * s2 / n)
    items = tuple(curves.items[j] for j in extra)
    if anchor_sd is None:
        return Correction(unbiased, unbiased - value, sd, n, n_rest, items, unbiased)
    centre, spread, weight = combine(value, float(anchor_sd), unbiased, sd, off_pool)
    point = min(1.0, max(0.0, centre))
    return Correction(point, point - value, sd, n, n_rest, items, unbiased, spread, weight,
                      centre)  # fmt: skip


def misjudged(flagged, in_zone):
    """The prior probability that the anchors misjudge a model (`combine`): OFF_POOL_FLAGGED
    where the set's pool check flags it, else OFF_POOL_ZONE in the top edge's zone, else
    OFF_POOL."""
    zone = np.where(in_zone, OFF_POOL_ZONE, OFF_POOL)
    return np.where(flagged, OFF_POOL_FLAGGED, zone)


def combine(
    value: float, anchor_sd: float, unbiased: float, sd: float, off_pool: float = 0.0
) -> tuple[float, float, float]:
    """(centre, sd, weight of the unbiased value) of the anchor estimate and the unbiased
    value combined: the anchor estimate's error is N(0, anchor_sd^2), or with prior
    probability OFF_POOL N(0, (OFF_SCALE * anchor_sd)^2) (a model the anchors misjudge),
    the unbiased value's N(0, sd^2) and independent of it (over the draw of the items)."""
    shift = unbiased - value
    var = np.array([1.0, OFF_SCALE**2]) * max(anchor_sd, 1e-6) ** 2
    total = var + sd * sd
    prior = np.array([1 - off_pool, off_pool])
    like = prior * np.exp(-0.5 * shift * shift / total) / np.sqrt(total)
    q = like / like.sum() if like.sum() > 0 else np.array([0.0, 1.0])
    w = var / total
    means = value + w * shift
    centre = float(q @ means)
    spread = math.sqrt(max(float(q @ (w * sd * sd + means * means)) - centre * centre, 0.0))
    weight = float(q @ w)
    return centre, spread, weight


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
    level: float, w_rest=None,
) -> int | None:  # fmt: skip
    """How many extra items (in all) bring the unbiased value's interval to `width` (the
    combined interval is no wider on a familiar model, so this is enough there).

    p_rest: the model's predicted correctness on the non-anchor items (their mean
    w^2 p(1-p) guesses s2; w_rest: their weights, 1 without). None when even every item
    would not (it cannot happen: all items give 0).
    """
    n_all = len(curves.items)
    n_rest = n_all - n_anchors
    w2 = 1.0 if w_rest is None else np.asarray(w_rest, float) ** 2
    s2 = max(float(np.mean(w2 * p_rest * (1 - p_rest))), MIN_RESIDUAL_VAR)
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


__all__ = [
    "CURVES_DIR",
    "CURVES_FILE",
    "DEFAULT_STRATEGY",
    "IDENTITY",
    "ITEMS_FILE",
    "KEY",
    "MAP_TOL",
    "MIN_RESIDUAL_VAR",
    "PRIOR_ITEMS",
    "STRATEGIES",
    "Correction",
    "CurvesError",
    "ItemCurves",
    "ItemMap",
    "abilities",
    "anchor_spread",
    "choose",
    "combine",
    "correct",
    "items_for_width",
    "misjudged",
    "next_step",
    "positions",
    "residual_variance",
    "t_quantile",
    "z_quantile",
]
