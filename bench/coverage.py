"""Coverage benchmark: do the published 90% intervals cover real models' true accuracy?

On each metabench benchmark (`../shared/data/metabench_reduced`), per seed: 400 test models,
200 validation models, 200 calibration models taken from the training share (as the
pipeline does), the default `SparseEval` at k anchors; intervals from the conformal quantile
of the calibration residuals (what is published) and, for contrast, of the validation
residuals (which also chose anchors and the predictor, so are optimistic). Prints the
empirical coverage on the test models and the half-width.

    python bench/coverage.py                   # 5 benchmarks, k = 50, 3 seeds
    python bench/coverage.py --data arc --seeds 1
"""

from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from accuracy import QUIET, load

from sparseeval import Settings
from sparseeval.conformal import conformal_quantile
from sparseeval.estimator import SparseEval

N_TEST, N_VALID, N_CALIB = 400, 200, 200


def one_seed(X: np.ndarray, y: np.ndarray, k: int, level: float, seed: int) -> dict:
    order = np.random.default_rng(1000 + seed).permutation(len(y))
    test, valid = order[:N_TEST], order[N_TEST : N_TEST + N_VALID]
    calib, train = (
        order[N_TEST + N_VALID : N_TEST + N_VALID + N_CALIB],
        order[N_TEST + N_VALID + N_CALIB :],
    )
    est = SparseEval.from_settings(Settings(), n_anchors=k, seed=seed, **QUIET)
    est.fit(X[train], y[train], X[valid], y[valid])
    test_error = np.abs(est.predict(X[test]) - y[test])
    out = {}
    for name, residuals in (
        ("calibration", est.predict(X[calib]) - y[calib]),
        ("validation", est.valid_residuals_),
    ):
        q = conformal_quantile(residuals, level)
        out[name] = (float(np.mean(test_error <= q)), 100 * q)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="arc,gsm8k,mmlu,truthfulqa,winogrande")
    parser.add_argument("--anchors", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--level", type=float, default=0.9)
    args = parser.parse_args()
    print(
        f"| data | k | seeds | residuals from | test coverage (mean, min) at {args.level:.0%} "
        "| half-width (pts) |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.data.split(","):
        matrix = load(name)
        X, y = matrix.values.astype(np.float32), matrix.y
        runs = [one_seed(X, y, args.anchors, args.level, s) for s in range(args.seeds)]
        for source in ("calibration", "validation"):
            cov = [r[source][0] for r in runs]
            width = [r[source][1] for r in runs]
            print(
                f"| {name} | {args.anchors} | {args.seeds} | {source} "
                f"| {np.mean(cov):.1%}, {np.min(cov):.1%} | {np.mean(width):.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
