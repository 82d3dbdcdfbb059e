"""The report's flag rates: how many test models the set calls unlike its training pool.

The fit saves, per test model, whether its estimate lies beyond the training models' range,
whether its anchor answers are unlikely under them, and whether it sits where the anchors stop
telling (`consume.scoring.flags.PoolCheck`, `method.pool.test_flags`); the report counts each
and shows the coverage of flagged models with the interval they get, beside the others'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sparseeval.consume.scoring.conformal import ConformalInterval, empirical_coverage, inside
from sparseeval.consume.scoring.flags import PoolCheck, interval_of
from sparseeval.pipeline.gate import test_flagged


def test_bounds(
    conf: ConformalInterval, pool: Mapping[str, Any] | None, inputs: Mapping[str, Any]
) -> tuple[np.ndarray, np.ndarray] | None:
    """(low, high) of each test model: the interval a user gets from the set
    (`consume.scoring.flags.interval_of`: widened beyond the range, the top edge); every
    coverage in the report is of these. None without test predictions."""
    if inputs.get("test_pred") is None:
        return None
    pred = np.asarray(inputs["test_pred"], dtype=np.float64).ravel()
    check = PoolCheck.from_dict(pool) if pool else None
    low, high, _ = interval_of(check, conf, pred, test_flagged(inputs))
    return low, high


def flag_summary(
    conf: ConformalInterval, pool: Mapping[str, Any] | None, inputs: Mapping[str, Any]
) -> dict | None:
    """Counts and coverage of the flagged test models; None without a check or flags saved."""
    keys = ("test_pred", "test_true", "test_flag_range", "test_flag_pattern")
    if not pool or any(inputs.get(k) is None for k in keys):
        return None
    pred, true = (np.asarray(inputs[k], dtype=np.float64) for k in keys[:2])
    out_of_range, pattern = (np.asarray(inputs[k], dtype=bool) for k in keys[2:])
    saved = inputs.get("test_flag_saturated")  # None: fitted before it was saved
    saturated = np.zeros(pred.shape, dtype=bool) if saved is None else np.asarray(saved, bool)
    flagged = out_of_range | pattern | saturated
    low, high = test_bounds(conf, pool, inputs)
    covered = inside(low, high, true)

    def coverage(mask) -> float | None:
        return float(np.mean(covered[mask])) if mask.any() else None

    return {
        "n_test": int(pred.size), "flagged": int(flagged.sum()),
        "out_of_range": int(out_of_range.sum()), "answer_pattern": int(pattern.sum()),
        "saturated": None if saved is None else int(saturated.sum()),
        "rate_fitted": float(pool["rate"]), "widen": float(pool["widen"]),
        "coverage_flagged": coverage(flagged), "coverage_others": coverage(~flagged),
        "coverage_all": empirical_coverage(low, high, true),
    }  # fmt: skip


def flag_blocks(summary: dict | None, level: float) -> list[tuple]:
    """Report blocks: one paragraph of counts and coverage (nothing without a summary)."""
    if summary is None:
        return []
    n, k = summary["n_test"], summary["flagged"]
    pct = round(100 * level)

    def cov(v) -> str:
        return "-" if v is None else f"{100 * v:.1f}%"

    saturated = summary.get("saturated")
    at_ends = ("" if saturated is None else f", {saturated} at the top or bottom of what these"
               " anchors can tell (an estimate the pool's strongest or weakest also get, whose"
               " interval opens on that side, or answers like the strongest's, said)")  # fmt: skip
    text = (
        f"{k} of {n} test models ({100 * k / max(n, 1):.1f}%) were flagged as unlike the "
        f"training pool: {summary['out_of_range']} with an estimate beyond the training "
        f"models' range, {summary['answer_pattern']} with an unlikely answer pattern (the "
        f"pattern threshold flags {100 * summary['rate_fitted']:.0f}% of the models it was "
        f"fit on){at_ends}; a model may have several reasons. An estimate beyond the range "
        f"has its interval {summary['widen']:g}x as wide "
        f"on the outer side; an unlikely answer pattern is said, not widened (the interval "
        f"follows the estimate alone); {pct}% coverage of flagged models "
        f"{cov(summary['coverage_flagged'])}, of the others {cov(summary['coverage_others'])},"
        f" of all {cov(summary['coverage_all'])}."
    )
    return [("h2", "Models unlike the training pool (test models)"), ("p", text)]


__all__ = [
    "flag_blocks",
    "flag_summary",
    "test_bounds",
]
