"""Selection on real pools: swaps logged in item ids, and never an anchor twice."""

from __future__ import annotations

import re

import numpy as np

from sparseeval.method.estimator import SparseEval
from sparseeval.method.selection import AnchorSelector
from sparseeval.method.synthetic import make_synthetic


def test_swaps_are_logged_in_item_ids():
    m = make_synthetic(160, 30, seed=2)
    ids = [f"doc-{900 + j}" for j in range(30)]  # ids that no column index looks like
    said: list[str] = []
    est = SparseEval(n_anchors=5, refine_steps=3, epochs=30, patience=5, progress=said.append)
    est.fit(m.values[:120], m.y[:120], X_valid=m.values[120:], y_valid=m.y[120:], item_ids=ids)
    swaps = [line for line in said if "swap" in line]
    assert swaps, said
    for line in swaps:
        removed, added = re.search(r"swap item (\S+) -> item (\S+) ", line).groups()
        assert removed in ids and added in ids
    kept = [s for s in est.selector_.history_ if s.accepted]
    assert {str(a) for a in est.anchor_ids_} == {ids[j] for j in est.anchors_}
    assert all(f"item {ids[s.added]}" in swaps[s.step] for s in kept)


def test_a_pool_barely_larger_than_the_budget_never_repeats_an_anchor():
    # 11 anchors of 12 items, 3 swap candidates: only one item is outside the anchors. Half
    # the items are noise, so dropping one helps, and a swap that "added" an anchor again
    # (a duplicate column) was kept: metabench ARC at 99 of 100 published 97 distinct ids.
    rng = np.random.default_rng(0)
    theta = rng.normal(size=80)
    X = np.where(rng.random((80, 12)) < 1 / (1 + np.exp(-theta[:, None])), 1, -1)
    X[:, 6:] = np.where(rng.random((80, 6)) < 0.5, 1, -1)
    y = (X[:, :6] > 0).mean(axis=1)
    sel = AnchorSelector(n_anchors=11, judge="loo", proxy="ridge", refine_steps=10,
                         progress=lambda s: None).fit(X[:60], y[:60], X_valid=X[60:],
                                                      y_valid=y[60:])  # fmt: skip
    assert len(set(sel.anchors_.tolist())) == 11
