"""Is a model inside what an anchor set was fit on? The fitted pool check (pure NumPy).

A published set stores a `PoolCheck` in its manifest (key `pool_check`; sets published
before it give no flags). For one model it says, in one line per reason, why its estimate
deserves less trust than the interval's calibration models':

* `range`: the estimate lies beyond the range of the training models' estimates
  (`low`-`high`: all but a small share at each end, plus `margin`);
* `pattern`: its answers on the anchors are unlikely under the training models. Each
  anchor i has a logistic curve P(correct) = sigmoid(a_i + b_i * logit(estimate)) fitted
  on the training models; the person-fit statistic l_z (Drasgow et al. 1985) standardizes
  the log-likelihood of the model's answers under those curves given its own estimate,
  and a model is flagged when l_z falls below `threshold`, the `rate` quantile of l_z over
  the training and calibration models (about `rate` of models like the pool are flagged).

* `saturation` (`Saturation`): an estimate the pool's strongest models also get, or every
  anchor right (wrong) but one: at the top (bottom) of what these anchors can tell; and,
  whatever the estimate, answers as likely from the pool's strongest models as from a model
  of its estimate (`PoolCheck.like_top`): a model that may be stronger than it is read.

An estimate beyond the range gets its half-width times `widen` on the outer side (the factor
measured on held-out groups of real models, `bench/newcomers.py --cache`); a saturated estimate
opens the upper end to the scale's top (every anchor wrong: the lower to the worst score).
An unlikely answer pattern, or one like the pool's strongest models', is said, not widened:
the interval's ends are non-decreasing functions of the estimate (`monotone_ends`), so that
with a monotone reader no answer turned right lowers either end, and a widening that comes
and goes with single answers would break that.

The top edge (`Edge`, key `edges`; sets without it widen nothing here): a predictor shrinks
toward the middle of its pool, so a model stronger than every training model gets an estimate
near the top of the training models' estimates, not beyond them, and is missed there without
a flag. At fit time the final predictor is refitted without the pool's top share of models by
target and reads them (`method.pool.fit_edge`): how far their truths lay from its estimates on
each side (`down`, `up`: the level's conformal quantile of each side's miss) where it reads
its own pool's top share; in a published set that zone is the estimates above `start`, the
same share of the pool's estimates. An estimate in the zone gets at least those half-widths,
the upper one growing across the zone (`near` at `start` to `up` at `full`): misses grow
with how far above the pool a model lies, and the pool's own top models sit low in the zone.
A suite's readers (average, joint, own) get the same check and edge (`method.pool`).

One interval: `interval_of` is the interval a model gets (conformal, beyond the range, the
top edge, saturation; monotone), for `AnchorSet.predict` and `intervals`, the gate's
coverage check and every coverage figure of the report alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from sparseeval.consume.scoring.conformal import inside
from sparseeval.consume.sets.layout import AnchorSetError

KEY = "pool_check"  # the manifest key
CLIP = 0.01  # estimates are clipped to [CLIP, 1 - CLIP] before the logit, and so are the
# curves' probabilities: one surprising answer costs at most log(CLIP) (a robust l_z)
# A suite estimate whose readers disagree is flagged, not widened (1: no widening): a widening
# that comes and goes with one answer would make the interval's ends fall when it turns right.
DISAGREE_WIDEN = 1.0
# The start of the flag lines of a model where the anchors stop telling (`Saturation.reason`).
SATURATED_TOP = "at the top of what these anchors can tell"
SATURATED_BOTTOM = "at the bottom of what these anchors can tell"
SATURATED = (SATURATED_TOP, SATURATED_BOTTOM)
# Estimates are float32 sums: the same answers read alone or in a batch differ by ~1e-7, and
# many models (all answers right) sit exactly on the range's end or the edge's start. Within
# TOL of a cut an estimate counts as inside the range and inside the edge's zone, so `predict`
# and `intervals` (and the fit's saved flags) never disagree on such a model.
TOL = 1e-6


def logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), CLIP, 1 - CLIP)
    return np.log(p / (1 - p))


def _curves(values, a, b) -> np.ndarray:
    """P(right) per model (rows, at its estimate) and anchor under the curves (a, b)."""
    eta = np.asarray(a)[None, :] + np.asarray(b)[None, :] * logit(np.atleast_1d(values))[:, None]
    return np.clip(np.exp(-np.logaddexp(0.0, -eta)), CLIP, 1 - CLIP)


def _loglik(X, p) -> np.ndarray:
    """Per row of X (+-1 answers, graded 2*score - 1, NaN = not answered), the log-likelihood
    of its answered anchors under P(right) = p (clipped as the curves are)."""
    p = np.clip(p, CLIP, 1 - CLIP)
    score = (X + 1) / 2
    return np.where(np.isnan(X), 0.0, score * np.log(p) + (1 - score) * np.log1p(-p)).sum(1)


def person_fit(X, values, a, b) -> np.ndarray:
    """l_z of each row of a +-1 answer matrix (NaN = not answered) given its estimates.

    A graded answer (2*score - 1) counts as the score's share of a right answer: its
    observed log-likelihood is score * log p + (1 - score) * log q (a binary answer's is
    log p or log q, as before). Rows with no answered anchor, or no spread in the expected
    log-likelihood, get 0.
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    p = _curves(values, a, b)
    log_p, log_q, seen = np.log(p), np.log1p(-p), ~np.isnan(X)
    expected = p * log_p + (1 - p) * log_q
    variance = p * (1 - p) * (log_p - log_q) ** 2
    num = _loglik(X, p) - np.where(seen, expected, 0.0).sum(1)
    var = np.where(seen, variance, 0.0).sum(1)
    return np.where(var > 0, num / np.sqrt(np.maximum(var, 1e-300)), 0.0)


