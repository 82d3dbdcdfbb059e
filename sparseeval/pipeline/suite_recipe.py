"""The suite's recipe: common models -> split -> `SuiteSparseEval` -> calibrate -> test.

fit_suite     the models every benchmark has, split by model id as one benchmark is
              (`recipe.split_step`), anchors per benchmark (each benchmark's own fit
              reused when it saw the same inputs) and joint readers, intervals from
              calibration models, test metrics per benchmark and for the average
write_suite   the fitted suite as `published/suite/vN/` (`sparseeval.consume.suite_set` reads it)
Publishing it (its gate, the candidate, the step's line): `pipeline.suite_publish`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from sparseeval.consume.flags import KEY as POOL_KEY
from sparseeval.consume.hashing import fingerprint
from sparseeval.consume.next_items import KEY as CURVES_KEY
from sparseeval.consume.suite_set import SUITE, joint_item
from sparseeval.method import metrics
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.pool import suite_pool_checks
from sparseeval.method.predictors import BlendPredictor
from sparseeval.method.suite import AVERAGE, SuiteSparseEval, suite_average
from sparseeval.pipeline import versions
from sparseeval.pipeline.artifacts import (
    TRAINING_FIELDS,
    code_version,
    matrix_of,
    read_once,
    settings_subset,
)
from sparseeval.pipeline.identity import anchor_sources
from sparseeval.pipeline.manifest import anchor_means, derived_sources, interval
from sparseeval.pipeline.recipe import NotEnoughModels, split_step
from sparseeval.pipeline.records import MatrixInfo
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_reuse import reusable_fits

MIN_BENCHMARKS = 2


@dataclass
class SuiteFit:
    """A fitted suite with what publishing it needs."""

    suite: SuiteSparseEval
    data_fingerprint: str
    split_sizes: dict[str, int]
    test_pred: dict[str, np.ndarray]
    test_true: dict[str, np.ndarray]
    own_test_pred: dict[str, np.ndarray]
    test_ids: list[str]
    pool_checks: dict[str, dict] = field(default_factory=dict)  # method.pool.suite_pool_checks
    curves: dict[str, Any] = field(default_factory=dict)  # {benchmark: its ItemCurves}

    def test_metrics(self) -> dict[str, dict[str, float]]:
        """Test metrics of each benchmark's joint reader, its own reader, and the average."""
        out = {b: metrics.evaluate(self.test_pred[b], self.test_true[b]) for b in self.test_pred}
        return out | {
            f"{b} (own anchors only)": metrics.evaluate(p, self.test_true[b])
            for b, p in self.own_test_pred.items()
        }


def throttled(say: Callable[[str], None], seconds: float = 15.0) -> Callable[[str], None]:
    """`say`, passing on at most one line per `seconds` (the first one at once)."""
    last = [-float("inf")]

    def passed_on(line: str) -> None:
        if time.monotonic() - last[0] >= seconds:
            last[0] = time.monotonic()
            say(line)

    return passed_on


def common_models(matrices: Mapping[str, ResponseMatrix]) -> dict[str, ResponseMatrix]:
    """Each matrix restricted to the models every benchmark has, in one sorted order.

    Matrices already aligned (the same sorted model ids everywhere) come back as they are.
    """
    ids = [list(m.model_ids) for m in matrices.values()]
    if all(i == ids[0] for i in ids) and ids[0] == sorted(set(ids[0])):
        return dict(matrices)
    models = sorted(set.intersection(*map(set, ids)))
    out = {}
    for b, m in matrices.items():
        row = {name: i for i, name in enumerate(m.model_ids)}
        out[b] = m.rows(np.array([row[name] for name in models], dtype=np.int64))
    return out


