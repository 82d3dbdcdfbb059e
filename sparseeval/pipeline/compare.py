"""Fit SparseEval and the baselines on one matrix and compare them on the test split."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sparseeval.method.baselines import BASELINES
from sparseeval.method.estimator import SparseEval
from sparseeval.method.matrix import MatrixError, ResponseMatrix
from sparseeval.method.metrics import evaluate
from sparseeval.method.model_files import save_fitted
from sparseeval.method.splits import Split, calibration_split, split_models
from sparseeval.pipeline.settings import Settings

REFERENCES = ("all-items-ridge",)  # read every item whatever the budget: fitted once
REFERENCE_NOTE = (
    "note: all-items-ridge reads every item (a reference, not a budget); with the"
    " items' mean as the target it is exact by construction"
)


@dataclass
class Comparison:
    """Test-split metrics per (method, budget), plus the fitted SparseEval per budget."""

    rows: list[dict] = field(default_factory=list)
    fitted: dict[int, SparseEval] = field(default_factory=dict)
    split: Split | None = None
    calib: np.ndarray | None = None  # rows that only calibrate SparseEval's intervals

    def table(self) -> str:
        """A plain-text table: one row per method and budget."""
        head = f"{'method':<17}{'anchors':>8}{'MAE (pts)':>11}{'tau':>8}{'rho':>8}{'max err':>9}"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            k = f"all {r['n_anchors']:,}" if r["method"] in REFERENCES else r["n_anchors"]
            lines.append(
                f"{r['method']:<17}{k:>8}{r['mae']:>11.3f}{r['kendall_tau']:>8.3f}"
                f"{r['spearman_rho']:>8.3f}{r['max_error']:>9.2f}"
            )
        if any(r["method"] in REFERENCES for r in self.rows):
            lines.append(REFERENCE_NOTE)
        return "\n".join(lines)


def budget_that_fits(budget: int, n_items: int) -> int:
    """`budget` capped at `n_items - 1` (at least one item stays out of the anchors); a
    ValueError, said in one line, when the pool is too small to select from."""
    if n_items < 2:
        raise MatrixError(f"{n_items} item(s): selecting anchors needs at least 2 items")
    return min(budget, n_items - 1)


def budgets_for(budgets: Sequence[int], n_items: int) -> list[int]:
    """The budgets fitted on a pool of `n_items`: each capped to fit (`budget_that_fits`),
    in order, without repeats."""
    return list(dict.fromkeys(budget_that_fits(k, n_items) for k in budgets if k > 0))


def clamp_note(budgets: Sequence[int], n_items: int) -> str:
    """`budget 100 does not fit 100 items: fitting 99 anchors ...` ('' when all fit)."""
    over = [k for k in budgets if k >= n_items]
    if not over:
        return ""
    k = budget_that_fits(max(over), n_items)
    listed = ", ".join(map(str, over))
    which = f"budget {listed} does" if len(over) == 1 else f"budgets {listed} do"
    return (f"{which} not fit {n_items:,} items: fitting {k} anchors"
            " (at least one item stays out of the anchors)")  # fmt: skip


def compare_methods(
    matrix: ResponseMatrix,
    budgets: Sequence[int],
    settings: Settings,
    baselines: Sequence[str] = tuple(BASELINES),
    split: Split | None = None,
    paper: bool = False,
    progress: Callable[[str], None] = print,
) -> Comparison:
    """Fit every method at every budget on train/valid rows; score each on test rows.

    As in the pipeline, up to `settings.n_calib` training models (at most a fifth) are
    set aside to calibrate SparseEval's intervals (`SparseEval.calibrate`); no method
    trains on them. With too few for that (under 10), the intervals come from
    `SparseEval.cross_calibrate` instead (5 extra fits, cheap at that size), never from
    the validation residuals, which under-cover.
    `paper=True` adds the paper's recipe (`PaperSparseEval`), which is much slower.
    """
    split = split or split_models(
        matrix.model_ids, settings.n_test, settings.n_valid, settings.seed, settings.stable_split
    )
    X, y = matrix.values.astype(np.float32), matrix.y
    tr, calib = calibration_split(matrix.model_ids, split.train, **settings.calibration_args())
    va, te = split.valid, split.test
    split = Split(tr, va, te)
    out = Comparison(split=split, calib=calib)
    for k in budgets_for(budgets, matrix.shape[1]):
        methods = {"sparseeval": SparseEval.from_settings(settings, n_anchors=k, progress=progress)}
        if paper:
            from sparseeval.method.paper import PaperSparseEval  # torch: only when asked

            methods["paper"] = PaperSparseEval(k, seed=settings.seed, progress=progress)
        methods |= {b: BASELINES[b](n_anchors=k, seed=settings.seed) for b in baselines
                    if b not in REFERENCES or not out.rows}  # fmt: skip
        for name, method in methods.items():
            start = time.perf_counter()
            progress(f"[{k} anchors] fitting {name}")
            kw = {"item_ids": matrix.item_ids} if isinstance(method, SparseEval) else {}
            method.fit(X[tr], y[tr], X_valid=X[va], y_valid=y[va], **kw)
            seconds = time.perf_counter() - start
            if name == "sparseeval":
                _calibrate(method, X, y, tr, va, calib, kw)
            elif isinstance(method, SparseEval) and len(calib):
                method.calibrate(X[calib], y[calib])
            n = X.shape[1] if name in REFERENCES else k
            row = {"method": name, "n_anchors": n} | evaluate(method.predict(X[te]), y[te])
            out.rows.append(row | {"seconds": seconds})
        out.fitted[k] = methods["sparseeval"]
    return out


def _calibrate(est: SparseEval, X, y, tr, va, calib, kw) -> None:
    if len(calib):
        est.calibrate(X[calib], y[calib])
    elif min(len(tr), len(va)) >= 5:
        est.cross_calibrate(X[tr], y[tr], X[va], y[va], folds=5, **kw)


CHEAP_BASELINES = ("random", "random+ridge", "greedy+ridge")


def baseline_curve(
    X: np.ndarray, y: np.ndarray, split: Split, n_anchors: int, seed: int = 0
) -> list[dict]:
    """Test MAE / tau of the cheap baselines at a quarter, half and all of `n_anchors`.

    The rows feed the report's "accuracy against anchor budget" plot.
    """
    rows = []
    for k in sorted({max(1, n_anchors // 4), max(1, n_anchors // 2), n_anchors}):
        for name in CHEAP_BASELINES:
            est = BASELINES[name](n_anchors=k, seed=seed).fit(
                X[split.train], y[split.train], X[split.valid], y[split.valid]
            )
            rows.append(
                {"method": name, "n_anchors": k}
                | evaluate(est.predict(X[split.test]), y[split.test])
            )
    return rows


def _sizes(comparison: Comparison) -> dict | None:
    if comparison.split is None:
        return None
    calib = 0 if comparison.calib is None else len(comparison.calib)
    return comparison.split.sizes() | {"calibration": calib}


def write_fit(
    out_dir: str | Path, comparison: Comparison, matrix: ResponseMatrix, settings
) -> None:
    """Write each budget's fitted model under `out_dir/k{budget}/`, and `metrics.json`."""
    out_dir = Path(out_dir)
    for k, est in comparison.fitted.items():
        save_fitted(est, out_dir / f"k{k}")
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {
        "data_fingerprint": matrix.fingerprint(),
        "split": _sizes(comparison),
        "settings": settings.to_dict(),
        "test_metrics": comparison.rows,
    }
    (out_dir / "metrics.json").write_text(json.dumps(summary, indent=2))