@dataclass(frozen=True)
class Edge:
    """One edge of the pool: estimates beyond `start` (above for the top, below for the bottom)
    get at least `down` below and, above, `near` at `start` growing to `up` at `full` (and
    beyond it; accuracy, 0-1). Sets written before the ramp have neither: `up` throughout."""

    start: float
    down: float
    up: float
    n_models: int = 0
    near: float | None = None  # the upper side at `start` (None: `up`)
    full: float | None = None  # where the upper side reaches `up` (None: at `start`)

    def upper(self, values) -> np.ndarray:
        """The least upper half-width per estimate inside the zone (`values` >= `start`)."""
        v = np.asarray(values, dtype=np.float64)
        if self.near is None or self.full is None or self.full <= self.start:
            return np.full(v.shape, self.up)
        ramp = np.clip((v - self.start) / (self.full - self.start), 0.0, 1.0)
        return self.near + (self.up - self.near) * ramp

    def to_dict(self) -> dict:
        ramp = {} if self.near is None else {"near": self.near, "full": self.full}
        return {"start": self.start, "down": self.down, "up": self.up,
                "n_models": self.n_models} | ramp  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> Edge:
        near, full = d.get("near"), d.get("full")
        return cls(float(d["start"]), float(d["down"]), float(d["up"]), int(d.get("n_models", 0)),
                   None if near is None else float(near),
                   None if full is None else float(full))  # fmt: skip


