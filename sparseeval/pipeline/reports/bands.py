"""The report's coverage, width and signed error by band of the estimate (and of the truth).

A user sees the estimate, not the truth: the table by estimate band is the one to act on
(does a 40% estimate get an honest interval? is it biased?). The table by true-score third
shows what the selection of strong or weak models does.
"""

from __future__ import annotations

from sparseeval.consume.scoring.conformal import ConformalInterval, by_band


def band_rows(conf: ConformalInterval, pred, true, bounds=None) -> dict[str, list[dict]]:
    """{"estimate": rows by third of the estimate, "truth": rows by third of the truth};
    `bounds`: each model's (low, high) as a user gets them (`reports.flags.test_bounds`)."""
    return {"estimate": by_band(conf, pred, true, bounds=bounds),
            "truth": by_band(conf, pred, true, key=true, bounds=bounds)}  # fmt: skip


def band_blocks(conf: ConformalInterval, rows: dict[str, list[dict]], plot) -> list[tuple]:
    """Report blocks: the plot, then one table per kind of band."""
    head = ["third of the {}", "range (%)", "models", f"coverage at {100 * conf.level:.0f}%",
            "mean half-width (points)", "signed error (points)"]  # fmt: skip
    blocks: list[tuple] = [("h2", "Coverage, width and bias by estimate band (test models)")]
    blocks.append(("img", plot) if plot is not None else ("p", "_(no test predictions)_"))
    for kind, what in (("estimate", "estimate"), ("truth", "true score")):
        table = [_cells(r) for r in rows[kind]]
        blocks.append(("table", [head[0].format(what), *head[1:]], table))
    blocks.append(("p", "Signed error is estimate minus truth (positive: over-estimated), in "
                   "accuracy points. Bands hold equal numbers of test models."))  # fmt: skip
    return blocks


def _cells(r: dict) -> list:
    return [r["band"], f"{r['from']:.1f}-{r['to']:.1f}", r["n"], f"{100 * r['coverage']:.1f}%",
            f"{r['halfwidth']:.2f}", f"{r['signed_error']:+.2f}"]  # fmt: skip


__all__ = [
    "band_blocks",
    "band_rows",
]
