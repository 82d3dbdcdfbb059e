"""Per-item logistic curves of correctness against ability, for `consume.scoring.next_items`.

theta of a training model is the logit of its accuracy over the items (clipped to 1%-99%);
item j's curve P(correct) = sigmoid(a_j + b_j * theta) is a ridge-penalized logistic
regression on the training models (Newton steps, all items at once), its slope kept >= 0 so
that ability is monotone in every item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sparseeval.consume.scoring.next_items import ItemCurves, ItemMap

RIDGE = 1.0  # penalty on (a, b): keeps items everyone (or no one) answers finite
STEPS = 25


def training_abilities(X01: np.ndarray) -> np.ndarray:
    """theta per model: logit of its mean correctness over the items."""
    acc = np.clip(np.asarray(X01, float).mean(1), 0.01, 0.99)
    return np.log(acc / (1 - acc))


def fit_curves(X, item_ids: Sequence[str], item_mean: bool = True,
               sources: Mapping[str, Any] | None = None, targets=None) -> ItemCurves:  # fmt: skip
    """The curves of every column of X (models x items, -1/+1 or 0/1) named by `item_ids`;
    with the models' reported `targets` (a set whose target is not the items' mean), the
    line that reads them from the items' mean (`item_map`)."""
    X01 = np.asarray(X, float)
    if X01.min() < 0:
        X01 = (X01 + 1) / 2
    a, b = fit_logistic(X01, training_abilities(X01))
    ids = tuple(map(str, item_ids))
    line, weights = None, None
    if not item_mean and targets is not None:
        line, weights = item_map(X01, targets), group_weights(ids)
        macro = None if weights is None else item_map(X01, targets, weights)
        if line.usable or macro is None or not macro.usable:
            weights = None  # the plain mean, usable or not
        else:
            line = macro  # a macro mean over the items' groups (MMLU's over its subjects)
    return ItemCurves(ids, a, b, item_mean, sources, line, weights)


def group_weights(item_ids: Sequence[str]) -> np.ndarray | None:
    """Per item, its weight in the mean over groups of the groups' means, averaging 1: item j
    of group g weighs n / (groups * size of g). Groups: the part of each id before its last
    ":" (`subject:index`, as MMLU's items are named); None unless every id has one and there
    are at least two groups."""
    if not item_ids or not all(":" in i for i in item_ids):
        return None
    groups = np.unique([i.rsplit(":", 1)[0] for i in item_ids], return_inverse=True)[1]
    sizes = np.bincount(groups)
    if len(sizes) < 2:
        return None
    return len(item_ids) / (len(sizes) * sizes[groups])


def matrix_curves(matrix, rows, item_mean: bool = True,
                  sources: Mapping[str, Any] | None = None) -> ItemCurves:  # fmt: skip
    """`fit_curves` of every item of `matrix` (a `ResponseMatrix`) on its `rows`, with
    their reported targets where it has them."""
    sub = matrix.rows(rows)
    return fit_curves(sub.values, [str(i) for i in sub.item_ids], item_mean, sources,
                      sub.targets)  # fmt: skip


def item_map(X01: np.ndarray, targets, weights=None) -> ItemMap:
    """The least-squares line `a + b * mean` of the targets on the models' mean over the
    items (0/1 or graded scores; weighted by `weights`, averaging 1, where given), with its
    RMS miss."""
    X01 = np.asarray(X01, float)
    w = np.ones(X01.shape[1]) if weights is None else np.asarray(weights, float)
    mean, y = X01 @ w / X01.shape[1], np.asarray(targets, float)
    known = np.isfinite(y)
    mean, y = mean[known], y[known]
    design = np.column_stack([np.ones_like(mean), mean])
    (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
    return ItemMap(float(a), float(b), float(np.sqrt(np.mean((design @ [a, b] - y) ** 2))))


def fit_logistic(
    Y: np.ndarray,
    theta: np.ndarray,
    steps: int = STEPS,
    start: str = "rate",
    max_step: float | None = None,
    monotone: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) per column of Y (0/1) from sigmoid(a + b theta): Newton steps on the logistic
    likelihood with a ridge pulling (a, b) toward (0, 1), all columns at once (2 x 2 systems).

    start: a from each column's rate ("rate") or 0 ("zero"); max_step: the largest step per
    parameter (None: full steps); monotone: slopes kept >= 0. The one solver of the per-item
    curves here and of the pool check's anchors (`method.pool.item_curves`).
    """
    t = np.asarray(theta, float)
    if start == "rate":
        rate = np.clip(Y.mean(0), 0.02, 0.98)
        a = np.log(rate / (1 - rate))
    else:
        a = np.zeros(Y.shape[1])
    b = np.ones(Y.shape[1])
    for _ in range(steps):
        p = np.exp(-np.logaddexp(0.0, -(a[None, :] + b[None, :] * t[:, None])))
        w, r = p * (1 - p), Y - p
        g_a, g_b = r.sum(0) - RIDGE * a, (r * t[:, None]).sum(0) - RIDGE * (b - 1)
        h_aa = w.sum(0) + RIDGE
        h_ab = (w * t[:, None]).sum(0)
        h_bb = (w * (t * t)[:, None]).sum(0) + RIDGE
        det = h_aa * h_bb - h_ab * h_ab
        d_a, d_b = (h_bb * g_a - h_ab * g_b) / det, (h_aa * g_b - h_ab * g_a) / det
        if max_step is not None:
            d_a, d_b = np.clip(d_a, -max_step, max_step), np.clip(d_b, -max_step, max_step)
        a, b = a + d_a, b + d_b
        if monotone:
            b = np.maximum(b, 0.0)
    return a, b


__all__ = [
    "RIDGE",
    "STEPS",
    "fit_curves",
    "fit_logistic",
    "group_weights",
    "item_map",
    "matrix_curves",
    "training_abilities",
]
