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

For two models A and B, the error of the estimated difference is `r_A - r_B`.
`difference_halfwidth` calibrates it on all pairs of calibration models; that
half-width is also the smallest difference the anchor set can resolve at the
level (a difference larger than it has an interval that excludes zero). Pairs
share models, so this is an approximate (U-statistic) calibration, not an exact
conformal guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_PAIR_MODELS = 2000


def conformal_quantile(scores, level: float) -> float:
    """The ceil((n+1) * level)-th smallest score; inf when n is too small for `level`."""
    _check_level(level)
    s = np.sort(np.abs(np.asarray(scores, dtype=np.float64).ravel()))
    s = s[np.isfinite(s)]
    n = s.size
    if n == 0:
        raise ValueError("conformal calibration needs at least one finite residual")
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
        raise ValueError("a difference interval needs at least two calibration residuals")
    if r.size > MAX_PAIR_MODELS:
        r = np.random.default_rng(seed).choice(r, MAX_PAIR_MODELS, replace=False)
    n = r.size
    i, j = np.triu_indices(n, k=1)
    diffs = np.abs(r[i] - r[j])
    adjusted = math.ceil((n + 1) * level) / n
    if adjusted > 1:
        return float("inf")
    return float(np.quantile(diffs, adjusted, method="higher"))


def empirical_coverage(low, high, true) -> float:
    """Share of `true` values inside [low, high]."""
    low, high, true = (np.asarray(a, dtype=np.float64) for a in (low, high, true))
    return float(np.mean((true >= low - 1e-12) & (true <= high + 1e-12)))


@dataclass(frozen=True)
class ConformalInterval:
    """A fitted split-conformal interval: `pred +- halfwidth`, clipped to [0, 1].

    `diff_halfwidth` is the half-width for the difference of two models' estimates
    (and the smallest resolvable difference at `level`).
    """

    level: float
    halfwidth: float
    diff_halfwidth: float
    n_calibration: int
    method: str = "split-conformal (absolute residuals of held-out calibration models)"

    @classmethod
    def fit(cls, residuals, level: float = 0.9) -> ConformalInterval:
        r = np.asarray(residuals, dtype=np.float64).ravel()
        r = r[np.isfinite(r)]
        q = conformal_quantile(r, level)
        qd = difference_halfwidth(r, level) if r.size >= 2 else float("inf")
        return cls(level=float(level), halfwidth=q, diff_halfwidth=qd, n_calibration=int(r.size))

    def interval(self, pred, extra=0.0):
        """(low, high) for one prediction or an array; `extra` widens each side."""
        p = np.asarray(pred, dtype=np.float64)
        h = self.halfwidth + np.asarray(extra, dtype=np.float64)
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
        return {
            "method": self.method,
            "level": self.level,
            "halfwidth": _finite_or_none(self.halfwidth),
            "diff_halfwidth": _finite_or_none(self.diff_halfwidth),
            "n_calibration": self.n_calibration,
        }

    @classmethod
    def from_dict(cls, d: dict) -> ConformalInterval:
        def inf(v):
            return float("inf") if v is None else float(v)

        return cls(
            level=float(d["level"]),
            halfwidth=inf(d.get("halfwidth")),
            diff_halfwidth=inf(d.get("diff_halfwidth")),
            n_calibration=int(d.get("n_calibration", 0)),
            method=d.get("method", cls.method),
        )


def _finite_or_none(x: float) -> float | None:
    """JSON has no infinity: an unbounded half-width is written as null."""
    return float(x) if math.isfinite(x) else None


def _check_level(level: float) -> None:
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"interval level must be between 0 and 1 (exclusive), got {level}")


__all__ = [
    "ConformalInterval",
    "conformal_quantile",
    "difference_halfwidth",
    "empirical_coverage",
]
