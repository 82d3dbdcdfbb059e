"""Dropout A/B (issue 30, round 6): CPU time of one MLP of the fit with the old mask draws
(`rng.integers`) or the new ones (`training.uint32_draws`); the same validation MSE both ways.

    python bench/results/dropout_ab.py old; python bench/results/dropout_ab.py new   # interleave
"""

import sys
import time

import numpy as np

from sparseeval import make_synthetic
from sparseeval.method import training
from sparseeval.method.predictors import MLPPredictor

if sys.argv[1] == "old":
    training.uint32_draws = lambda rng, n: rng.integers(0, 2**32, size=n, dtype=np.uint32)
m = make_synthetic(5000, 1319, seed=0)
cols = np.random.default_rng(0).choice(1319, 100, replace=False)
X = m.values[:4600][:, cols].astype(np.float32)
y = m.y[:4600]
t = time.process_time()
p = MLPPredictor(lr=5e-4, epochs=2000, patience=50, dropout=0.1, seed=0).fit(X, y)
dt = time.process_time() - t
print(sys.argv[1], f"{dt:.2f} CPU s, {1000 * dt / (p.epochs_ + 50):.2f} ms/epoch", p.valid_mse_)