@dataclass(frozen=True)
class Saturation:
    """Where the anchors stop telling models apart (accuracy, 0-1). At or above `top` an
    estimate is one the pool's strongest models also get (or every anchor right but one):
    flagged and said; at or above `peak` the interval's upper end opens to `ceiling` (sets
    from `method.pool.fit_saturation`: the zone's start and the scale's top; older sets:
    every anchor right and the best training score). `bottom`: every anchor wrong but one;
    at `trough` (every anchor wrong) the lower end opens to `floor`, the worst training
    score. `rates`: the share of the pool's strongest models right on each anchor, the
    profile of `PoolCheck.like_top` (None in sets before it). Sets without it flag and open
    nothing."""

    top: float
    peak: float
    bottom: float
    trough: float
    ceiling: float
    floor: float
    best: float  # the best and worst training scores
    worst: float
    rates: tuple[float, ...] | None = None

    def at_top(self, values) -> np.ndarray:
        return np.asarray(values, dtype=np.float64) >= self.top - TOL

    def at_bottom(self, values) -> np.ndarray:
        return np.asarray(values, dtype=np.float64) <= self.bottom + TOL

    def opened(self, values, low, high) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) opened to `floor` / `ceiling` at the `trough` / the `peak`."""
        v = np.asarray(values, dtype=np.float64)
        high = np.where(v >= self.peak - TOL, np.maximum(high, self.ceiling), high)
        return np.where(v <= self.trough + TOL, np.minimum(low, self.floor), low), high

    def reason(self, value: float, like_top: bool = False) -> str | None:
        """The line saying the model sits where the anchors stop telling, or None;
        `like_top`: its answers are as likely from the pool's strongest models as from a model
        of its estimate (`PoolCheck.like_top`), said where the estimate is below the zone."""
        pct = lambda a: f"{100 * a:.1f}%"  # noqa: E731
        if like_top and not self.at_top(value):
            return (f"{SATURATED_TOP}: its answers on the anchors are as likely from the pool's"
                    f" strongest models (scores up to {pct(self.best)}) as from a model of its"
                    " estimate; it may be stronger than the estimate and its interval say. More"
                    " items, or a set fit on stronger models, would tell")  # fmt: skip
        if self.at_top(value):
            opens = (f"; the upper end opens to {pct(self.ceiling)}" if value >= self.peak - TOL
                     else "")  # fmt: skip
            return (f"{SATURATED_TOP}: the pool's strongest models (scores up to"
                    f" {pct(self.best)}) answer its anchors as this model does, and so would a"
                    f" stronger one{opens}. More items, or a set fit on stronger models, would"
                    " narrow it")  # fmt: skip
        if self.at_bottom(value):
            opens = (f"; the lower end opens to {pct(self.floor)}" if value <= self.trough + TOL
                     else "")  # fmt: skip
            return (f"{SATURATED_BOTTOM}: every anchor wrong or all but one, where the training"
                    f" models' scores reach down to {pct(self.worst)}{opens}. More items, or a"
                    " set fit on weaker models, would narrow it")  # fmt: skip
        return None

    def to_dict(self) -> dict:
        rates = {} if self.rates is None else {"rates": list(self.rates)}
        return {k: getattr(self, k) for k in _SATURATION_KEYS} | rates

    @classmethod
    def from_dict(cls, d: dict) -> Saturation:
        rates = d.get("rates")
        return cls(**{k: float(d[k]) for k in _SATURATION_KEYS},
                   rates=None if rates is None else tuple(map(float, rates)))  # fmt: skip


_SATURATION_KEYS = ("top", "peak", "bottom", "trough", "ceiling", "floor", "best", "worst")


@dataclass(frozen=True)
class PoolCheck:
    """The fitted check of one set's anchors: score range, answer-pattern threshold, widening."""

    low: float
    high: float
    margin: float
    a: tuple[float, ...]
    b: tuple[float, ...]
    threshold: float
    rate: float
    widen: float
    n_models: int = 0
    top: Edge | None = None  # fitted on the held-out top of the pool (None: no edge widening)
    saturation: Saturation | None = None  # where the anchors stop telling (None: not fitted)

    def lz(self, X, values) -> np.ndarray:
        """Person-fit l_z of each row of X (models x anchors, +-1, NaN = not answered)."""
        return person_fit(X, values, self.a, self.b)

    def like_top(self, X, values) -> np.ndarray:
        """Per row of X (+-1, NaN = not answered): its answers at least as likely under the
        pool's strongest models' right rates (`Saturation.rates`) as under the curves at its
        own estimate: an answer pattern the pool's top models share, whatever the estimate
        (all False in sets without the rates)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        sat = self.saturation
        if sat is None or sat.rates is None:
            return np.zeros(len(X), dtype=bool)
        top = _loglik(X, np.asarray(sat.rates)[None, :])
        return top >= _loglik(X, _curves(values, self.a, self.b))

    def out_of_range(self, values) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        return (v < self.low - self.margin - TOL) | (v > self.high + self.margin + TOL)

    def flagged(self, X, values) -> np.ndarray:
        """Boolean per row: out of range or unlikely answer pattern."""
        return self.out_of_range(values) | (self.lz(X, values) < self.threshold)

    def widening(self, X, values, halfwidth) -> np.ndarray:
        """Per row, `(widen - 1) * halfwidth` when flagged (any reason), else 0: the widening
        sets gave flagged models on both sides before the interval became monotone
        (`interval_of` now widens only beyond the range, outward); `bench/flag_eval.py`
        weighs it."""
        return self.widen_where(self.flagged(X, values), halfwidth)

    def widen_where(self, flagged, halfwidth) -> np.ndarray:
        """`(widen - 1) * halfwidth` where `flagged`, else 0 (per estimate)."""
        extra = (self.widen - 1.0) * np.asarray(halfwidth, dtype=np.float64)
        return np.where(np.asarray(flagged, dtype=bool), extra, 0.0)

    def at_edges(self, values, halfwidth) -> tuple[np.ndarray, np.ndarray]:
        """Per estimate, its interval's half-widths (below, above): `halfwidth` (widened
        already where flagged), at least the top edge's `down` / `upper` inside its zone."""
        v = np.atleast_1d(np.asarray(values, dtype=np.float64))
        h = np.broadcast_to(np.asarray(halfwidth, dtype=np.float64), v.shape)
        if self.top is None:
            return h.copy(), h.copy()
        zone = v >= self.top.start - TOL
        return (np.where(zone, np.maximum(h, self.top.down), h),
                np.where(zone, np.maximum(h, self.top.upper(v)), h))  # fmt: skip

    def reasons(self, x, value: float) -> tuple[str, ...]:
        """One human line per reason this model (one +-1 vector) is unlike the pool."""
        out = []
        if self.out_of_range(value):
            side = "above" if value > self.high else "below"
            out.append(
                f"estimate {100 * value:.1f}% is {side} the range of the training models'"
                f" own estimates ({100 * self.low:.1f}-{100 * self.high:.1f}%)"
            )
        said = None
        if self.saturation is not None:
            like = bool(self.like_top(np.asarray(x, dtype=np.float64)[None, :], [value])[0])
            said = self.saturation.reason(value, like)
        out += [] if said is None else [said]
        lz = float(self.lz(np.asarray(x, dtype=np.float64)[None, :], [value])[0])
        if lz < self.threshold:
            out.append(
                f"answer pattern unlike the training models' (person-fit {lz:.1f}, below "
                f"{self.threshold:.1f}, which flags {self.rate:.0%} of the models it was fit on)"
            )
        return tuple(out)

    def to_dict(self) -> dict:
        out = {
            "method": "score range + person-fit l_z under per-anchor logistic curves",
            "low": self.low, "high": self.high, "margin": self.margin,
            "a": list(self.a), "b": list(self.b), "threshold": self.threshold,
            "rate": self.rate, "widen": self.widen, "n_models": self.n_models,
        }  # fmt: skip
        out |= {"edges": {"top": self.top.to_dict()}} if self.top else {}
        return out | ({"saturation": self.saturation.to_dict()} if self.saturation else {})

    @classmethod
    def from_dict(cls, d: dict) -> PoolCheck:
        floats = {k: float(d[k]) for k in ("low", "high", "margin", "threshold", "rate", "widen")}
        a, b = (tuple(float(v) for v in d[k]) for k in ("a", "b"))
        if len(a) != len(b):
            raise AnchorSetError(f"pool check has {len(a)} intercepts and {len(b)} slopes")
        top, sat = (d.get("edges") or {}).get("top"), d.get("saturation")
        return cls(**floats, a=a, b=b, n_models=int(d.get("n_models", 0)),
                   top=Edge.from_dict(top) if top else None,
                   saturation=Saturation.from_dict(sat) if sat else None)  # fmt: skip


