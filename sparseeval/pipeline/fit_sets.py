"""`sparseeval fit --out DIR`: each budget's fit as a promoted anchor set under DIR.

The folder then loads like a published one: `sparseeval predict --anchor-set DIR
--benchmark NAME`, `load_anchor_set(DIR, NAME)`. One budget is `DIR/{name}/v{N}/`, several
are `DIR/{name}/k{budget}/v{N}/` (the layout of `sparseeval refresh`); fitting into the
same folder again adds the next version and points `latest` at it. Each set carries the
pool check (`consume.flags`, fitted on its training models) and lists its models
(`consume.set_models`), as a published one does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.flags import KEY as POOL_KEY
from sparseeval.consume.set_models import MODELS_FILE, models_text
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.metrics import evaluate
from sparseeval.method.pool import estimator_pool_check, test_flags
from sparseeval.pipeline.compare import Comparison
from sparseeval.pipeline.versions import set_latest, write_version


def fit_target(matrix: ResponseMatrix, targets: Path | None) -> dict[str, str]:
    """What the fit estimates, in words (the manifest's `target`)."""
    if targets is None:
        return {"kind": "items", "definition": f"mean over the {matrix.shape[1]:,} given items",
                "note": ""}  # fmt: skip
    return {"kind": "reported", "definition": f"the score column of {targets.name}", "note": ""}


def fit_provenance(data: Path | None, matrix: ResponseMatrix) -> dict[str, Any]:
    """Where the fit's results came from, in the shape of `Store.provenance`."""
    kind = "synthetic" if data is None else "fit"
    m, n = matrix.shape
    sources = ["built-in synthetic leaderboard" if data is None else str(data.resolve())]
    return {"synthetic": data is None,
            "kinds": {kind: {"n_results": m * n, "n_sources": 1, "sources": sources}}}  # fmt: skip


def opaque_sources(items) -> dict[str, dict]:
    """A fit's item ids are a table's column names (or synthetic): no lm-eval doc ids."""
    from sparseeval.consume.identity import OPAQUE

    return {str(i): {"id_kind": OPAQUE} for i in items}


def benchmark_curves(matrix: ResponseMatrix, rows, item_mean: bool, sources=None):
    """Every item of the matrix with its curve fitted on `rows` (`method.item_curves`)."""
    from sparseeval.method.item_curves import fit_curves

    ids = [str(i) for i in matrix.item_ids]
    return fit_curves(matrix.values[rows], ids, item_mean, sources or opaque_sources(ids))


def publish_fits(
    out_dir: str | Path,
    benchmark: str,
    comparison: Comparison,
    matrix: ResponseMatrix,
    settings,
    extra: dict[str, Any],
) -> list[Path]:
    """Write and promote each fitted budget of `comparison` as a set of `benchmark`.

    extra: manifest entries (`target`, `provenance`). Returns the version folders.
    """
    several = len(comparison.fitted) > 1
    split, calib, X, y = comparison.split, comparison.calib, matrix.values, matrix.y
    ids = {role: matrix.model_ids[rows] for role, rows in
           (("test", split.test), ("train", split.train), ("valid", split.valid),
            ("calibration", calib))}  # fmt: skip
    curves = benchmark_curves(matrix, np.concatenate([split.train, split.valid]),
                              (extra.get("target") or {}).get("kind") == "items")  # fmt: skip
    folders = []
    for k, est in comparison.fitted.items():
        pred = est.predict(X[split.test])
        check = estimator_pool_check(est, X[split.train], X[calib])
        flags = test_flags(check, X[split.test][:, est.anchors_], pred)
        budget = k if several else None
        folder = write_version(
            out_dir, benchmark, est, data_fingerprint=matrix.fingerprint(),
            split_sizes=split.sizes() | {"calibration": len(calib)},
            metrics={"test": evaluate(pred, y[split.test])}, settings=settings,
            report_inputs={"test_pred": pred, "test_true": y[split.test], **flags,
                           "budget_rows": [r for r in comparison.rows if r["n_anchors"] == k]},
            budget=budget, extra=dict(extra) | {POOL_KEY: check.to_dict()},
            item_sources=opaque_sources(est.anchor_ids_), files={MODELS_FILE: models_text(ids)},
            curves=curves,
        )  # fmt: skip
        set_latest(out_dir, benchmark, int(folder.name[1:]), budget)
        folders.append(folder)
    return folders
