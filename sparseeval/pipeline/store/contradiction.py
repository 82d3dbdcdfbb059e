"""Reported scores that the model's own item answers contradict: quarantined, not stored.

A model's stored items say what its score can be. For one (benchmark, definition), the
staged and stored reported scores of models with items give pairs (item mean `m` over `n`
items, score `s`). With at least `MIN_PAIRS` of them, the scores are expected near `e(m)`,
the running median of `s` over `m` (binned medians, linearly interpolated: robust to the
bad rows themselves, and right for item subsets chosen to be informative, whose mean is not
the score, and for a score on another metric than the items, e.g. TruthfulQA's mc2 over mc1
answers). A score is contradicted when it is far from that relation:

    |s - e(m)| > max(K * sigma, Z * b) + MARGIN + d

where sigma is the pairs' robust (MAD) residual scale, b = sqrt(m (1 - m) / n) the
binomial spread of an item mean (at least 1/n) and d how far m lies beyond the item means
the relation spans (beyond them it may bend: up to slope 1 more). With fewer pairs only
the items' mean speaks, with a wider margin: |s - m| > Z * b + SMALL_MARGIN.

Measured on metabench's leaderboard file (`bench/targets_quarantine.py`): it catches the
TruthfulQA rows shown as 0.0 and the rows whose value is another run's, and none of the rows
that equal metabench's own full-benchmark score.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from sparseeval.pipeline.store.db import fetch

MIN_PAIRS = 50  # pairs needed to fit the score's relation to the item mean
BINS = 25  # equal-count bins of the running median
K = 8.0  # robust residual scales a score may lie from the relation
Z = 4.0  # binomial spreads of the item mean
MARGIN = 0.05  # accuracy added to either bound
SMALL_MARGIN = 0.15  # the margin when only the item mean speaks (few pairs)
TABLE = "score_contradictions"  # registered for sql/scores_validate.sql
SCHEMA = {"model": pl.String, "benchmark": pl.String, "score": pl.String, "why": pl.String}
# sql/score_item_pairs.sql's columns, typed: inferred from the first 100 rows, a stored
# score's NULL text made the 101st model's staged text a failure
PAIRS = {"model": pl.String, "benchmark": pl.String, "definition": pl.String,
         "score": pl.String, "number": pl.Float64, "scale": pl.Float64, "staged": pl.Boolean,
         "n_items": pl.Int64, "item_mean": pl.Float64}  # fmt: skip


def spread(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The binomial standard deviation of a mean over `n` items at `m` (at least 1/n)."""
    n = np.maximum(np.asarray(n, dtype=np.float64), 1.0)
    return np.sqrt(np.maximum(m * (1 - m), 1.0 / n) / n)


def relation(m: np.ndarray, s: np.ndarray, bins: int = BINS):
    """(e, sigma, support): the running median of `s` over `m` as a function, its MAD
    residual scale, and the item means it spans (the first and last bins' medians)."""
    order = np.argsort(m, kind="stable")
    groups = np.array_split(order, min(bins, len(m)))
    bm = np.array([np.median(m[g]) for g in groups])
    bs = np.array([np.median(s[g]) for g in groups])
    e = lambda x: np.interp(x, bm, bs)  # noqa: E731
    r = s - e(m)
    return e, float(1.4826 * np.median(np.abs(r - np.median(r)))), (bm[0], bm[-1])


def contradicted(m, n, s, fit_m=None, fit_s=None) -> tuple[np.ndarray, np.ndarray]:
    """(mask, expected) per score `s` given its model's item mean `m` over `n` items;
    `fit_m`, `fit_s`: the pairs to fit the relation on (the same as m, s by default)."""
    m, n, s = (np.asarray(v, dtype=np.float64) for v in (m, n, s))
    fit_m = m if fit_m is None else np.asarray(fit_m, dtype=np.float64)
    fit_s = s if fit_s is None else np.asarray(fit_s, dtype=np.float64)
    b = Z * spread(m, n)
    if len(fit_m) < MIN_PAIRS:
        return np.abs(s - m) > b + SMALL_MARGIN, m
    e, sigma, (lo, hi) = relation(fit_m, fit_s)
    beyond = np.maximum(lo - m, 0.0) + np.maximum(m - hi, 0.0)  # slope up to 1 off its support
    expected = e(m)
    return np.abs(s - expected) > np.maximum(K * sigma, b) + MARGIN + beyond, expected


def _reasons(pairs: pl.DataFrame) -> list[dict]:
    """The contradicted staged rows of one (benchmark, definition), each with its reason."""
    m, s = pairs["item_mean"].to_numpy(), pairs["value"].to_numpy()
    rows = pairs.filter(pl.col("staged"))
    bad, expected = contradicted(rows["item_mean"], rows["n_items"], rows["value"], m, s)
    out = []
    for row, e, is_bad in zip(rows.iter_rows(named=True), expected, bad, strict=True):
        if not is_bad:
            continue
        number, scale, mean, k = row["number"], row["scale"], row["item_mean"], row["n_items"]
        what = f"the model's {k:,} stored items ({100 * mean:.1f}% correct"
        what += (
            ")" if abs(e - mean) < 5e-4 else f"; scores with such items lie near {100 * e:.1f}%)"
        )
        why = f"reported score {100 * row['value']:.1f}% contradicts {what}"
        as_fraction = contradicted([mean], [k], [number], m, s)[0][0]
        if scale == 100 and number <= 1 and not as_fraction:
            why = (f"reported score {number:g} in a percent column reads as {number:g}%, but"
                   f" {what}: a fraction given as percent? (multiply by 100)")  # fmt: skip
        out.append({"model": row["model"], "benchmark": row["benchmark"],
                    "score": row["score"], "why": why})  # fmt: skip
    return out


def register_contradictions(con: duckdb.DuckDBPyConnection) -> int:
    """Find the staged reported scores (`score_frame`) that their models' stored items
    contradict; register them as `score_contradictions`. Returns how many."""
    frame = pl.DataFrame(fetch(con, "score_item_pairs", {}), schema=PAIRS, orient="row")
    frame = frame.with_columns(value=pl.col("number") / pl.col("scale")).filter(
        pl.col("value").is_finite() & pl.col("value").is_between(0, 1)
    )
    found = []
    for _, pairs in frame.group_by("benchmark", "definition"):
        found += _reasons(pairs)
    con.register(TABLE, pl.DataFrame(found, schema=SCHEMA))
    return len(found)


__all__ = [
    "BINS",
    "MARGIN",
    "MIN_PAIRS",
    "PAIRS",
    "SCHEMA",
    "SMALL_MARGIN",
    "TABLE",
    "K",
    "Z",
    "contradicted",
    "register_contradictions",
    "relation",
    "spread",
]
