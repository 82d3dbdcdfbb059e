"""One metabench coverage fit (as bench/coverage.py) with its errors by true-score band.

python bench/results/coverage_mmlu_bands.py 2        # mmlu, seed 2
"""

import sys

import numpy as np

sys.path.insert(0, "bench")
from accuracy import QUIET, load

from sparseeval import Settings
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.method.estimator import SparseEval

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 2
data = sys.argv[2] if len(sys.argv) > 2 else "mmlu"
m = load(data)
X, y = m.values.astype(np.float32), m.y
order = np.random.default_rng(1000 + seed).permutation(len(y))
test, valid, calib, train = order[:400], order[400:600], order[600:800], order[800:]
est = SparseEval.from_settings(Settings(), n_anchors=50, seed=seed, **QUIET)
est.fit(X[train], y[train], X_valid=X[valid], y_valid=y[valid]).calibrate(X[calib], y[calib])
rc, rt = est.calibration_residuals_, est.predict(X[test]) - y[test]
ci = ConformalInterval.fit(rc, 0.9)
print("predictor", est.predictor_name_, est.valid_scores_)
print("halfwidth", ci.halfwidth, "coverage", ci.coverage(est.predict(X[test]), y[test]))
for name, r in (("calib", rc), ("test", rt), ("valid", est.valid_residuals_)):
    a = 100 * np.abs(r)
    print(f"{name} {len(r)} MAE {a.mean():.3f} q90 {np.quantile(a, 0.9):.3f} max {a.max():.2f}")
for name, idx in (("calib", calib), ("test", test), ("train", train)):
    print(f"{name} y mean {y[idx].mean():.3f} sd {y[idx].std():.3f}")
for lo, hi in ((0, 0.3), (0.3, 0.5), (0.5, 0.65), (0.65, 1)):
    mt, mc = (y[test] >= lo) & (y[test] < hi), (y[calib] >= lo) & (y[calib] < hi)
    cov_t = np.mean(np.abs(rt[mt]) <= ci.halfwidth)
    cov_c = np.mean(np.abs(rc[mc]) <= ci.halfwidth)
    print(f"band {lo}-{hi}: test n={mt.sum()} cov={cov_t:.3f}; calib n={mc.sum()} cov={cov_c:.3f}")
