"""Flags for models unlike the pool, evaluated offline on fits cached by `newcomers.py --cache`.

Each cached fit holds the anchor answers, estimates and true scores of its training,
calibration and held-out models (`newcomers.save_fit`, `suite.save_suite`). Here the pool
check (`sparseeval.method.pool`) is fitted from the training and calibration arrays, as
the pipeline does, and the held-out models' intervals are widened as a consumer's would be
(`AnchorSet.predict`, `SuiteAnchorSet.predict`): no refitting, so variants are cheap.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import polars as pl

from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import DISAGREE_WIDEN
from sparseeval.method.pool import DEFAULT_WIDEN, SUITE_WIDEN, fit_pool_check

SUITE = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")


def check_of(arrays, key: str = "", columns=None, pred: str = "pred", **kw):
    """The pool check of a cached fit's reader (`key`: "" or "_{benchmark}" in a suite)."""
    cols = slice(None) if columns is None else columns
    X = lambda part: arrays[f"X_{part}"][:, cols].astype(np.float64)  # noqa: E731
    return fit_pool_check(X("train"), arrays[f"{pred}_train{key}"], X("calib"),
                          arrays[f"{pred}_calib{key}"], **kw)  # fmt: skip


def reader(arrays, key: str, level: float, columns=None, pred="pred", part="test", **kw) -> dict:
    """One reader's intervals of the `part` models ("test": held out, "random": random
    answers): plain and widened by its pool check's flags."""
    check = check_of(arrays, key, columns, pred, **kw)
    ci = ConformalInterval.fit(arrays[f"{pred}_calib{key}"] - arrays[f"y_calib{key}"], level)
    X = arrays[f"X_{part}"][:, slice(None) if columns is None else columns].astype(np.float64)
    p = arrays[f"{pred}_{part}{key}"]
    low, high = ci.interval(p)
    wide_low, wide_high = ci.interval(p, extra=check.widening(X, p, ci.halfwidth))
    wide = {"wide_low": wide_low, "wide_high": wide_high}
    return {"pred": p, "true": arrays.get(f"y_{part}{key}"), "low": low, "high": high,
            "flagged": check.flagged(X, p), "halfwidth": ci.halfwidth} | wide  # fmt: skip


def disagree(r: dict, disjoint: np.ndarray) -> dict:
    """`r` flagged where `disjoint`; rows not flagged before widen by DISAGREE_WIDEN."""
    extra = np.where(disjoint & ~r["flagged"], (DISAGREE_WIDEN - 1) * r["halfwidth"], 0.0)
    return r | {"flagged": r["flagged"] | disjoint,
                "wide_low": np.clip(r["wide_low"] - extra, 0, 1),
                "wide_high": np.clip(r["wide_high"] + extra, 0, 1)}  # fmt: skip


def suite_readers(arrays, level: float, part: str = "test", **kw) -> dict[str, dict]:
    """Joint readers checked against the own readers, and the average, as the consumer does."""
    out, any_disjoint = {}, None
    for b in SUITE:
        joint = reader(arrays, f"_{b}", level, part=part, **kw)
        own = reader(arrays, f"_{b}", level, arrays[f"columns_{b}"], "own", part, **kw)
        disjoint = (joint["wide_low"] > own["wide_high"]) | (own["wide_low"] > joint["wide_high"])
        out[b] = disagree(joint, disjoint)
        any_disjoint = disjoint if any_disjoint is None else any_disjoint | disjoint
    out["average"] = disagree(reader(arrays, "_average", level, part=part, **kw), any_disjoint)
    return out


def stats(r: dict) -> dict:
    """Flag rate, coverage and mean width (points) before / after widening the flagged rows."""
    inside = lambda lo, hi: (r["true"] >= lo - 1e-12) & (r["true"] <= hi + 1e-12)  # noqa: E731
    before, after = inside(r["low"], r["high"]), inside(r["wide_low"], r["wide_high"])
    flagged = r["flagged"]
    share = lambda a: float(a[flagged].mean()) if flagged.any() else None  # noqa: E731
    return {
        "n": len(before), "flagged": float(flagged.mean()),
        "coverage": float(before.mean()), "coverage_widened": float(after.mean()),
        "flagged_coverage": share(before), "flagged_coverage_widened": share(after),
        "width": 100 * float(np.mean(r["high"] - r["low"])),
        "width_widened": 100 * float(np.mean(r["wide_high"] - r["wide_low"])),
    }  # fmt: skip


def fit_readers(name: str, arrays: dict, level: float, **kw):
    """(label, held-out reader, random-answers reader or None) of one cached fit."""
    parts = ("test", "random") if "X_random" in arrays else ("test",)
    if name != "suite":
        got = [reader(arrays, "", level, part=part, **kw) for part in parts]
        return [(name, got[0], got[1] if len(got) > 1 else None)]
    got = [suite_readers(arrays, level, part, **kw) for part in parts]
    return [(f"suite {b}", r, got[1][b] if len(got) > 1 else None) for b, r in got[0].items()]


def cached_rows(folder: str, level: float = 0.9, **kw) -> list[dict]:
    """`stats` of every cached fit's held-out models (benchmark sets and suite readers)."""
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "*-s*-*.npz"))):
        name, seed, group = os.path.basename(path)[:-4].rsplit("-", 2)
        with np.load(path) as npz:
            arrays = {k: npz[k] for k in npz.files}
        widen = {"widen": SUITE_WIDEN if name == "suite" else DEFAULT_WIDEN}
        for label, r, noise in fit_readers(name, arrays, level, **(widen | kw)):
            row = {"data": label, "group": group, "seed": int(seed[1:])} | stats(r)
            rows.append(row | {"random_flagged": noise and float(noise["flagged"].mean())})
    return rows


def table(rows: list[dict]) -> str:
    """Per benchmark and held-out group, means over seeds."""
    cols = ("n", "flagged", "coverage", "coverage_widened", "flagged_coverage",
            "flagged_coverage_widened", "width", "width_widened", "random_flagged")  # fmt: skip
    agg = (
        pl.DataFrame(rows)
        .group_by("data", "group", maintain_order=True)
        .agg(pl.len().alias("seeds"), *(pl.col(c).mean() for c in cols))
    )
    pct = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
    lines = [
        "| data | held-out group | seeds | test models | flagged | 90% coverage before -> after "
        "| flagged models' coverage before -> after | mean width before -> after (pts) "
        "| random answers (70%) flagged |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in agg.iter_rows(named=True):
        lines.append(
            f"| {r['data']} | {r['group']} | {r['seeds']} | {r['n']:.0f} | {pct(r['flagged'])} "
            f"| {pct(r['coverage'])} -> {pct(r['coverage_widened'])} "
            f"| {pct(r['flagged_coverage'])} -> {pct(r['flagged_coverage_widened'])} "
            f"| {r['width']:.2f} -> {r['width_widened']:.2f} | {pct(r['random_flagged'])} |"
        )
    return "\n".join(lines)
