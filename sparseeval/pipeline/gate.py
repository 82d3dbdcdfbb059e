"""The quality gate: candidate vs live set on the same held-out models, paired, with its noise.

Per model the difference of absolute errors `d = |candidate - truth| - |live - truth|`
(points). On each group of held-out models (all of them, and the fresh ones that arrived
since the live set was published) the mean difference is compared with its noise,
`z * sd(d) / sqrt(n)` (z = 1.645: one-sided 95%). The candidate is refused only when it is
worse beyond noise on some group; a gap inside the noise ("0.04 points on 79 models") is
no reason. Pure: arrays in, a decision out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Z_ONE_SIDED_95 = 1.645


@dataclass(frozen=True)
class GroupComparison:
    """Candidate vs live on one group of held-out models (MAE in points)."""

    name: str
    n: int
    live_mae: float
    candidate_mae: float
    difference: float  # mean of d (negative: the candidate is better)
    noise: float  # z * standard error of the mean difference

    @property
    def verdict(self) -> str:
        if self.difference > self.noise:
            return "worse"
        return "better" if self.difference < -self.noise else "within noise"

    def line(self) -> str:
        return (
            f"{self.name} ({self.n} models): candidate MAE {self.candidate_mae:.3f} vs live"
            f" {self.live_mae:.3f} points (difference {self.difference:+.3f}"
            f" ± {self.noise:.3f}: {self.verdict})"
        )


def compare_group(
    name: str, live_pred, candidate_pred, truth, z: float = Z_ONE_SIDED_95
) -> GroupComparison:
    """Paired comparison on one group; predictions and truth as accuracies in [0, 1]."""
    truth = np.asarray(truth, dtype=np.float64)
    live = np.abs(np.asarray(live_pred, dtype=np.float64) - truth) * 100
    cand = np.abs(np.asarray(candidate_pred, dtype=np.float64) - truth) * 100
    d = cand - live
    n = len(d)
    noise = z * float(d.std(ddof=1)) / np.sqrt(n) if n > 1 else 0.0
    return GroupComparison(name, n, float(live.mean()), float(cand.mean()), float(d.mean()),
                           noise)  # fmt: skip


def decide(groups: list[GroupComparison]) -> tuple[bool, str]:
    """Accept unless the candidate is worse beyond noise on some group; the reason."""
    if not groups:
        return False, "candidate could not be compared with the live set on any model"
    worse = [g for g in groups if g.verdict == "worse"]
    lines = "; ".join(g.line() for g in groups)
    return (not worse), ("refused: " if worse else "") + lines
