"""Split-conformal prediction intervals for estimated accuracies (pure NumPy).

The calibration set is the calibration models that the pipeline sets aside from
the training share (`n_calib`): no selection or fitting step saw them, so their
residuals `r = pred - true` are honest. For a new model, the interval
`[pred - q, pred + q]` (clipped to [0, 1]) with `q` the ceil((n+1) * level)-th
smallest |r| covers the true accuracy with probability >= `level` when the new
model is exchangeable with the calibration models (the classic split-conformal
guarantee; see Lei et al. 2018, "Distribution-free predictive inference").

When there are too few training models to set any aside, the validation residuals
stand in; those models also chose the anchors and the predictor, so they are
optimistic. Every report shows the empirical coverage on the test models, which
took no part in any choice (`bench/coverage.py` measures it on real data).

Adaptive width (`ConformalInterval.fit(residuals, level, pred=...)`): the size of the
error depends on the estimate (on metabench's GSM8K, middling estimates miss by twice as
much as low ones), so one width over-covers some models and under-covers others. The
calibration residuals are normalized by a spread `sigma(pred)`, a quadratic in the
estimate fitted to the calibration models' |r| (floored at SCALE_FLOOR x their mean |r|,
the estimate clipped to the calibration range), and the calibration models are split into
bands of their estimate (equal counts, at least BAND_MODELS each, at most MAX_BANDS); in
each band `q_b` is the conformal quantile of |r| / sigma(pred), and the interval is
`pred +- q_b * sigma(pred)` for the band `pred` falls in. Within a band this is
split-conformal on the normalized residuals (Mondrian conformal, Vovk et al. 2005;
normalized residuals, Lei et al. 2018 section 5.2), so each band is covered at the level;
sigma has three parameters fitted on the same residuals, so that guarantee is approximate
(measured in `bench/coverage.py`). With fewer than MIN_ADAPTIVE calibration models the
width stays constant.

For two models A and B, the error of the estimated difference is `r_A - r_B`.
`difference_halfwidth` calibrates it on all pairs of calibration models; that
half-width is also the smallest difference the anchor set can resolve at the
level (a difference larger than it has an interval that excludes zero). Pairs
share models, so this is an approximate (U-statistic) calibration, not an exact
conformal guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from sparseeval.consume.errors import SettingsError, SparseEvalError

MAX_PAIR_MODELS = 2000
MIN_ADAPTIVE = 50  # fewer calibration models: one constant width
BAND_MODELS = 60  # calibration models per band of the estimate, at least
MAX_BANDS = 3
SCALE_FLOOR = 0.3  # sigma(pred) >= SCALE_FLOOR x mean |r|
CONSTANT = "split-conformal (absolute residuals of held-out calibration models)"
ADAPTIVE = (
    "split-conformal by band of the estimate (Mondrian): per band of the held-out"
    " calibration models' estimates, the conformal quantile of their absolute residuals"
    " divided by a quadratic fit of the residuals' size against the estimate"
)


class CalibrationError(SparseEvalError, ValueError):
    """Too few calibration residuals for an interval (more models, or a larger n_calib)."""


def conformal_quantile(scores, level: float) -> float:
    """The ceil((n+1) * level)-th smallest score; inf when n is too small for `level`."""
    _check_level(level)
    s = np.sort(np.abs(np.asarray(scores, dtype=np.float64).ravel()))
    s = s[np.isfinite(s)]
    n = s.size
    if n == 0:
        raise CalibrationError("conformal calibration needs at least one finite residual")
    k = math.ceil((n + 1) * level)
    return float("inf") if k > n else float(s[k - 1])


def difference_halfwidth(residuals, level: float, seed: int = 0) -> float:
    """Half-width of a `level` interval for the difference of two models' estimates.

    The conformal quantile of |r_i - r_j| over all pairs i < j of calibration
    residuals, with the finite-sample correction taken on the number of models.
    Above MAX_PAIR_MODELS residuals a seeded subsample is used.
    """
    _check_level(level)
    r = np.asarray(residuals, dtype=np.float64).ravel()
    r = r[np.isfinite(r)]
    if r.size < 2:
        raise CalibrationError("a difference interval needs at least two calibration residuals")
    if r.size > MAX_PAIR_MODELS:
        r = np.random.default_rng(seed).choice(r, MAX_PAIR_MODELS, replace=False)
    n = r.size
    i, j = np.triu_indices(n, k=1)
    diffs = np.abs(r[i] - r[j])
    adjusted = math.ceil((n + 1) * level) / n
    if adjusted > 1:
        return float("inf")
    return float(np.quantile(diffs, adjusted, method="higher"))


def inside(low, high, true) -> np.ndarray:
    """Per value, whether `true` lies inside [low, high] (to 1e-12)."""
    low, high, true = (np.asarray(a, dtype=np.float64) for a in (low, high, true))
    return (true >= low - 1e-12) & (true <= high + 1e-12)


def empirical_coverage(low, high, true) -> float:
    """Share of `true` values inside [low, high]."""
    return float(np.mean(inside(low, high, true)))


@dataclass(frozen=True)
class Spread:
    """sigma(p) = max(c0 + c1 p + c2 p^2, floor), with p clipped to [low, high]."""

    coef: tuple[float, float, float]
    floor: float
    low: float
    high: float

    @classmethod
    def fit(cls, pred, residuals) -> Spread:
        """Least-squares quadratic of |r| against the estimate, over the calibration range."""
        p, a = np.asarray(pred, dtype=np.float64), np.abs(np.asarray(residuals, dtype=np.float64))
        coef = np.linalg.lstsq(np.vander(p, 3, increasing=True), a, rcond=None)[0]
        floor = max(SCALE_FLOOR * float(a.mean()), 1e-9)
        return cls(tuple(float(c) for c in coef), floor, float(p.min()), float(p.max()))

    def __call__(self, pred) -> np.ndarray:
        p = np.clip(np.asarray(pred, dtype=np.float64), self.low, self.high)
        c0, c1, c2 = self.coef
        return np.maximum(c0 + c1 * p + c2 * p * p, self.floor)

    def to_dict(self) -> dict:
        return {"coef": list(self.coef), "floor": self.floor, "low": self.low, "high": self.high}

    @classmethod
    def from_dict(cls, d: dict) -> Spread:
        coef = tuple(float(c) for c in d["coef"])
        return cls(coef, float(d["floor"]), float(d["low"]), float(d["high"]))  # type: ignore[arg-type]


@dataclass(frozen=True)
class ConformalInterval:
    """A fitted split-conformal interval: `pred +- halfwidths(pred)`, clipped to [0, 1].

    `halfwidth` is the constant half-width (the conformal quantile of |r|); with a
    `spread` the half-width is `quantiles[b] * spread(pred)` instead, `b` the band of
    `pred` between the cut points `edges`. `diff_halfwidth` is the
    half-width for the difference of two models' estimates (and the smallest resolvable
    difference at `level`).
    """

    level: float
    halfwidth: float
    diff_halfwidth: float
    n_calibration: int
    method: str = CONSTANT
    spread: Spread | None = None
    edges: tuple[float, ...] = ()  # cut points between bands of the estimate
    quantiles: tuple[float, ...] = ()  # per band, of |r| / spread(pred)

    @classmethod
    def fit(cls, residuals, level: float = 0.9, pred=None) -> ConformalInterval:
        """From calibration residuals (estimate - truth) and, for an adaptive width, their
        estimates `pred` (at least MIN_ADAPTIVE models; otherwise the width is constant)."""
        r = np.asarray(residuals, dtype=np.float64).ravel()
        keep = np.isfinite(r)
        q = conformal_quantile(r[keep], level)
        qd = difference_halfwidth(r[keep], level) if keep.sum() >= 2 else float("inf")
        fitted = cls(float(level), q, qd, int(keep.sum()))
        if pred is None or keep.sum() < MIN_ADAPTIVE:
            return fitted
        p = np.asarray(pred, dtype=np.float64).ravel()
        if p.shape != r.shape:
            raise ValueError(f"{p.size} calibration estimates for {r.size} residuals")
        keep &= np.isfinite(p)
        p, r = p[keep], r[keep]
        spread = Spread.fit(p, r)
        n_bands = min(MAX_BANDS, max(1, p.size // BAND_MODELS))
        edges = tuple(float(e) for e in np.quantile(p, np.arange(1, n_bands) / n_bands))
        band, scaled = np.digitize(p, edges), r / spread(p)
        qs = tuple(conformal_quantile(scaled[band == b], level) for b in range(n_bands))
        return replace(fitted, method=ADAPTIVE, spread=spread, edges=edges, quantiles=qs)

    @property
    def adaptive(self) -> bool:
        return self.spread is not None

    def halfwidths(self, pred) -> np.ndarray:
        """The half-width of the interval at each estimate (before `extra` and clipping)."""
        p = np.asarray(pred, dtype=np.float64)
        if self.spread is None:
            return np.full(p.shape, self.halfwidth)
        return np.asarray(self.quantiles)[np.digitize(p, self.edges)] * self.spread(p)

    def widened(self, residuals, pred) -> ConformalInterval:
        """At least as wide, and nominal on these models too: each quantile the larger of its
        own and the one these residuals (at estimates `pred`) give over all bands; the
        spread and the bands are kept."""
        r = np.asarray(residuals, dtype=np.float64).ravel()
        q = max(self.halfwidth, conformal_quantile(r, self.level))
        if self.spread is None:
            return replace(self, halfwidth=q)
        scaled = r / self.spread(np.asarray(pred, dtype=np.float64).ravel())
        new = conformal_quantile(scaled, self.level)
        return replace(self, halfwidth=q, quantiles=tuple(max(qb, new) for qb in self.quantiles))

    def interval(self, pred, extra=0.0):
        """(low, high) for one prediction or an array; `extra` widens each side."""
        p = np.asarray(pred, dtype=np.float64)
        h = self.halfwidths(p) + np.asarray(extra, dtype=np.float64)
        low, high = np.clip(p - h, 0.0, 1.0), np.clip(p + h, 0.0, 1.0)
        if p.ndim == 0:
            return float(low), float(high)
        return low, high

    def difference(self, pred_a: float, pred_b: float, extra: float = 0.0):
        """(difference, low, high) of a - b, clipped to [-1, 1]."""
        d = float(pred_a) - float(pred_b)
        h = self.diff_halfwidth + float(extra)
        return d, max(-1.0, d - h), min(1.0, d + h)

    def coverage(self, pred, true) -> float:
        low, high = self.interval(np.asarray(pred, dtype=np.float64).ravel())
        return empirical_coverage(low, high, np.asarray(true).ravel())

    def to_dict(self) -> dict:
        out = {
            "method": self.method,
            "level": self.level,
            "halfwidth": _finite_or_none(self.halfwidth),
            "diff_halfwidth": _finite_or_none(self.diff_halfwidth),
            "n_calibration": self.n_calibration,
        }
        if self.spread is not None:
            quantiles = [_finite_or_none(q) for q in self.quantiles]
            out["adaptive"] = {"spread": self.spread.to_dict(), "edges": list(self.edges),
                               "quantiles": quantiles}  # fmt: skip
        return out

    @classmethod
    def from_dict(cls, d: dict) -> ConformalInterval:
        def inf(v):
            return float("inf") if v is None else float(v)

        adaptive = d.get("adaptive")
        return cls(
            level=float(d["level"]),
            halfwidth=inf(d.get("halfwidth")),
            diff_halfwidth=inf(d.get("diff_halfwidth")),
            n_calibration=int(d.get("n_calibration", 0)),
            method=d.get("method", CONSTANT),
            spread=Spread.from_dict(adaptive["spread"]) if adaptive else None,
            edges=tuple(float(e) for e in adaptive["edges"]) if adaptive else (),
            quantiles=tuple(inf(q) for q in adaptive["quantiles"]) if adaptive else (),
        )


BAND_NAMES = ("low", "middle", "high")


def by_band(
    conf: ConformalInterval, pred, true, key=None, bands: int = 3, bounds=None
) -> list[dict]:
    """Per band of `key` (default the estimates; equal-count bands): n, the key's range,
    coverage, mean half-width (points, clipping aside) and signed error (estimate - truth,
    points). A user can condition on the estimate, not on the truth. `bounds`: each
    model's (low, high) when not `conf`'s plain interval (`consume.scoring.flags.interval_of`); the
    half-width is then half of high - low (clipped)."""
    pred, true = np.ravel(np.asarray(pred, dtype=np.float64)), np.ravel(np.asarray(true))
    key = pred if key is None else np.ravel(np.asarray(key, dtype=np.float64))
    band = np.digitize(key, np.quantile(key, np.arange(1, bands) / bands)) if key.size else key
    low, high = conf.interval(pred) if bounds is None else map(np.ravel, bounds)
    half = conf.halfwidths(pred) if bounds is None else (high - low) / 2
    covered = inside(low, high, true)
    names = BAND_NAMES if bands == 3 else tuple(str(b + 1) for b in range(bands))
    rows = []
    for b, name in enumerate(names):
        m = band == b
        if m.any():
            rows.append({
                "band": name, "n": int(m.sum()),
                "from": 100 * float(key[m].min()), "to": 100 * float(key[m].max()),
                "coverage": float(covered[m].mean()),
                "halfwidth": 100 * float(half[m].mean()),
                "signed_error": 100 * float((pred[m] - true[m]).mean()),
            })  # fmt: skip
    return rows


def _finite_or_none(x: float) -> float | None:
    """JSON has no infinity: an unbounded half-width is written as null."""
    return float(x) if math.isfinite(x) else None


def _check_level(level: float) -> None:
    if not 0.0 < float(level) < 1.0:
        raise SettingsError(f"interval level must be between 0 and 1 (exclusive), got {level}")


__all__ = [
    "BAND_NAMES",
    "ConformalInterval",
    "Spread",
    "by_band",
    "conformal_quantile",
    "difference_halfwidth",
    "empirical_coverage",
    "inside",
]
