"""`sparseeval fit --out DIR`: each budget's fit as a promoted anchor set under DIR.

The folder then loads like a published one: `sparseeval predict --anchor-set DIR
--benchmark NAME`, `load_anchor_set(DIR, NAME)`. Each budget is a set of its own,
`DIR/{name}/k{budget}/v{N}/`, and `DIR/{name}/default` names the largest (the layout of
`sparseeval refresh`); fitting into the same folder again adds the next version and points
`latest` at it (a fit that is the live set over again adds none: `artifacts.unchanged_from`;
an old single set there is moved into the layout first: `versions.move_single_set`). Each
set carries the
pool check (`consume.scoring.flags`, fitted on its training models) and lists its models
(`consume.sets.models`), as a published one does.

Each set goes through the publish unit (`publish.publish_unit`: the same version writer,
promotion and rollback as `sparseeval refresh`) with no quality gate and no Hub mirror:
the sets are local and ungated (`UNGATED`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.scoring.flags import KEY as POOL_KEY
from sparseeval.consume.sets.models import MODELS_FILE, models_text
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.pool import test_flags
from sparseeval.pipeline.compare import Comparison
from sparseeval.pipeline.publish import candidate, publish_unit
from sparseeval.pipeline.records import Candidate, GateResult
from sparseeval.pipeline.versions import new_version, point_default, write_version

UNGATED = GateResult(True, "local fit: not gated (no live set compared, no Hub mirror)")
LOCAL_LINE = (
    "these anchor sets are local and ungated: no quality gate, no Hub mirror"
    " (sparseeval refresh publishes gated sets)"
)


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
    from sparseeval.consume.answers.identity import OPAQUE

    return {str(i): {"id_kind": OPAQUE} for i in items}


def benchmark_curves(matrix: ResponseMatrix, rows, item_mean: bool, sources=None):
    """Every item of the matrix with its curve fitted on `rows` (`method.item_curves`)."""
    from sparseeval.method.item_curves import matrix_curves

    return matrix_curves(matrix, rows, item_mean, sources or opaque_sources(matrix.item_ids))


def publish_fits(
    out_dir: str | Path,
    benchmark: str,
    comparison: Comparison,
    matrix: ResponseMatrix,
    settings,
    extra: dict[str, Any],
) -> list[Path]:
    """Write and promote each fitted budget of `comparison` as a set of `benchmark`.

    settings: a `Settings` (its `hub_repo` is not used: nothing is mirrored). extra:
    manifest entries (`target`, `provenance`). Returns the version folders.
    """
    several = len(comparison.fitted) > 1
    split = comparison.split
    ids = {role: matrix.model_ids[rows] for role, rows in
           (("test", split.test), ("train", split.train), ("valid", split.valid),
            ("calibration", split.calib))}  # fmt: skip
    curves = benchmark_curves(matrix, np.concatenate([split.train, split.valid]),
                              (extra.get("target") or {}).get("kind") == "items")  # fmt: skip
    files = {MODELS_FILE: models_text(ids)}
    local = settings.replace(hub_repo=None)  # never mirrored
    folders = []
    for k, fit in comparison.fitted.items():

        def write(k=k, fit=fit) -> tuple[Candidate, GateResult]:
            folder = _write(out_dir, benchmark, (k, fit), comparison, matrix, settings, extra,
                            files=files, curves=curves)  # fmt: skip
            return candidate(folder, benchmark, "", k if several else None), UNGATED

        folders.append(Path(publish_unit(local, write).path))
    point_default(out_dir, benchmark, max(comparison.fitted))
    return folders


def _write(out_dir, benchmark, fit, comparison, matrix, settings, extra, **kw) -> Path:
    """One budget's fit `(k, MatrixFit)` as a new, unpromoted version of `out_dir`'s k{k} set
    (`versions.new_version`; kw: its `files`, `curves`), with its pool check and test flags."""
    k, fit = fit
    split, est, pred, y = fit.split, fit.est, fit.pred, matrix.y
    flags = test_flags(fit.pool, matrix.values[split.test][:, est.anchors_], pred)
    decided = new_version(
        benchmark, est, data_fingerprint=matrix.fingerprint(),
        split_sizes=split.sizes(), metrics={"test": fit.test}, settings=settings,
        report_inputs={"test_pred": pred, "test_true": y[split.test], **flags,
                       "budget_rows": [r for r in comparison.rows if r["n_anchors"] == k]},
        extra=dict(extra) | {POOL_KEY: fit.pool.to_dict()},
        item_sources=opaque_sources(est.anchor_ids_), **kw,
    )  # fmt: skip
    return write_version(out_dir, decided, budget=k)


__all__ = [
    "LOCAL_LINE",
    "UNGATED",
    "benchmark_curves",
    "fit_provenance",
    "fit_target",
    "opaque_sources",
    "publish_fits",
]
