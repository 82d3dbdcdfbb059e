"""What a published version's manifest says: items, sources, predictor, metrics, intervals.

`version_manifest` builds it (without the version number, time and file hashes, which
`versions.write_folder` adds); `interval`, `anchor_means` and `derived_sources` are the
pieces a suite's member readers reuse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from sparseeval._version import __version__
from sparseeval.consume.answers.ids import check_benchmark_name
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import KEY, PoolCheck
from sparseeval.consume.scoring.missing import MISSING_POLICY
from sparseeval.consume.sets.layout import KIND, PREDICTOR_DIR, SCHEMA_VERSION
from sparseeval.pipeline.settings import recorded


def version_manifest(
    benchmark: str,
    estimator,
    *,
    data_fingerprint: str,
    split_sizes: Mapping[str, int],
    metrics: Mapping[str, Mapping[str, float]],
    settings,
    item_sources: Mapping[str, Any] | None = None,
    report_inputs: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest of a fitted estimator as a version of `benchmark`, and the report inputs.

    Arguments as `versions.write_version`'s.
    """
    check_benchmark_name(benchmark)
    settings_dict = recorded(settings)
    items = [str(i) for i in estimator.anchor_ids_]
    if len(set(items)) != len(items):
        raise ValueError("anchor item ids must be unique")
    inputs = jsonable(dict(report_inputs or {}))
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "benchmark": benchmark,
        "library_version": __version__,
        "items": items,
        "item_sources": normalise_sources(item_sources, items) or derived_sources(items, benchmark),
        "n_anchors": len(items),
        "item_scale": getattr(estimator, "item_scale_", "binary"),  # graded: 2*score - 1
        "data_fingerprint": str(data_fingerprint),
        "split_sizes": {k: int(v) for k, v in dict(split_sizes).items()},
        "predictor": {
            "name": getattr(estimator, "predictor_name_", None),
            "valid_mae": jsonable(getattr(estimator, "valid_scores_", None)),
            "folder": PREDICTOR_DIR,
            "anchor_means": jsonable(anchor_means(estimator.predictor_, len(items))),
        },
        "metrics": jsonable({k: dict(v) for k, v in dict(metrics).items()}),
        "interval": jsonable(interval(estimator, settings_dict, inputs, (extra or {}).get(KEY))),
        "settings": jsonable(settings_dict),
    } | jsonable(dict(extra or {}))
    return manifest, inputs


def interval(estimator, settings: dict, inputs: dict, pool: Mapping | None = None) -> dict:
    """Conformal calibration from the estimator's residuals (a width that follows the
    estimate when their estimates are known), its coverage on test models, and the gate's
    coverage check (`gate.coverage_check`: widened when below nominal) of the interval a user
    gets: widened where the set's pool check (`pool`, its manifest entry) flags a test
    model (the inputs' test flags) and at least its top edge."""
    from sparseeval.pipeline.gate import coverage_check, test_flagged

    residuals = np.asarray(estimator.calibration_residuals_, dtype=np.float64)
    pred = getattr(estimator, "calibration_predictions_", None)
    level = float(settings.get("interval_level", 0.9))
    conformal = ConformalInterval.fit(residuals, level, pred=pred)
    test_pred, test_true = inputs.get("test_pred"), inputs.get("test_true")
    check = None
    if test_pred is not None and test_true is not None and len(test_true):
        check_of = PoolCheck.from_dict(pool) if pool else None
        conformal, check = coverage_check(conformal, test_pred, test_true, check_of,
                                          test_flagged(inputs))  # fmt: skip
    width = conformal.halfwidth if pred is None else conformal.halfwidths(pred)
    out = conformal.to_dict() | {
        "calibration_coverage": float(np.mean(np.abs(residuals) <= width)),
        "calibrated_on": getattr(estimator, "calibration_source_", "validation"),
        "missing_answers": MISSING_POLICY,
    }
    if check is not None:
        out["test_coverage"] = check["coverage_before"]
        out["n_test"] = len(test_true)
        out["coverage_check"] = check
    return out


def anchor_means(predictor, k: int) -> list[float] | None:
    """The training mean of each anchor (+-1 scale), read from the predictor's state."""
    try:
        _, arrays = predictor.state()
    except Exception:
        return None
    for key in ("mean", "m0/mean", "m1/mean", *(k for k in arrays if k.endswith("mean"))):
        a = arrays.get(key)
        if a is not None and np.asarray(a).shape == (k,):
            return [float(v) for v in np.asarray(a)]
    return None


def normalise_sources(item_sources, items) -> dict | None:
    """{item: {task, doc_id[, hash, id_kind]}} from a map of (task, doc_id) pairs or dicts
    (None if empty); an opaque id's entry has no task or doc id (`consume.answers.identity`)."""
    if not item_sources:
        return None
    out = {}
    for item in items:
        src = item_sources.get(item)
        if src is None:
            continue
        src = src if isinstance(src, Mapping) else dict(zip(("task", "doc_id"), src, strict=True))
        entry = {k: str(src[k]) for k in ("task", "hash", "id_kind") if src.get(k) is not None}
        if src.get("doc_id") is not None:
            entry["doc_id"] = int(src["doc_id"])
        out[item] = entry
    return out or None


def derived_sources(items, benchmark) -> dict | None:
    """(task, doc_id) of every anchor by the id rules of `consume.lm_eval.harness`, if all map."""
    from sparseeval.consume.lm_eval.harness import LmEvalError, item_source

    try:
        pairs = {i: item_source(i, benchmark) for i in items}
    except LmEvalError:
        return None
    return {i: {"task": t, "doc_id": d} for i, (t, d) in pairs.items()}


def jsonable(obj):
    """Arrays to lists, numpy scalars to floats, non-finite floats to None, paths to str."""
    if obj is None or isinstance(obj, bool | str | int):
        return obj
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    return str(obj)


__all__ = [
    "anchor_means",
    "derived_sources",
    "interval",
    "jsonable",
    "normalise_sources",
    "version_manifest",
]
