"""Post-hoc corrections for the strongest decile (issue 15 item 2), one split per benchmark.

Fit the defaults (k = 50) on models outside the strongest decile (leaderboard average),
then compare on 400 random other models and on the strongest decile: the defaults
(`pred`), the non-negative ridge on the same anchors (`lin`), their max, a blend moving
to `lin` when `lin` is above the training 90th percentile (fully at the 99th: `w-lin`;
`w-lin-up` only upwards), a least-squares line on the raw anchor mean (`raw-ols`) and the
same weighting toward it (`w-raw`). Prints [MAE, mean signed error] in points per group.

    python bench/results/newcomer_corrections.py arc
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from accuracy import QUIET, load
from newcomers import leaderboard_meta

from sparseeval import Settings
from sparseeval.method.estimator import SparseEval
from sparseeval.method.predictors import NonNegativeRidge


def main(name: str, seed: int = 0) -> None:
    m = load(name)
    X, y = m.values.astype(np.float32), m.y
    avg, _ = leaderboard_meta(m.model_ids)
    strong = np.flatnonzero(avg >= np.nanquantile(avg, 0.9))
    order = np.random.default_rng(7).permutation(np.setdiff1d(np.arange(len(y)), strong))
    rnd, valid, train = order[:400], order[400:600], order[600:]
    est = SparseEval.from_settings(Settings(), n_anchors=50, seed=seed, **QUIET)
    est.fit(X[train], y[train], X_valid=X[valid], y_valid=y[valid])
    A = est.anchors_
    lin = NonNegativeRidge().fit(X[train][:, A], y[train])
    mean = X[:, A].mean(1)
    ols = np.polyfit(mean[train], y[train], 1)
    q90, q99 = np.quantile(y[train], [0.9, 0.99])
    out: dict = {}
    for group, rows in (("random", rnd), ("strongest", strong)):
        p, lp = est.predict(X[rows]), lin.predict(X[rows][:, A])
        raw, t = np.polyval(ols, mean[rows]), y[rows]
        w = np.clip((lp - q90) / (q99 - q90), 0, 1)
        candidates = {
            "pred": p, "lin": lp, "max(p,lin)": np.maximum(p, lp), "w-lin": p + w * (lp - p),
            "w-lin-up": p + w * np.clip(lp - p, 0, None), "raw-ols": raw,
            "w-raw": p + w * (raw - p),
        }  # fmt: skip
        for n, c in candidates.items():
            err = 100 * (c - t)
            out.setdefault(n, {})[group] = [round(np.mean(np.abs(err)), 3), round(np.mean(err), 3)]
    print(name, json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
