"""The training recipe of one benchmark, as named steps over files keyed by content.

matrix_step      store -> artifacts/matrix/{benchmark}.{fingerprint}.npz
fit_step         split -> set aside calibration models -> select anchors and predictor
                 -> calibrate intervals -> test metrics and baselines
                 -> artifacts/model/{key}/ (the fitted-model format + evaluation.npz)
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.hashing import fingerprint
from sparseeval.consume.scoring.next_items import CURVES_DIR, ItemCurves
from sparseeval.method import metrics
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.pool import TEST_FLAGS
from sparseeval.method.splits import Split, calibration_split, model_count, split_models
from sparseeval.pipeline import artifacts
from sparseeval.pipeline.artifacts import (
    artifact_path,
    code_version,
    fit_key,
    load_matrix,
    matrix_key,
    matrix_of,
    read_once,
    save_matrix,
)
from sparseeval.pipeline.records import FitInfo, MatrixInfo
from sparseeval.pipeline.settings import MatrixSection, PathsSection, Settings

log = logging.getLogger("sparseeval.pipeline.recipe")
EVALUATION_FILE = "evaluation.npz"
FLAG_ARRAYS = TEST_FLAGS  # per test model, in EVALUATION_FILE (`method.pool.test_flags`)
POOL_FILE = "pool_check.json"  # consume.scoring.flags.PoolCheck of the fit (absent in older fits)
FIT_FILES = ("summary.json", EVALUATION_FILE, POOL_FILE)  # and the model files


class PipelineError(SparseEvalError, RuntimeError):
    """A pipeline step cannot go on; the message says which benchmark and why."""


class NothingRan(PipelineError):
    """Every benchmark of a run failed: nothing was fitted or published (exit 2, not 1)."""


class NotEnoughModels(PipelineError):
    """Too few models to split and train yet: the benchmark waits for more (not a failure)."""


# -- the matrix step ----------------------------------------------------------------------


def benchmark_states(store_path: str | Path) -> dict[str, str]:
    """For each benchmark with results, a signature that changes whenever its results do."""
    from sparseeval.pipeline.store import Store

    path = Path(store_path)
    if not path.exists():
        return {}
    with Store.open(path, read_only=True) as store:
        signatures = store.result_signatures()
    return {name: fingerprint(str(path.resolve()), *sig) for name, sig in signatures.items()}


def matrix_step(
    paths: PathsSection, matrix: MatrixSection, benchmark: str, store_state: str | None = None
) -> MatrixInfo:
    """Build one benchmark's ±1 matrix from the store into
    `artifacts/matrix/{benchmark}.{fingerprint}.npz` (the benchmark's own: two benchmarks with
    the same answers may differ in their items' identity).

    paths, matrix: those sections of the settings (`settings.paths`, `settings.matrix`).

    store_state: the benchmark's signature (`benchmark_states`); with it the matrix is
    looked up first under its key (`artifacts/matrix/{key}.json`, pointing at the npz) and
    reused (`built=False`) when the pointer's seal holds (`artifacts.check_seal`: the key,
    the benchmark, the shape and the sha256 of the npz and its identity file); else built and
    the pointer written. A damaged entry is a logged miss, rebuilt.
    """
    from sparseeval.pipeline.identity import save_identity
    from sparseeval.pipeline.store import Store, build_matrix
    from sparseeval.pipeline.store.item_identity import item_identity

    pointer = key = None
    if store_state is not None:
        key = matrix_key(benchmark, store_state, matrix, paths.artifacts_dir)
        pointer = artifact_path(paths.artifacts_dir, "matrix", key + ".json")
        if found := _matrix_on_disk(pointer, key, benchmark):
            return found
    with Store.open(paths.store_path, read_only=True) as store:
        last_run = store.last_run_id()
        built, summary = build_matrix(
            store, benchmark, matrix.max_missing_model_frac, target=matrix.target
        )
        provenance = store.provenance(benchmark)
        identity = item_identity(store, benchmark)
    path = artifact_path(paths.artifacts_dir, "matrix", f"{benchmark}.{summary.fingerprint}.npz")
    if not _same_matrix(path, built):
        save_matrix(built, path, fingerprint=summary.fingerprint)
    save_identity(path, built.item_ids, identity)
    info = MatrixInfo(
        benchmark, str(path), summary.fingerprint, int(built.shape[0]), int(built.shape[1]),
        int(last_run), summary.line(), target=target_of(summary), provenance=provenance,
        set_aside=summary.set_aside_line() if summary.rows_set_aside else "",
    )  # fmt: skip
    if pointer is not None and key is not None:
        entry = info.to_dict() | {
            "seal": artifacts.seal_entry(key, _matrix_files(info), **_facts(info))
        }
        tmp = pointer.with_name(f"{pointer.name}.tmp{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps(entry))
        artifacts.put_file(tmp, pointer)
    return info


def _matrix_files(info: MatrixInfo) -> dict[str, Path]:
    from sparseeval.pipeline.identity import identity_path

    return {"matrix": Path(info.path), "items": identity_path(info.path)}


def _facts(info: MatrixInfo) -> dict:
    """What a matrix entry's seal says besides its files: benchmark, fingerprint, shape."""
    return {"benchmark": info.benchmark, "fingerprint": info.fingerprint,
            "shape": [info.n_models, info.n_items]}  # fmt: skip


