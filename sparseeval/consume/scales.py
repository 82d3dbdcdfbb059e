"""Which scale a table of reported scores is in, and scores that do not fit it.

Leaderboards report percent (62.3); some tables hold fractions (0.623). A table whose
scores are all at most 1 reads as fractions. One with scores above 1 reads as percent, and
then scores in (0, 1] are either a weak model's low percents (GSM8K: many models score under
1%) or fractions pasted among percents (0.62 meant as 62%), which would be stored 100x off.
They read as low percents when the scores just above them are as common: at least half as
many in (1, `LOW_PERCENT`] as in (0, 1] (metabench's GSM8K column: 568 and 427). Fewer than
that, with at least `MIN_PERCENTS` scores above 1 to tell the scale by, and the (0, 1] scores
are fractions among percents (`fractions_among_percents`). With fewer percents (a few weak
models and one strong) nothing is said here; a score its model's own items contradict is
still quarantined by the store (`pipeline.store.contradiction`).
"""

from __future__ import annotations

from collections.abc import Sequence

LOW_PERCENT = 5.0  # percents just above 1 that a weak model's sub-1% scores sit beside
MIN_PERCENTS = 5  # scores above 1 needed before (0, 1] scores are taken for fractions


def fractions_among_percents(scores: Sequence[float]) -> list[int]:
    """The positions of `scores` that read as fractions in a table of percents (see the
    module), [] when the table is consistent (all fractions, all percents, or low percents
    with their neighbours). A score of 0 is on every scale and never named."""
    if sum(s > 1 for s in scores) < MIN_PERCENTS:
        return []
    small = [i for i, s in enumerate(scores) if 0 < s <= 1]
    low = sum(1 < s <= LOW_PERCENT for s in scores)
    return small if len(small) > 2 * low else []


def mixed_scale_message(where: str, scores: Sequence[float], names: Sequence[str]) -> str:
    """One line naming the fraction-looking scores of a percent table (`where`: the file and
    benchmark), '' when there are none."""
    found = fractions_among_percents(scores)
    if not found:
        return ""
    shown = ", ".join(f"{names[i]}={scores[i]:g}" for i in found[:3])
    top = max(scores)
    return (
        f"{where}: {len(found):,} of {len(scores):,} scores are at most 1 among percents up to"
        f" {top:g} (e.g. {shown}): fractions mixed with percents? write every score in"
        " percent (or every one as a fraction)"
    )


__all__ = [
    "LOW_PERCENT",
    "MIN_PERCENTS",
    "fractions_among_percents",
    "mixed_scale_message",
]