def fit_suite(
    matrices: Mapping[str, ResponseMatrix],
    settings: Settings,
    progress: Callable[[str], None] | None = None,
    data_fingerprint: str | None = None,
    benchmark_fits: Mapping[str, str | Path] | None = None,
) -> SuiteFit:
    """Fit the suite on the models every benchmark has, at the largest anchor budget.

    A benchmark's own fit (`recipe.fit_step`) is reused instead of selecting its anchors
    again when it saw exactly the suite's inputs for that benchmark (`same_fit_inputs`):
    the same result, bit for bit. benchmark_fits: {benchmark: its fit's model folder};
    None looks each up in `settings.artifacts_dir` by its fit key.
    """
    from threadpoolctl import threadpool_limits

    from sparseeval.method.estimator import SparseEval
    from sparseeval.method.item_curves import fit_curves

    if len(matrices) < MIN_BENCHMARKS:
        raise NotEnoughModels(f"suite: needs {MIN_BENCHMARKS} benchmarks, has {len(matrices)}")
    aligned = common_models(matrices)
    first = next(iter(aligned.values()))
    split_settings = replace(settings, calibration="split")  # the suite has no cross-fit
    split = split_step(first, split_settings, f"suite ({len(aligned)} benchmarks, models in all)")
    say = progress or (lambda s: None)
    steps = throttled(say)  # a selection's refinement steps: a line every 15 s at most
    rows = lambda r: ({b: m.values[r] for b, m in aligned.items()},  # noqa: E731
                      {b: m.y[r] for b, m in aligned.items()})  # fmt: skip
    k = max(settings.budgets)
    suite = SuiteSparseEval(k, SparseEval.from_settings(settings, n_anchors=k, progress=steps),
                            progress=say)  # fmt: skip
    prints = {b: m.fingerprint() for b, m in aligned.items()}
    fitted = reusable_fits(matrices, aligned, prints, split, settings, suite, benchmark_fits)
    item_ids = {b: m.item_ids for b, m in aligned.items()}
    with threadpool_limits(limits=1):
        suite.fit(*rows(split.train), *rows(split.valid), item_ids=item_ids, fitted=fitted)
    if len(split.calib):
        suite.calibrate(*rows(split.calib))
    pools = suite_pool_checks(suite, rows(split.train)[0], rows(split.calib)[0])
    X_test, y_test = rows(split.test)
    pred = suite.predict(X_test)
    own = {b: suite.estimators_[b].predict(X_test[b]) for b in suite.benchmarks_}
    return SuiteFit(
        suite,
        data_fingerprint or fingerprint(*(f"{b}:{fp}" for b, fp in sorted(prints.items()))),
        split.sizes(),
        pred,
        y_test | {AVERAGE: suite_average(y_test)},
        own,
        [str(m) for m in first.model_ids[split.test]],
        {name: check.to_dict() for name, check in pools.items()},
        {b: fit_curves(m.values[split.train], m.item_ids) for b, m in aligned.items()},
    )


