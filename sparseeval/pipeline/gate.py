"""The quality gate: candidate vs live set on the same held-out models, paired, with its noise.

Per model the difference of absolute errors `d = |candidate - truth| - |live - truth|`
(points). On each group of held-out models (all of them, and the fresh ones that arrived
since the live set was published) the mean difference is compared with its noise,
`z * sd(d) / sqrt(n)` (z = 1.645: one-sided 95%). The candidate is refused only when it is
worse beyond noise on some group; a gap inside the noise ("0.04 points on 79 models") is
no reason. Pure: arrays in, a decision out.

The coverage check (`coverage_check`): a candidate whose intervals (as `predict` gives
them: flagged models widened, the top edge) cover fewer held-out test models than nominal
by more than the standard error `sqrt(level (1 - level) / n)` is not published as is: its
intervals are widened (`ConformalInterval.widened`) until they are nominal on the test
models as well as the calibration models, and the manifest and report say so, with the
coverage measured before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import PoolCheck, covered

Z_ONE_SIDED_95 = 1.645
FLAG_KEYS = ("test_flag_range", "test_flag_pattern")  # report inputs: per test model


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


@dataclass(frozen=True)
class CoverageCheck:
    """Coverage of the held-out test models against nominal, with its standard error."""

    coverage: float
    n: int
    level: float

    @property
    def se(self) -> float:
        return float(np.sqrt(self.level * (1 - self.level) / max(self.n, 1)))

    @property
    def below(self) -> bool:
        return self.coverage < self.level - self.se

    def line(self) -> str:
        where = "below nominal by more than" if self.below else "within"
        return (
            f"test coverage {100 * self.coverage:.1f}% of {self.n} models at"
            f" {100 * self.level:.0f}% nominal ({where} its standard error"
            f" {100 * self.se:.1f} points)"
        )


def test_flagged(inputs: Mapping[str, Any]) -> np.ndarray | None:
    """Per test model, whether the set's pool check flags it (report inputs
    `test_flag_range` | `test_flag_pattern`, saved at fit time); None when not saved."""
    saved = [inputs.get(k) for k in FLAG_KEYS]
    if any(v is None for v in saved):
        return None
    return np.asarray(saved[0], dtype=bool) | np.asarray(saved[1], dtype=bool)


def coverage_check(
    conf: ConformalInterval, test_pred, test_true, pool: PoolCheck | None = None, flagged=None
) -> tuple[ConformalInterval, dict]:
    """The interval to publish and what the check did: {action, reason, coverage_before,
    standard_error}.

    Coverage is of the interval a user gets (`consume.scoring.flags.interval_of`: widened where the
    set's pool check `pool` flags a model, `flagged` per test model, and the top edge).
    action "widened" when the test coverage is below nominal beyond its standard error:
    the quantile becomes the larger of the calibration models' and the test models' (the
    interval is then nominal on each group; `ConformalInterval.widened`), else "kept".
    """
    test_pred = np.asarray(test_pred, dtype=np.float64).ravel()
    test_true = np.asarray(test_true, dtype=np.float64).ravel()
    cover = lambda c: float(np.mean(covered(pool, c, test_pred, test_true, flagged)))  # noqa: E731
    check = CoverageCheck(cover(conf), len(test_true), conf.level)
    out = {"coverage_before": check.coverage, "standard_error": check.se}
    if not check.below:
        return conf, out | {"action": "kept", "reason": check.line()}
    wide = conf.widened(test_pred - test_true, test_pred)
    reason = (
        f"{check.line()}: intervals widened to nominal on the test models as well as the"
        f" calibration models (test coverage now {100 * cover(wide):.1f}%,"
        " no longer an independent check)"
    )
    return wide, out | {"action": "widened", "reason": reason, "coverage_after": cover(wide)}


def gate_decision(current_mae: float | None, candidate_mae: float | None) -> tuple[bool, str]:
    """Pure: publish only a candidate at least as good as the live set on the same models."""
    if current_mae is None:
        return True, "no live set to compare with"
    if candidate_mae is None:
        return False, "candidate could not be scored on the held-out models"
    if candidate_mae <= current_mae + 1e-12:
        return True, f"candidate MAE {candidate_mae:.3f} <= live {current_mae:.3f} points"
    return False, f"refused: candidate MAE {candidate_mae:.3f} > live {current_mae:.3f} points"


__all__ = [
    "FLAG_KEYS",
    "Z_ONE_SIDED_95",
    "CoverageCheck",
    "GroupComparison",
    "compare_group",
    "coverage_check",
    "decide",
    "gate_decision",
    "test_flagged",
]