def _matrix_on_disk(pointer: Path, key: str, benchmark: str) -> MatrixInfo | None:
    """The matrix a key's pointer names, if the pointer's seal holds (else a logged miss)."""
    if not pointer.exists():
        return None
    try:
        data = artifacts.read_json(pointer)
        info = MatrixInfo.from_dict(data | {"built": False})
        if info.benchmark != benchmark:
            raise artifacts.CacheMiss(f"it is {info.benchmark!r}'s matrix, not {benchmark!r}'s")
        artifacts.check_seal(data.get("seal"), key, _matrix_files(info), **_facts(info))
    except (artifacts.CacheMiss, TypeError, AttributeError) as exc:
        artifacts.missed(pointer, exc)
        return None
    return info


def _same_matrix(path: Path, matrix: ResponseMatrix) -> bool:
    """Whether the matrix file at `path` holds exactly `matrix` (a damaged one does not)."""
    if not path.is_file():
        return False
    try:
        old = load_matrix(path)
    except Exception:  # any damage: the file is written again
        return False
    same = (np.array_equal(old.values, matrix.values)
            and list(old.model_ids) == list(matrix.model_ids)
            and list(old.item_ids) == list(matrix.item_ids))  # fmt: skip
    if matrix.targets is None or old.targets is None:
        return same and old.targets is matrix.targets
    return same and np.array_equal(old.targets, matrix.targets)


def target_of(s) -> dict[str, str]:
    """What a matrix's targets are, in words: {"kind", "definition", "note"}."""
    return {"kind": s.target, "definition": s.target_definition, "note": s.target_note}


# -- the fit step -------------------------------------------------------------------------


@dataclass(frozen=True)
class FitSplit:
    """Row indices of the matrix: training, validation, calibration and test models."""

    train: np.ndarray
    valid: np.ndarray
    calib: np.ndarray
    test: np.ndarray

    def sizes(self) -> dict[str, int]:
        return {k: len(getattr(self, k)) for k in ("train", "valid", "test")} | {
            "calibration": len(self.calib)
        }


def heldout_sizes(n_models: int, settings: Settings) -> tuple[int, int]:
    """Test and validation sizes: `n_test` / `n_valid` (counts, or fractions when < 1), each
    at most `heldout_fraction` of the models (`pool` settings), so a small benchmark trains.

    From 1,000 models on the defaults (200, 200) apply unchanged. The share only falls
    as models arrive, so with stable splits a test model never moves into training.
    """
    cap = round(settings.pool.heldout_fraction * n_models)
    return (min(model_count(settings.splits.n_test, n_models), cap),
            min(model_count(settings.splits.n_valid, n_models), cap))  # fmt: skip


def split_step(matrix: ResponseMatrix, settings: Settings, benchmark: str) -> FitSplit:
    """Train / validation / test by model id (`heldout_sizes`), then up to `n_calib`
    calibration models (at most a fifth of the training ones)."""
    s, m = settings.splits, matrix.shape[0]
    if m < (least := settings.pool.min_models):
        raise NotEnoughModels(f"{benchmark}: {m:,} models, needs at least {least} to train")
    n_test, n_valid = heldout_sizes(m, settings)
    split = split_models(matrix.model_ids, n_test, n_valid, s.seed, s.stable_split)
    if len(split.test) == 0 or len(split.valid) == 0:
        raise NotEnoughModels(
            f"{benchmark}: split left {len(split.valid)} validation and {len(split.test)} test"
            f" models of {m}; lower n_test / n_valid or add models"
        )
    train, calib = calibration_split(matrix.model_ids, split.train, **s.calibration_args())
    return FitSplit(train, split.valid, calib, split.test)