def write_suite(
    root: str | Path,
    fit: SuiteFit,
    settings: Settings,
    signing_key=None,
    matrices_key: str = "",
    matrix_paths: Mapping[str, str] | None = None,
    about: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """Write the fitted suite as a new, unpromoted version of `{root}/suite` (`set_latest` it).

    matrices_key: `matrices_key` of the matrices it was fit on (lets a later run see it is
    up to date without reading them); matrix_paths: {benchmark: its matrix file}, whose
    items' identity the members' `item_sources` carry (`pipeline.identity`); about:
    {benchmark: {"target", "provenance"}} (`members_about`): what each member estimates and
    where its data came from, recorded per member and for the suite average.
    """
    about = dict(about or {})
    suite = fit.suite
    items = [joint_item(b, i) for b in suite.benchmarks_ for i in suite.estimators_[b].anchor_ids_]
    level = {"interval_level": settings.interval_level}

    def reader(folder: str, predictor, b: str, own: bool) -> dict:
        pred = (fit.own_test_pred if own else fit.test_pred)[b]
        inputs = {"test_pred": pred, "test_true": fit.test_true[b]}
        prefix = "own_" if own else ""
        calib = SimpleNamespace(
            calibration_residuals_=getattr(suite, f"{prefix}calibration_residuals_")[b],
            calibration_predictions_=getattr(suite, f"{prefix}calibration_predictions_")[b],
            calibration_source_=suite.calibration_source_,
        )
        k = len(suite.estimators_[b].anchors_) if own else len(items)
        out = {"folder": folder, "interval": interval(calib, level, inputs),
               "anchor_means": anchor_means(predictor, k),
               POOL_KEY: fit.pool_checks.get(f"{b}/{'own' if own else 'joint'}")}  # fmt: skip
        if own:
            ids = [str(i) for i in suite.estimators_[b].anchor_ids_]
            path = (matrix_paths or {}).get(b)
            out["item_sources"] = (path and anchor_sources(path, ids, b)) or derived_sources(ids, b)
        return out

    members, described, curves = {}, {}, member_curves(fit, matrix_paths, about)
    for b in suite.benchmarks_:
        joint, own = f"members/{b}/joint", f"members/{b}/own"
        members[joint] = suite.readers_[b]
        members[own] = suite.estimators_[b].predictor_
        described[b] = {
            "items": [str(i) for i in suite.estimators_[b].anchor_ids_],
            "reader": suite.reader_names_[b],
            "valid_mae": suite.valid_scores_[b],
            "joint": reader(joint, suite.readers_[b], b, False),
            "own": reader(own, members[own], b, True),
            **about.get(b, {}),
        }
        if b in curves:
            described[b]["own"][CURVES_KEY] = curves[b].manifest_entry() | {"folder": f"items/{b}"}
    n = len(suite.benchmarks_)
    average = SimpleNamespace(
        anchor_ids_=items,
        predictor_=BlendPredictor([suite.readers_[b] for b in suite.benchmarks_], [1 / n] * n),
        predictor_name_="suite average (mean of the joint readers)",
        calibration_residuals_=suite.calibration_residuals_[AVERAGE],
        calibration_predictions_=suite.calibration_predictions_[AVERAGE],
        calibration_source_=suite.calibration_source_,
    )
    return versions.write_version(
        root, SUITE, average,
        data_fingerprint=fit.data_fingerprint,
        split_sizes=fit.split_sizes,
        metrics={"test": metrics.evaluate(fit.test_pred[AVERAGE], fit.test_true[AVERAGE])},
        settings=settings,
        report_inputs={"test_pred": fit.test_pred[AVERAGE], "test_true": fit.test_true[AVERAGE]},
        signing_key=signing_key,
        members=members,
        member_curves={f"items/{b}": c for b, c in curves.items()},
        extra={"suite": {"benchmarks": list(suite.benchmarks_), "members": described,
                         "test_metrics": fit.test_metrics(), "matrices_key": matrices_key},
               POOL_KEY: fit.pool_checks.get(AVERAGE)} | suite_about(about),
    )  # fmt: skip


def member_curves(fit: SuiteFit, matrix_paths, about) -> dict[str, Any]:
    """{benchmark: its items' curves}, with their sources and whether they are its target."""
    out = {}
    for b, c in fit.curves.items():
        path = (matrix_paths or {}).get(b)
        sources = path and anchor_sources(path, c.items, b)
        target = (about or {}).get(b, {}).get("target") or {}
        item_mean = target.get("kind", "items") == "items"  # unknown: the mean it was fit on
        out[b] = replace(c, item_mean=item_mean, sources=sources or None)
    return out


def members_about(matrices: Mapping[str, MatrixInfo]) -> dict[str, dict[str, Any]]:
    """{benchmark: {"target", "provenance"}} of the matrices (what `write_suite` records)."""
    return {b: {"target": dict(m.target), "provenance": dict(m.provenance)}
            for b, m in matrices.items() if m.target or m.provenance}  # fmt: skip


def suite_about(about: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The suite average's `target` and `provenance`: the mean of the members' targets, and
    every member's sources (synthetic when any member is). {} when nothing is known."""
    if not about:
        return {}
    targets = {b: (a.get("target") or {}).get("definition") for b, a in about.items()}
    words = "; ".join(f"{b}: {t}" for b, t in targets.items() if t)
    kinds: dict[str, dict[str, Any]] = {}
    for a in about.values():
        for kind, k in ((a.get("provenance") or {}).get("kinds") or {}).items():
            into = kinds.setdefault(kind, {"n_results": 0, "n_sources": 0, "sources": []})
            into["n_results"] += int(k.get("n_results", 0))
            into["n_sources"] += int(k.get("n_sources", 0))
            into["sources"] += list(k.get("sources", []))[: 20 - len(into["sources"])]
    synthetic = any((a.get("provenance") or {}).get("synthetic") for a in about.values())
    definition = f"the mean of the {len(about)} benchmarks' estimates" + (
        f" ({words})" if words else ""
    )
    return {"target": {"kind": "suite average", "definition": definition},
            "provenance": {"synthetic": synthetic, "kinds": kinds}}  # fmt: skip


def matrices_key(matrices: Mapping[str, MatrixInfo], settings: Settings) -> str:
    """Every benchmark's matrix (by fingerprint), the training settings and the code."""
    return fingerprint(
        *(f"{b}:{m.fingerprint}" for b, m in sorted(matrices.items())),
        str(settings_subset(settings, TRAINING_FIELDS)),
        code_version(),
    )


def aligned_matrices(
    matrices: Mapping[str, MatrixInfo], settings: Settings
) -> dict[str, ResponseMatrix]:
    """The matrices over the models every benchmark has (`common_models`), made once a run."""
    key = matrices_key(matrices, settings)
    load = lambda: common_models({b: matrix_of(m) for b, m in matrices.items()})  # noqa: E731
    return read_once("suite-aligned", settings.artifacts_dir, key, load)


def suite_key(matrices: Mapping[str, MatrixInfo], settings: Settings) -> str:
    """What a suite is built from: the models every benchmark has, their answers, settings, code.

    New models in one benchmark only leave it unchanged. Keys the ledger of refusals.
    """
    key = matrices_key(matrices, settings)
    aligned = lambda: aligned_matrices(matrices, settings)  # noqa: E731
    make = lambda: fingerprint(  # noqa: E731
        *(f"{b}:{m.fingerprint()}" for b, m in sorted(aligned().items())),
        str(settings_subset(settings, TRAINING_FIELDS)), code_version(),
    )  # fmt: skip
    return read_once("suite-key", settings.artifacts_dir, key, make)


def matrix_info(benchmark: str, path: str | Path) -> MatrixInfo:
    """The record of a matrix file written by `save_matrix` (its stored fingerprint)."""
    with np.load(path, allow_pickle=False) as npz:
        fp, (n_models, n_items) = str(npz["fingerprint"]), npz["values"].shape
    return MatrixInfo(benchmark, str(path), fp, int(n_models), int(n_items), 0, "")
