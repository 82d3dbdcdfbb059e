"""Logs speak in item ids: a refinement swap names the items, not column indices."""

from __future__ import annotations

import re

from sparseeval.method.estimator import SparseEval
from sparseeval.method.synthetic import make_synthetic


def test_swaps_are_logged_in_item_ids():
    m = make_synthetic(160, 30, seed=2)
    ids = [f"doc-{900 + j}" for j in range(30)]  # ids that no column index looks like
    said: list[str] = []
    est = SparseEval(n_anchors=5, refine_steps=3, epochs=30, patience=5, progress=said.append)
    est.fit(m.values[:120], m.y[:120], m.values[120:], m.y[120:], item_ids=ids)
    swaps = [line for line in said if "swap" in line]
    assert swaps, said
    for line in swaps:
        removed, added = re.search(r"swap item (\S+) -> item (\S+) ", line).groups()
        assert removed in ids and added in ids
    kept = [s for s in est.selector_.history_ if s.accepted]
    assert {str(a) for a in est.anchor_ids_} == {ids[j] for j in est.anchors_}
    assert all(f"item {ids[s.added]}" in swaps[s.step] for s in kept)