def select_step(matrix: ResponseMatrix, split: FitSplit, settings: Settings, say: Callable):
    """Anchors and predictor from training and validation models; intervals from the
    calibration models, or cross-fitted when there are none (`calibration = "cross"`)."""
    from threadpoolctl import threadpool_limits

    from sparseeval.method.estimator import SparseEval

    X, y = matrix.values, matrix.y
    # Benchmarks are fitted side by side: one BLAS thread each, and one MLP at a time.
    n_jobs = 1 if settings.runner.workers > 1 else None
    with threadpool_limits(limits=1):
        est = SparseEval.from_config(
            settings.values(), progress=say, n_jobs=n_jobs, item_scale=matrix.scale
        ).fit(
            X[split.train], y[split.train], X_valid=X[split.valid], y_valid=y[split.valid],
            item_ids=matrix.item_ids,
        )  # fmt: skip
    if len(split.calib):
        est.calibrate(X[split.calib], y[split.calib])
    elif settings.splits.calibration == "cross" or min(len(split.train), len(split.valid)) >= 5:
        # no calibration models: cross-fitted residuals, never the validation ones (which
        # chose the anchors, so under-cover)
        with threadpool_limits(limits=1):
            est.cross_calibrate(X[split.train], y[split.train], X[split.valid], y[split.valid],
                                folds=5, item_ids=matrix.item_ids)  # fmt: skip
    return est


def test_step(est, matrix: ResponseMatrix, split: FitSplit, seed: int, curve: bool = True):
    """Test predictions and metrics, and (with `curve`) the cheap baselines at a quarter, a
    half and all of the budget (`baseline_curve`)."""
    X, y = matrix.values, matrix.y
    pred = est.predict(X[split.test])
    test = metrics.evaluate(pred, y[split.test])
    rows = [{"method": "sparseeval", "n_anchors": len(est.anchors_)} | test]
    if curve:
        rows += baseline_curve(X, y, Split(split.train, split.valid, split.test),
                               len(est.anchors_), seed)  # fmt: skip
    return pred, test, rows


CHEAP_BASELINES = ("random", "random+ridge", "greedy+ridge")


