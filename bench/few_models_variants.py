"""Large pool, few models (issue 15 item 4): which variant of the defaults helps at 90 models?

On `synthetic-narrow` (5,000 x 1,319, accuracy sd 0.135; `bench/accuracy.py`'s split: 200
test models, 90 labelled of which 18 validate), seeds 0-4, test MAE in points of the
defaults, some one-setting variants, and greedy + ridge.

    python bench/few_models_variants.py 100
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: accuracy.py
from accuracy import QUIET, load, split

from sparseeval import Settings
from sparseeval.method.baselines import GreedyRidge
from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import mae_points

VARIANTS = {
    "default": {},
    "nnridge": {"predictor": "nnridge"},
    "ridge": {"predictor": "ridge"},
    "init-greedy": {"init": "greedy"},
    "adaptive+greedy": {"init_candidates": ("kmeans", "random", "greedy")},
    "judge-valid": {"judge": "validation"},
    "refine0": {"refine_steps": 0},
    "init-random": {"init": "random"},
}


def main(k: int) -> None:
    m = load("synthetic-narrow")
    X, y = m.values.astype(np.float32), m.y
    res: dict[str, list[float]] = {n: [] for n in (*VARIANTS, "greedy+ridge")}
    for seed in range(5):
        tr, va, te = split(len(y), 200, 90, seed)
        for name, kw in VARIANTS.items():
            est = SparseEval.from_config(
                Settings.of().values(), n_anchors=k, seed=seed, **QUIET, **kw
            )
            est.fit(X[tr], y[tr], X_valid=X[va], y_valid=y[va])
            res[name].append(mae_points(est.predict(X[te]), y[te]))
        greedy = GreedyRidge(n_anchors=k, seed=seed).fit(X[tr], y[tr], X[va], y[va])
        res["greedy+ridge"].append(mae_points(greedy.predict(X[te]), y[te]))
    for name, v in res.items():
        print(k, f"{name:<16}", round(np.mean(v), 3), np.round(v, 2))


if __name__ == "__main__":
    main(int(sys.argv[1]))
