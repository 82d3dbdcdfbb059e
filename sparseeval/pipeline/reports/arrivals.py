"""The report's newest models: coverage on the test models that arrived last in the store.

Random test models say how a set does on models like its pool; the newest ones are closer
to the next model it will score. `test_recent` (report inputs, from `publish.write_candidate`)
marks, per test model, whether it is among the last `RECENT_SHARE` to appear in the store (by
first result); absent when every test model arrived in the same ingest run (no order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sparseeval.consume.scoring.conformal import ConformalInterval, inside

RECENT_SHARE = 0.2  # the latest-arrived share of the test models


def recent_flags(
    first_seen: list[str], first_runs: Mapping[str, int], test_ids
) -> list[bool] | None:
    """Per test model, whether it is among the last `RECENT_SHARE` of them to arrive.

    first_seen: model ids in the order they first appeared in the store; first_runs: each
    one's first ingest run. None when the test models all came in one run."""
    order = {m: i for i, m in enumerate(first_seen)}
    ids = [str(m) for m in test_ids]
    if len({first_runs.get(m) for m in ids}) < 2 or any(m not in order for m in ids):
        return None
    n = max(1, round(RECENT_SHARE * len(ids)))
    latest = set(sorted(ids, key=order.__getitem__)[-n:])
    return [m in latest for m in ids]


def recent_summary(
    conf: ConformalInterval, inputs: Mapping[str, Any], pool: Mapping[str, Any] | None = None
) -> dict | None:
    """{n_recent, coverage_recent, mae_recent, n_test, coverage} or None (no arrival order).
    Coverage of the interval a user gets (`reports.flags.test_bounds`; `pool`: the set's
    pool check)."""
    from sparseeval.pipeline.reports.flags import test_bounds

    recent, pred, true = (inputs.get(k) for k in ("test_recent", "test_pred", "test_true"))
    if recent is None or pred is None or true is None or not any(recent):
        return None
    recent = np.asarray(recent, dtype=bool)
    pred, true = np.asarray(pred, dtype=np.float64), np.asarray(true, dtype=np.float64)
    low, high = test_bounds(conf, pool, inputs)
    covered = inside(low, high, true)
    return {"n_recent": int(recent.sum()), "n_test": len(true),
            "coverage_recent": float(covered[recent].mean()),
            "coverage": float(covered.mean()),
            "mae_recent": float(100 * np.abs(pred[recent] - true[recent]).mean()),
            "mae": float(100 * np.abs(pred - true).mean())}  # fmt: skip


def recent_blocks(summary: dict | None, level: float) -> list[tuple]:
    """The report's section (none without an arrival order)."""
    if summary is None:
        return []
    s = summary
    text = (f"On the {s['n_recent']} test models that arrived last in the store, the"
            f" {100 * level:.0f}% intervals covered {100 * s['coverage_recent']:.1f}% (MAE"
            f" {s['mae_recent']:.2f} points), against {100 * s['coverage']:.1f}% (MAE"
            f" {s['mae']:.2f}) on all {s['n_test']} random test models.")  # fmt: skip
    return [("h2", "Newest models"), ("p", text)]


__all__ = [
    "RECENT_SHARE",
    "recent_blocks",
    "recent_flags",
    "recent_summary",
]
