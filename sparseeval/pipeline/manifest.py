"""What a published version says and holds, decided before anything is written.

`new_version` decides a version of a fitted estimator: its manifest (items, sources,
predictor, metrics, and the interval, widened here when the coverage check asks for it),
the report's inputs, and the predictors, item curves and files that go into its folder.
`versions.write_version` then only writes it (adding the version number, time and file
hashes), and renders the report after. `interval`, `anchor_means` and `derived_sources`
are the pieces a suite's member readers reuse.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparseeval._version import __version__
from sparseeval.consume.answers.ids import check_benchmark_name
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import KEY, PoolCheck
from sparseeval.consume.scoring.missing import MISSING_POLICY
from sparseeval.consume.scoring.next_items import CURVES_DIR
from sparseeval.consume.scoring.next_items import KEY as CURVES_KEY
from sparseeval.consume.sets.layout import KIND, PREDICTOR_DIR, SCHEMA_VERSION
from sparseeval.pipeline.settings import recorded


@dataclass(frozen=True)
class NewVersion:
    """A version decided and not yet written (`new_version`; `versions.write_version`).

    manifest: everything but the version number, time and file hashes; inputs: the
    report's (sealed as `report_inputs.json`); predictors, curves: {folder: predictor or
    `ItemCurves`} saved in the version folder; files: {name: text} written beside them.
    """

    manifest: dict[str, Any]
    inputs: dict[str, Any]
    predictors: Mapping[str, Any]
    curves: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)

    @property
    def benchmark(self) -> str:
        return self.manifest["benchmark"]

    @property
    def n_anchors(self) -> int:
        return self.manifest["n_anchors"]


def new_version(
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
    members: Mapping[str, Any] | None = None,
    curves=None,
    member_curves: Mapping[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
) -> NewVersion:
    """A fitted estimator decided as a version of `benchmark` (nothing written).

    estimator: a fitted `SparseEval` (needs `anchor_ids_`, `predictor_`,
    `calibration_residuals_`; `predictor_name_` and `valid_scores_` are recorded if present).
    metrics: {split: {metric: value}}, e.g. {"test": {"mae": 1.2, "kendall_tau": .9}}.
    settings: a `Settings` (or a plain dict); `interval_level` sets the interval level.
    item_sources: optional {item id: (task, doc_id)} for the lm-eval round trip; when absent
    and every id maps by the rules of `sparseeval.consume.lm_eval.harness` (e.g. "17",
    "gsm8k:17"), the derived map is recorded.
    report_inputs: optional dict for the report: `test_pred`, `test_true` (arrays on
    the test models), `budget_rows` ([{method, n_anchors, mae, kendall_tau}]),
    `drift_rows` ([{version, mae, n_models, ...}]); the interval's coverage check reads them.
    extra: entries added to the manifest; members: {relative folder: predictor} saved
    beside `predictor/` (a suite's per-benchmark readers); curves: the benchmark's items and
    their curves (`ItemCurves`, saved in `items/` for `AnchorSet.next_items` and the
    corrected estimate); member_curves: {relative folder: ItemCurves} more of them (a
    suite's members'); files: {file name: text} written beside them (e.g. the set's models,
    `consume.sets.models`).
    """
    manifest, inputs = _manifest(
        benchmark, estimator, data_fingerprint=data_fingerprint, split_sizes=split_sizes,
        metrics=metrics, settings=settings, item_sources=item_sources,
        report_inputs=report_inputs, extra=extra,
    )  # fmt: skip
    if curves is not None:
        manifest[CURVES_KEY] = curves.manifest_entry()
    saved = ({CURVES_DIR: curves} if curves is not None else {}) | dict(member_curves or {})
    predictors = {PREDICTOR_DIR: estimator.predictor_} | dict(members or {})
    return NewVersion(manifest, inputs, predictors, saved, dict(files or {}))


def _manifest(
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
    """The manifest of a fitted estimator as a version of `benchmark`, and the report inputs."""
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
    "NewVersion",
    "anchor_means",
    "derived_sources",
    "interval",
    "jsonable",
    "new_version",
    "normalise_sources",
]
