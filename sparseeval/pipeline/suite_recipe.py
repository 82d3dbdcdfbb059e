"""The suite's recipe: common models -> split -> `SuiteSparseEval` -> calibrate -> test.

fit_suite     the models every benchmark has, split by model id as one benchmark is
              (`recipe.split_step`), anchors per benchmark (each benchmark's own fit
              reused when it saw the same inputs) and joint readers, intervals from
              calibration models, test metrics per benchmark and for the average
suite_key     what a suite is built from (keys the ledger of refusals)

A recipe computes; publishing decides: `pipeline.suite_publish` writes the fitted suite as
a candidate and `assess.suite_gate` compares it with the live suite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.hashing import fingerprint
from sparseeval.method import metrics
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.pool import suite_pool_checks, test_flags
from sparseeval.method.suite import AVERAGE, SuiteSparseEval, suite_average
from sparseeval.pipeline.artifacts import (
    TRAINING_FIELDS,
    code_version,
    matrix_of,
    read_once,
    settings_subset,
)
from sparseeval.pipeline.progress import throttled
from sparseeval.pipeline.recipe import FitSplit, NotEnoughModels, split_step
from sparseeval.pipeline.records import MatrixInfo
from sparseeval.pipeline.settings import Settings

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
    models: dict[str, list[str]] = field(default_factory=dict)  # {role: model ids} (models.json)
    test_flags: dict[str, dict] = field(default_factory=dict)  # per reader, `reader_test_flags`

    def test_metrics(self) -> dict[str, dict[str, float]]:
        """Test metrics of each benchmark's joint reader, its own reader, and the average."""
        out = {b: metrics.evaluate(self.test_pred[b], self.test_true[b]) for b in self.test_pred}
        return out | {
            f"{b} (own anchors only)": metrics.evaluate(p, self.test_true[b])
            for b, p in self.own_test_pred.items()
        }


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
    None looks each up in `settings.paths.artifacts_dir` by its fit key.
    """
    from threadpoolctl import threadpool_limits

    from sparseeval.method.estimator import SparseEval
    from sparseeval.method.item_curves import matrix_curves

    if len(matrices) < MIN_BENCHMARKS:
        raise NotEnoughModels(f"suite: needs {MIN_BENCHMARKS} benchmarks, has {len(matrices)}")
    aligned = common_models(matrices)
    first = next(iter(aligned.values()))
    split_settings = settings.replace(calibration="split")  # the suite has no cross-fit
    split = split_step(first, split_settings, f"suite ({len(aligned)} benchmarks, models in all)")
    say = progress or (lambda s: None)
    steps = throttled(say)  # a selection's init and refinement lines: one every 15 s at most
    rows = lambda r: ({b: m.values[r] for b, m in aligned.items()},  # noqa: E731
                      {b: m.y[r] for b, m in aligned.items()})  # fmt: skip
    k = max(settings.selection.budgets)
    one = SparseEval.from_config(settings.values(), n_anchors=k, progress=steps)
    share = settings.selection.max_anchor_share
    suite = SuiteSparseEval(k, one, progress=say, max_anchor_share=share)
    prints = {b: m.fingerprint() for b, m in aligned.items()}
    fitted = reusable_fits(matrices, aligned, prints, split, settings, suite, benchmark_fits)
    item_ids = {b: m.item_ids for b, m in aligned.items()}
    with threadpool_limits(limits=1):
        suite.fit(*rows(split.train), *rows(split.valid), item_ids=item_ids, fitted=fitted)
    if len(split.calib):
        say(f"calibrating the readers' intervals on {len(split.calib):,} calibration models")
        suite.calibrate(*rows(split.calib))
    (X_train, y_train), X_calib = rows(split.train), rows(split.calib)[0]
    say(
        "fitting the readers' pool checks and top edges (each reader refitted without the"
        " strongest models)"
    )
    pools = suite_pool_checks(
        suite,
        X_train,
        X_calib,
        y_train,
        settings.drift.interval_level,
        settings.pool.edge_tail,
        rate=settings.pool.flag_rate,
    )
    X_test, y_test = rows(split.test)
    pred = suite.predict(X_test)
    own = {b: suite.estimators_[b].predict(X_test[b]) for b in suite.benchmarks_}
    flags = reader_test_flags(suite, pools, X_test, pred, own)
    return SuiteFit(
        suite,
        data_fingerprint or fingerprint(*(f"{b}:{fp}" for b, fp in sorted(prints.items()))),
        split.sizes(),
        pred,
        y_test | {AVERAGE: suite_average(y_test)},
        own,
        [str(m) for m in first.model_ids[split.test]],
        {name: check.to_dict() for name, check in pools.items()},
        {b: matrix_curves(m, split.train, m.targets is None) for b, m in aligned.items()},
        {role: [str(m) for m in first.model_ids[rows]] for role, rows in
         (("test", split.test), ("train", split.train), ("valid", split.valid),
          ("calibration", split.calib))},
        flags,
    )  # fmt: skip


def reader_test_flags(suite, pools, X_test, pred, own) -> dict[str, dict[str, np.ndarray]]:
    """Per reader (the keys of `pools`), its test models' flags (`method.pool.test_flags`):
    what the gate's coverage check and the report widen, as `predict` does."""
    XA = suite.joint_input(X_test)
    out = {AVERAGE: test_flags(pools[AVERAGE], XA, pred[AVERAGE])}
    for b in suite.benchmarks_:
        out[f"{b}/joint"] = test_flags(pools[f"{b}/joint"], XA, pred[b])
        anchors = X_test[b][:, suite.estimators_[b].anchors_]
        out[f"{b}/own"] = test_flags(pools[f"{b}/own"], anchors, own[b])
    return out


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
    return read_once("suite-aligned", settings.paths.artifacts_dir, key, load)


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
    return read_once("suite-key", settings.paths.artifacts_dir, key, make)