def bounds(check: PoolCheck | None, conformal, X, values, extra=0.0):
    """(low, high, widening) per row of X (+-1 anchor answers, NaN = not answered) and its
    estimate: `interval_of` (the answers' flags are said, in `PoolCheck.reasons`; the
    interval follows the estimate alone)."""
    return interval_of(check, conformal, values, extra=extra)


def interval_of(check: PoolCheck | None, conformal, values, flagged=None, extra=0.0):
    """The interval a model gets, in one place (`AnchorSet.predict` and `intervals`, the gate's
    coverage check and the report): (low, high, widening) per estimate, each end a
    non-decreasing function of the estimate (`monotone_ends`), so that with a monotone
    reader no answer turned right lowers either end. `extra` (missing anchors) widens each
    side after. `flagged` (saved answer-pattern flags) no longer widens: a widening that comes
    and goes with one answer would make the ends fall when an answer turns right; the flag
    is said instead. `widening`: how far the wider side reaches beyond the conformal
    half-width (range, top edge, saturation), per estimate."""
    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    low, high = monotone_ends(check, conformal, v)
    h = np.asarray(conformal.halfwidths(v), dtype=np.float64)
    finite, widen = np.isfinite(h), np.zeros(v.shape)  # an unbounded interval widens nothing
    reach = np.maximum(v - low, high - v)
    widen[finite] = np.maximum(reach[finite] - h[finite], 0.0)
    extra = np.asarray(extra, dtype=np.float64)
    return np.clip(low - extra, 0.0, 1.0), np.clip(high + extra, 0.0, 1.0), widen


GRID = 10_001  # points of [0, 1] on which the ends are made monotone (1e-4 apart)