def baseline_curve(
    X: np.ndarray, y: np.ndarray, split: Split, n_anchors: int, seed: int = 0
) -> list[dict]:
    """Test MAE / tau of the cheap baselines at a quarter, half and all of `n_anchors`.

    The rows feed the report's "accuracy against anchor budget" plot.
    """
    from sparseeval.method.baselines import BASELINES

    rows = []
    for k in sorted({max(1, n_anchors // 4), max(1, n_anchors // 2), n_anchors}):
        for name in CHEAP_BASELINES:
            est = BASELINES[name](n_anchors=k, seed=seed).fit(
                X[split.train], y[split.train], X[split.valid], y[split.valid]
            )
            rows.append(
                {"method": name, "n_anchors": k}
                | metrics.evaluate(est.predict(X[split.test]), y[split.test])
            )
    return rows


@dataclass(frozen=True)
class MatrixFit:
    """One matrix fitted at one budget: the estimator, its split, its test predictions and
    metrics, the budget curve (`test_step`) and its pool check (`consume.scoring.flags`)."""

    est: Any
    split: FitSplit
    pred: np.ndarray
    test: dict
    curve: list[dict]
    pool: Any


def fit_matrix(
    matrix: ResponseMatrix,
    settings: Settings,
    benchmark: str,
    say: Callable[[str], None],
    split: FitSplit | None = None,
    curve: bool = True,
) -> MatrixFit:
    """The training recipe on one matrix at its `n_anchors`: split (`split_step`, unless
    given), select and calibrate (`select_step`), test (`test_step`), pool check.

    `sparseeval refresh` (`fit_step`) and `sparseeval fit` (`compare.compare_methods`) both
    fit through it.
    """
    from sparseeval.method.pool import estimator_pool_check

    split = split or split_step(matrix, settings, benchmark)
    est = select_step(matrix, split, settings, say)
    pred, test, rows = test_step(est, matrix, split, settings.splits.seed, curve)
    X, train = matrix.values, split.train
    p = settings.pool
    pool = estimator_pool_check(est, X[train], X[split.calib], matrix.y[train],
                                settings.drift.interval_level, p.edge_tail, p.edge_ramp,
                                rate=p.flag_rate, widen=p.widen)  # fmt: skip
    return MatrixFit(est, split, pred, test, rows, pool)


def budget_that_fits(budget: int, n_items: int, share: float = 1.0) -> int:
    """`selection.anchors_that_fit`: `budget` capped at `share` of `n_items` (the
    `max_anchor_share` setting) and at `n_items - 1`."""
    from sparseeval.method.selection import anchors_that_fit

    return anchors_that_fit(budget, n_items, share)


def budgets_for(budgets: Sequence[int], n_items: int, share: float = 1.0) -> list[int]:
    """The budgets fitted on a pool of `n_items`: each capped to fit (`budget_that_fits`),
    in order, without repeats."""
    return list(dict.fromkeys(budget_that_fits(k, n_items, share) for k in budgets if k > 0))


def cap_reason(share: float) -> str:
    """Why a budget was capped, in words (`fit` and `refresh` lines)."""
    if share >= 1:
        return "at least one item stays out of the anchors"
    return f"the anchors read at most {share:.0%} of the items: max_anchor_share"


def clamp_note(budgets: Sequence[int], n_items: int, share: float = 1.0) -> str:
    """`budget 100 does not fit 100 items: fitting 33 anchors (...)` ('' when all fit)."""
    over = [k for k in budgets if budget_that_fits(k, n_items, share) < k]
    if not over:
        return ""
    k = budget_that_fits(max(over), n_items, share)
    listed = ", ".join(map(str, over))
    which = f"budget {listed} does" if len(over) == 1 else f"budgets {listed} do"
    return f"{which} not fit {n_items:,} items: fitting {k} anchors ({cap_reason(share)})"


def settings_that_fit(settings: Settings, matrix_info: MatrixInfo) -> Settings:
    """`settings` with its one budget capped to the benchmark's pool (`budget_that_fits`):
    100 anchors on 100 items fit 33 (at most a third, by default). A pool under 2 items is
    a PipelineError."""
    try:
        k = budget_that_fits(int(settings.selection.n_anchors), matrix_info.n_items,
                             settings.selection.max_anchor_share)  # fmt: skip
    except ValueError as exc:
        raise PipelineError(f"{matrix_info.benchmark}: {exc}") from None
    return settings if k == settings.selection.n_anchors else settings.replace(n_anchors=k)


def fit_step(
    matrix_info: MatrixInfo,
    settings: Settings,
    progress: Callable[[str], None] | None = None,
    force: bool = False,
) -> FitInfo:
    """Split, select anchors, fit the final predictor, test it; save to `artifacts/model/{key}`.

    A budget the pool cannot hold is capped (`settings_that_fit`); `FitInfo.n_anchors` says
    how many were fitted.

    An existing artifact with the same key is reused (`trained=False`) unless `force`
    when its seal holds (`cached_fit`); a damaged one is a logged miss, fitted again.
    """
    settings = settings_that_fit(settings, matrix_info)
    key = fit_key(matrix_info.benchmark, matrix_info.fingerprint, settings)
    folder = artifact_path(settings.paths.artifacts_dir, "model", key)
    if not force and (done := cached_fit(folder, key, matrix_info.fingerprint)):
        return done
    bench = matrix_info.benchmark
    say = progress or (lambda msg: log.info("%s: %s", bench, msg))
    t0 = time.perf_counter()
    matrix = matrix_of(matrix_info)
    fit = fit_matrix(matrix, settings, bench, say)
    est, split = fit.est, fit.split
    y_train = matrix.y[np.concatenate([split.train, split.calib])]
    info = FitInfo(
        bench, key, str(folder), matrix_info.fingerprint, matrix_info.path, matrix_info.last_run,
        len(est.anchors_), est.predictor_name_,
        {k: 100 * v for k, v in est.valid_scores_.items()}, split.sizes(), fit.test, fit.curve,
        [float(y_train.min()), float(y_train.max())], round(time.perf_counter() - t0, 2),
        code_version(), target=matrix_info.target, provenance=matrix_info.provenance,
    )  # fmt: skip
    return _save_fit(folder, fit, info, matrix, t0)


def _save_fit(folder: Path, fit: MatrixFit, info: FitInfo, matrix, t0: float) -> FitInfo:
    """Write the model folder under a temporary name, then rename it into place; the fit's
    `seconds` count from `t0` to its files (the pool check and its top edge included)."""
    from sparseeval.method.model_files import save_fitted
    from sparseeval.method.pool import test_flags

    split, pred = fit.split, fit.pred
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}.{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_fitted(fit.est, tmp)
    (tmp / POOL_FILE).write_text(json.dumps(fit.pool.to_dict()))
    save_curves(tmp, info, matrix, split.train)
    ids = {f"{k}_ids": np.asarray(matrix.model_ids[getattr(split, k)], dtype=str)
           for k in ("train", "valid", "test", "calib")}  # fmt: skip
    X_test = matrix.values[split.test][:, fit.est.anchors_]
    np.savez(tmp / EVALUATION_FILE, test_pred=np.asarray(pred, dtype=np.float64),
             test_true=matrix.y[split.test].astype(np.float64),
             **test_flags(fit.pool, X_test, pred), **ids)  # fmt: skip
    info = dataclasses.replace(info, seconds=round(time.perf_counter() - t0, 2))
    info.save(tmp / "summary.json")
    artifacts.seal_folder(tmp, info.key, matrix_fingerprint=info.matrix_fingerprint)
    if folder.exists():  # `force`: replace the previous fit of the same key
        shutil.rmtree(folder, ignore_errors=True)
    try:
        os.replace(tmp, folder)
    except OSError:  # another worker finished the same key first
        shutil.rmtree(tmp, ignore_errors=True)
    return info


def cached_fit(folder: str | Path, key: str, matrix_fingerprint: str) -> FitInfo | None:
    """The fit saved in `folder` for `key` and this matrix, if its seal holds: every file as
    written (summary, evaluation, pool check, model files). Else None (a logged miss)."""
    folder = Path(folder)
    if not folder.exists():
        return None
    try:
        artifacts.check_folder(folder, key, FIT_FILES, matrix_fingerprint=matrix_fingerprint)
        info = FitInfo.load(folder / "summary.json")
        if info.key != key or info.matrix_fingerprint != matrix_fingerprint:
            raise artifacts.CacheMiss("its summary.json names another fit")
    except (artifacts.CacheMiss, OSError, ValueError, TypeError) as exc:
        artifacts.missed(folder, exc)
        return None
    return info


def save_curves(folder: Path, info: FitInfo, matrix, rows) -> None:
    """Every item of the matrix and its curve (`method.item_curves`) in `folder/items/`."""
    from sparseeval.method.item_curves import matrix_curves
    from sparseeval.pipeline.identity import anchor_sources

    sources = anchor_sources(info.matrix_path, [str(i) for i in matrix.item_ids], info.benchmark)
    item_mean = (info.target or {}).get("kind") == "items"
    matrix_curves(matrix, rows, item_mean, sources).save(folder / CURVES_DIR)


def curves_of(fit: FitInfo):
    """The fit's item curves (`consume.scoring.next_items.ItemCurves`), or None for older fits."""
    folder = Path(fit.model_dir) / CURVES_DIR
    return ItemCurves.load(folder) if folder.is_dir() else None


def fitted_of(fit: FitInfo):
    """The fitted estimator of a fit, read once per process (`artifacts.read_once`)."""
    from sparseeval.method.model_files import load_fitted

    return read_once("fitted", fit.model_dir, fit.key, lambda: load_fitted(fit.model_dir))


def evaluation_of(fit: FitInfo) -> dict[str, np.ndarray]:
    """`load_evaluation` of a fit, read once per process (`artifacts.read_once`)."""
    return read_once("evaluation", fit.model_dir, fit.key, lambda: load_evaluation(fit.model_dir))


def pool_check_of(fit: FitInfo) -> dict | None:
    """The fit's pool check (`consume.scoring.flags`) as saved, or None for fits saved before it."""
    path = Path(fit.model_dir) / POOL_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def load_evaluation(model_dir: str | Path) -> dict[str, np.ndarray]:
    """Test predictions, true values and split model ids saved with a fit."""
    with np.load(Path(model_dir) / EVALUATION_FILE, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


__all__ = [
    "CHEAP_BASELINES",
    "EVALUATION_FILE",
    "FIT_FILES",
    "FLAG_ARRAYS",
    "POOL_FILE",
    "FitSplit",
    "MatrixFit",
    "NotEnoughModels",
    "NothingRan",
    "PipelineError",
    "baseline_curve",
    "benchmark_states",
    "budget_that_fits",
    "budgets_for",
    "cached_fit",
    "cap_reason",
    "clamp_note",
    "curves_of",
    "evaluation_of",
    "fit_matrix",
    "fit_step",
    "fitted_of",
    "heldout_sizes",
    "load_evaluation",
    "matrix_step",
    "pool_check_of",
    "save_curves",
    "select_step",
    "settings_that_fit",
    "split_step",
    "target_of",
    "test_step",
]
