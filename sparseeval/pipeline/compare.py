"""`sparseeval fit`: SparseEval (the pipeline's recipe) and the baselines on one matrix,
compared on the test split."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sparseeval.method.baselines import BASELINES
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.metrics import evaluate
from sparseeval.method.model_files import save_fitted
from sparseeval.pipeline.recipe import FitSplit, MatrixFit, budgets_for, fit_matrix, split_step
from sparseeval.pipeline.settings import Settings

REFERENCES = ("all-items-ridge",)  # read every item whatever the budget: fitted once
REFERENCE_NOTE = (
    "note: all-items-ridge reads every item (a reference, not a budget); with the"
    " items' mean as the target it is exact by construction"
)


@dataclass
class Comparison:
    """Test-split metrics per (method, budget), plus SparseEval's fit per budget."""

    rows: list[dict] = field(default_factory=list)
    fitted: dict[int, MatrixFit] = field(default_factory=dict)
    split: FitSplit | None = None

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


def compare_methods(
    matrix: ResponseMatrix,
    budgets: Sequence[int],
    settings: Settings,
    baselines: Sequence[str] = tuple(BASELINES),
    paper: bool = False,
    progress: Callable[[str], None] = print,
    benchmark: str = "this matrix",
) -> Comparison:
    """SparseEval at every budget through the pipeline's recipe (`recipe.fit_matrix`: the
    same split, calibration and pool check as `sparseeval refresh`), and each baseline on
    the same training and validation models; every method scored on the test models.

    No method trains on the calibration models. `paper=True` adds the paper's recipe
    (`PaperSparseEval`), which is much slower. A matrix too small to split is a
    `recipe.NotEnoughModels` naming `benchmark`.
    """
    split = split_step(matrix, settings, benchmark)
    X, y = matrix.values.astype(np.float32), matrix.y
    tr, va, te = split.train, split.valid, split.test
    out = Comparison(split=split)
    for k in budgets_for(budgets, matrix.shape[1], settings.selection.max_anchor_share):
        progress(f"[{k} anchors] fitting sparseeval")
        start = time.perf_counter()
        fit = fit_matrix(matrix, settings.replace(n_anchors=k), benchmark, progress, split,
                         curve=False)  # fmt: skip
        out.rows.append({"method": "sparseeval", "n_anchors": k} | fit.test
                        | {"seconds": time.perf_counter() - start})  # fmt: skip
        out.fitted[k] = fit
        for name, method in _baselines(
            k, settings.splits.seed, baselines, paper, out.rows, progress
        ):
            start = time.perf_counter()
            progress(f"[{k} anchors] fitting {name}")
            method.fit(X[tr], y[tr], X_valid=X[va], y_valid=y[va])
            seconds = time.perf_counter() - start
            n = X.shape[1] if name in REFERENCES else k
            row = {"method": name, "n_anchors": n} | evaluate(method.predict(X[te]), y[te])
            out.rows.append(row | {"seconds": seconds})
    return out


def _baselines(k: int, seed: int, names: Sequence[str], paper: bool, rows: list, progress):
    """(name, unfitted method) of the baselines at budget `k`; a reference only once."""
    if paper:
        from sparseeval.method.paper import PaperSparseEval  # torch: only when asked

        yield "paper", PaperSparseEval(k, seed=seed, progress=progress)
    done = {r["method"] for r in rows}
    for name in names:
        if name not in REFERENCES or name not in done:
            yield name, BASELINES[name](n_anchors=k, seed=seed)


def _sizes(comparison: Comparison) -> dict | None:
    return None if comparison.split is None else comparison.split.sizes()


def write_fit(
    out_dir: str | Path, comparison: Comparison, matrix: ResponseMatrix, settings
) -> None:
    """Write each budget's fitted model under `out_dir/k{budget}/`, and `metrics.json`."""
    out_dir = Path(out_dir)
    for k, fit in comparison.fitted.items():
        save_fitted(fit.est, out_dir / f"k{k}")
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {
        "data_fingerprint": matrix.fingerprint(),
        "split": _sizes(comparison),
        "settings": settings.to_dict(),
        "test_metrics": comparison.rows,
    }
    (out_dir / "metrics.json").write_text(json.dumps(summary, indent=2))


__all__ = [
    "REFERENCES",
    "REFERENCE_NOTE",
    "Comparison",
    "compare_methods",
    "write_fit",
]
