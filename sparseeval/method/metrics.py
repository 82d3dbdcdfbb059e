"""Evaluation metrics between predicted and true accuracies (both in [0, 1])."""

from __future__ import annotations

import numpy as np
from scipy import stats


def mae_points(pred, true) -> float:
    """Mean absolute error in accuracy points (x100)."""
    return float(100 * np.mean(np.abs(np.asarray(pred) - np.asarray(true))))


def max_error_points(pred, true) -> float:
    return float(100 * np.max(np.abs(np.asarray(pred) - np.asarray(true))))


def kendall_tau(pred, true) -> float:
    return float(stats.kendalltau(pred, true).statistic)


def spearman_rho(pred, true) -> float:
    return float(stats.spearmanr(pred, true).statistic)


def evaluate(pred, true) -> dict[str, float]:
    """All metrics at once: mae (points), kendall_tau, spearman_rho, max_error (points)."""
    return {
        "mae": mae_points(pred, true),
        "kendall_tau": kendall_tau(pred, true),
        "spearman_rho": spearman_rho(pred, true),
        "max_error": max_error_points(pred, true),
    }


__all__ = [
    "evaluate",
    "kendall_tau",
    "mae_points",
    "max_error_points",
    "spearman_rho",
]