def monotone_ends(check: PoolCheck | None, conformal, values) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per estimate, both non-decreasing in the estimate: the raw ends (`_raw_ends`:
    conformal, widened beyond the range, the top edge, saturation) made monotone on a grid
    of estimates, each side toward the wider: low(v) = min of the raw low over estimates
    >= v, high(v) = max of the raw high over estimates <= v (interpolated between points;
    the grid holds every cut, so the steps are kept)."""
    grid, low, high = _envelope(check, conformal)
    v = np.asarray(values, dtype=np.float64)
    return np.interp(v, grid, low), np.interp(v, grid, high)


@lru_cache(maxsize=64)
def _envelope(check: PoolCheck | None, conformal) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cuts = [*getattr(conformal, "edges", ())]
    if check is not None:
        cuts += [check.low - check.margin, check.high + check.margin]
        cuts += [] if check.top is None else [check.top.start, check.top.full or 0.0]
        cuts += [] if check.saturation is None else [check.saturation.peak,
                                                     check.saturation.trough]  # fmt: skip
    cuts = np.asarray(cuts, dtype=np.float64)
    grid = np.union1d(np.linspace(0.0, 1.0, GRID), np.clip(np.r_[cuts, cuts - 2 * TOL], 0, 1))
    low, high = _raw_ends(check, conformal, grid)
    return grid, np.minimum.accumulate(low[::-1])[::-1], np.maximum.accumulate(high)


def _raw_ends(check: PoolCheck | None, conformal, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ends before they are made monotone: `v` -+ the conformal half-width, times `widen`
    on the outer side beyond the range (on both, the envelope would carry the inner side's
    step into the crowded top of the pool: ARC's random models' mean width 6.95 -> 7.52
    points, `bench/above_pool.py`), at least the top edge's in its zone, opened where
    saturated."""
    h = np.asarray(conformal.halfwidths(v), dtype=np.float64)
    if check is None:
        return v - h, v + h
    extra = check.widen_where(check.out_of_range(v), h)
    above = v > check.high + check.margin
    down, _ = check.at_edges(v, h + np.where(above, 0.0, extra))
    _, up = check.at_edges(v, h + np.where(above, extra, 0.0))
    low, high = v - down, v + up
    if check.saturation is not None:
        low, high = check.saturation.opened(v, low, high)
    return low, high


def in_top_zone(check: PoolCheck | None, values) -> np.ndarray:
    """Per estimate: inside `check`'s top edge zone (all False without a check or an edge)."""
    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if check is None or check.top is None:
        return np.zeros(v.shape, dtype=bool)
    return v >= check.top.start - TOL


def covered(check: PoolCheck | None, conformal, values, true, flagged=None) -> np.ndarray:
    """Per estimate, whether `true` lies inside its interval (`interval_of`, same arguments)."""
    low, high, _ = interval_of(check, conformal, values, flagged)
    return inside(low, high, np.atleast_1d(np.asarray(true, dtype=np.float64)))


def pool_check_of(manifest: dict, n_anchors: int) -> PoolCheck | None:
    """The manifest's pool check, or None (older sets, or one not matching the anchors)."""
    d = manifest.get(KEY)
    if not d:
        return None
    check = PoolCheck.from_dict(d)
    if len(check.a) != n_anchors:
        raise AnchorSetError(f"pool check covers {len(check.a)} anchors, the set has {n_anchors}")
    return check


def disagreement(joint, own) -> str | None:
    """A line when the suite's joint and own estimates (`Estimate`s) have disjoint intervals."""
    if joint.low <= own.high and own.low <= joint.high:
        return None
    span = lambda e: f"{100 * e.value:.1f}%, {100 * e.low:.1f}-{100 * e.high:.1f}%"  # noqa: E731
    return (
        f"{own.benchmark}: the suite's joint reader ({span(joint)}) and {own.benchmark}'s own "
        f"reader ({span(own)}) disagree beyond their intervals"
    )


def widened(estimate, reasons: tuple[str, ...], halfwidth: float, widen: float = DISAGREE_WIDEN):
    """`estimate` (an `Estimate`) with `reasons` added to its flags; an estimate not flagged
    before also gets each side widened by `(widen - 1) * halfwidth` (one widening only)."""
    if not reasons:
        return estimate
    extra = 0.0 if estimate.flags else (widen - 1.0) * halfwidth
    return replace(
        estimate, low=max(0.0, estimate.low - extra), high=min(1.0, estimate.high + extra),
        flags=(*estimate.flags, *reasons),
    )  # fmt: skip


__all__ = [
    "KEY",
    "SATURATED",
    "Edge",
    "PoolCheck",
    "Saturation",
    "bounds",
    "covered",
    "disagreement",
    "in_top_zone",
    "interval_of",
    "logit",
    "monotone_ends",
    "person_fit",
    "pool_check_of",
    "widened",
]
