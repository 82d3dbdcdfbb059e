"""An estimate from a model that left some anchors unanswered (`allow_missing`), NumPy only.

`MISSING_POLICY` says how, in words (the manifest carries it); `fill_missing` does it.
"""

from __future__ import annotations

import numpy as np

N_COMPLETIONS = 256
MISSING_POLICY = (
    "with allow_missing, each missing anchor is imputed by its expected value under a "
    "one-parameter logistic shift: p_j = sigmoid(logit(training rate of item j) + s), with s "
    "chosen so that the mean of p over the answered anchors equals the model's accuracy on "
    "them; the estimate uses these expected values, and each side of the interval is widened "
    f"by the spread (central level-range) of the estimates over {N_COMPLETIONS} random "
    "completions of the missing answers, each drawn correct with its probability p_j."
)


def fill_missing(
    predictor, x: np.ndarray, miss: np.ndarray, anchor_means, level: float
) -> tuple[float, float]:
    """(estimate, interval widening) from a +-1 anchor vector whose `miss` entries are
    unanswered (`MISSING_POLICY`); anchor_means: the anchors' training means (+-1 scale)."""
    p = impute_probabilities(x, miss, anchor_means)
    filled = x.copy()
    filled[miss] = 2 * p - 1
    value = float(predictor.predict(filled[None, :].astype(np.float32))[0])
    rng = np.random.default_rng(0)
    draws = np.repeat(x[None, :], N_COMPLETIONS, axis=0)
    draws[:, miss] = np.where(rng.random((N_COMPLETIONS, miss.sum())) < p, 1.0, -1.0)
    sims = np.asarray(predictor.predict(draws.astype(np.float32)), dtype=np.float64)
    tail = (1 - level) / 2
    lo, hi = np.quantile(sims, [tail, 1 - tail])
    return value, float(max(value - lo, hi - value, 0.0))


def impute_probabilities(x: np.ndarray, miss: np.ndarray, anchor_means) -> np.ndarray:
    """Each missing anchor's probability of a correct answer (the logistic shift)."""
    rate = (
        np.full(len(x), 0.5) if anchor_means is None else (np.asarray(anchor_means, float) + 1) / 2
    )
    logit = np.log(np.clip(rate, 0.02, 0.98) / (1 - np.clip(rate, 0.02, 0.98)))
    target = float(np.clip(((x[~miss] + 1) / 2).mean(), 0.01, 0.99))
    lo_s, hi_s = -20.0, 20.0
    for _ in range(60):  # bisection: mean sigmoid(logit + s) over answered = target
        s = (lo_s + hi_s) / 2
        if np.mean(_sigmoid(logit[~miss] + s)) < target:
            lo_s = s
        else:
            hi_s = s
    return _sigmoid(logit[miss] + (lo_s + hi_s) / 2)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


__all__ = [
    "MISSING_POLICY",
    "N_COMPLETIONS",
    "fill_missing",
    "impute_probabilities",
]