def matrix_info(benchmark: str, path: str | Path) -> MatrixInfo:
    """The record of a matrix file written by `save_matrix` (its stored fingerprint)."""
    with np.load(path, allow_pickle=False) as npz:
        fp, (n_models, n_items) = str(npz["fingerprint"]), npz["values"].shape
    return MatrixInfo(benchmark, str(path), fp, int(n_models), int(n_items), 0, "")


# -- reusing each benchmark's own fit when it saw the very same inputs (bit for bit) ----


def reusable_fits(
    matrices: Mapping[str, ResponseMatrix],
    aligned: Mapping[str, ResponseMatrix],
    prints: Mapping[str, str],
    split: FitSplit,
    settings: Settings,
    suite: SuiteSparseEval,
    folders: Mapping[str, str | Path] | None = None,
) -> dict:
    """{benchmark: its own saved fit as an estimator} for those whose inputs are the suite's.

    prints: the aligned matrices' fingerprints. A fit saved without the state a reuse
    needs, or with other estimator parameters, is not reused (`model_files.load_estimator`).
    """
    from sparseeval.method.model_files import load_estimator

    out = {}
    for b, m in aligned.items():
        if folders is not None:
            folder = folders.get(b)
        elif m is matrices[b]:  # aligned unchanged: the benchmark's own matrix, maybe fitted
            folder = _own_fit_folder(b, prints[b], settings)
        else:
            folder = None  # other models than the benchmark's own fit saw
        if folder is None or not same_fit_inputs(folder, m, prints[b], split):
            continue
        est = load_estimator(folder, suite.benchmark_template(m.shape[1], m.scale))
        if est is not None:
            out[b] = est
    return out


def _own_fit_folder(benchmark: str, matrix_fingerprint: str, settings: Settings) -> Path | None:
    """Where `recipe.fit_step` saved this matrix's fit at the suite's budget, if it did (and
    its seal holds: `recipe.cached_fit`)."""
    from sparseeval.pipeline.artifacts import artifact_path, fit_key
    from sparseeval.pipeline.recipe import cached_fit

    key = fit_key(
        benchmark, matrix_fingerprint, settings.replace(n_anchors=max(settings.selection.budgets))
    )
    folder = artifact_path(settings.paths.artifacts_dir, "model", key)
    return folder if cached_fit(folder, key, matrix_fingerprint) else None


def same_fit_inputs(folder: str | Path, matrix: ResponseMatrix, matrix_fingerprint: str,
                    split: FitSplit) -> bool:  # fmt: skip
    """Whether the fit in `folder` saw this matrix (same fingerprint: ids, answers, targets)
    with these training and validation models (model ids compared in order)."""
    from sparseeval.pipeline.recipe import load_evaluation
    from sparseeval.pipeline.records import FitInfo

    folder = Path(folder)
    if FitInfo.load(folder / "summary.json").matrix_fingerprint != matrix_fingerprint:
        return False
    saved = load_evaluation(folder)
    return all(
        np.array_equal(saved[f"{part}_ids"], np.asarray(matrix.model_ids[rows], dtype=str))
        for part, rows in (("train", split.train), ("valid", split.valid))
    )


__all__ = [
    "MIN_BENCHMARKS",
    "SuiteFit",
    "aligned_matrices",
    "common_models",
    "fit_suite",
    "matrices_key",
    "matrix_info",
    "reader_test_flags",
    "reusable_fits",
    "same_fit_inputs",
    "suite_key",
]
