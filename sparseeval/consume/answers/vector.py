"""A model's answers as a +-1 vector in anchor order (NumPy only), and which are missing."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sparseeval.consume.answers.responses import (
    ResponsesError,
    as_pairs,
    item_id,
    none_of_message,
    printable,
    sign,
)


def anchor_vector(responses, index: Mapping[str, int], k: int, graded: bool = False) -> np.ndarray:
    """+-1 floats in anchor order (`index`: anchor id -> position, of `k`), NaN where not
    answered; answers given positionally must be one per anchor, in order. `graded`: a
    score strictly between 0 and 1 is read as 2*score - 1 (else refused, `sign`)."""
    pairs = as_pairs(responses)
    if pairs is None:  # positional, in anchor order
        arr = list(responses)
        if len(arr) != k:
            raise ResponsesError(
                f"got {len(arr)} answers in anchor order, expected {k} (one per anchor)"
            )
        return np.array([sign(v, f"anchor #{j}", graded) for j, v in enumerate(arr)], dtype=float)
    x = np.full(k, np.nan)
    for item, v in pairs:
        j = index.get(item_id(item, "answers"))
        if j is not None:
            s = sign(v, str(item), graded)
            if not np.isnan(x[j]) and not np.isnan(s) and x[j] != s:
                raise ResponsesError(f"conflicting answers for anchor {printable(item)}")
            if not np.isnan(s):
                x[j] = s
    return x


def none_of_the_anchors(responses, index: Mapping[str, int], anchors: list[str]) -> str:
    """`none of your 40 answer ids are this set's anchors (...)` when answers by id name
    no anchor at all (another benchmark's file, ids of another kind), else ''."""
    pairs = as_pairs(responses)
    if not pairs:
        return ""
    ids = list(dict.fromkeys(item_id(item, "answers") for item, _ in pairs))
    if any(i in index for i in ids):
        return ""
    return none_of_message(len(ids), ids, anchors)


def missing_message(missing: list[str], k: int, what: str) -> str:
    """`3 of 50 anchors missing from the answers: a, b, c` (at most ten named)."""
    more = f", ... (+{len(missing) - 10} more)" if len(missing) > 10 else ""
    named = ", ".join(printable(m) for m in missing[:10])
    return f"{len(missing)} of {k} anchors missing from the {what}: {named}{more}"


__all__ = [
    "anchor_vector",
    "missing_message",
    "none_of_the_anchors",
]
