"""Prefect-free glue of the refresh pipeline: artifacts, matrices, fits, drift, publishing.

Every function takes and returns plain values (paths, fingerprints, small dicts) so that
orchestration (`tasks/`, `flows/`) only wires them. Large data lives in files under
`artifacts/{kind}/{fingerprint}`, where the fingerprint covers the inputs, the settings
that matter and the code version: an unchanged input is never recomputed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from . import __version__, metrics
from .estimator import AnchorEstimator, SparseEval
from .fitting import baseline_curve
from .matrix import ResponseMatrix
from .predictors import load_predictor, save_predictor
from .settings import Settings
from .splits import Split, split_models
from .synthetic import make_leaderboard

log = logging.getLogger("sparseeval.pipeline")

# Settings each stage depends on (others, e.g. paths or drift thresholds, do not change it).
MATRIX_FIELDS = ("max_missing_model_frac",)
TRAINING_FIELDS = (
    "n_anchors", "init", "refine_steps", "acceptance", "swap_candidates", "proxy", "judge",
    "predictor", "refit", "ensemble", "lr", "epochs", "patience", "weight_decay", "dropout",
    "n_test", "n_valid", "n_calib", "stable_split", "seed",
)  # fmt: skip
# Source files whose change invalidates cached artifacts.
_CODE_MODULES = (
    "matrix.py", "splits.py", "selection.py", "predictors.py", "estimator.py", "metrics.py",
    "pipeline.py", "store/build.py",
)  # fmt: skip

# The built-in source that fills an empty store: six benchmarks, quick on a laptop.
DEFAULT_SYNTHETIC_ITEMS = {
    "arc": 600,
    "gsm8k": 500,
    "hellaswag": 1000,
    "mmlu": 1000,
    "truthfulqa": 400,
    "winogrande": 600,
}
DEFAULT_SYNTHETIC_MODELS = 1000


class PipelineError(RuntimeError):
    """A pipeline step cannot go on; the message says which benchmark and why."""


# -- fingerprints and artifact paths -----------------------------------------------------


@cache
def code_version() -> str:
    """sparseeval's version plus a hash of the source of every module a result depends on."""
    h = hashlib.sha256(__version__.encode())
    root = resources.files("sparseeval")
    for name in _CODE_MODULES:
        part = root.joinpath(name)
        h.update(name.encode())
        if part.is_file():
            h.update(part.read_bytes())
    return f"{__version__}+{h.hexdigest()[:16]}"


def fingerprint(*parts: Any) -> str:
    """sha256 of JSON-encoded parts (sorted keys): the same inputs, the same key."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def settings_subset(settings: Settings, names: Sequence[str]) -> dict[str, Any]:
    full = settings.to_dict()
    return {n: full[n] for n in names}


def artifact_path(artifacts_dir: str | Path, kind: str, key: str) -> Path:
    """`artifacts/{kind}/{key}`: the one place a content-keyed artifact lives."""
    if not key or "/" in key or "/" in kind:
        raise ValueError(f"bad artifact key {kind!r}/{key!r}")
    return Path(artifacts_dir) / kind / key


def matrix_key(benchmark: str, store_state: str, settings: Settings) -> str:
    """Key of a benchmark's matrix: its store content signature, settings and code.

    The artifacts folder is part of the key: a cached result always points at files
    in this home, never at another home's (which may be gone).
    """
    return fingerprint(
        "matrix", benchmark, store_state, settings_subset(settings, MATRIX_FIELDS),
        str(Path(settings.artifacts_dir).resolve()), code_version(),
    )  # fmt: skip


def fit_key(matrix_fingerprint: str, settings: Settings) -> str:
    """Key of a fitted model: the matrix content, the training settings and the code."""
    return fingerprint(
        "fit", matrix_fingerprint, settings_subset(settings, TRAINING_FIELDS),
        str(Path(settings.artifacts_dir).resolve()), code_version(),
    )  # fmt: skip


# -- matrices on disk ---------------------------------------------------------------------


def save_matrix(matrix: ResponseMatrix, path: str | Path) -> Path:
    """Write a matrix as one `.npz` (values, ids, targets) atomically; no pickles."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {
        "values": matrix.values,
        "model_ids": np.asarray(matrix.model_ids, dtype=str),
        "item_ids": np.asarray(matrix.item_ids, dtype=str),
    }
    if matrix.targets is not None:
        arrays["targets"] = matrix.targets
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    os.close(fd)
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load_matrix(path: str | Path) -> ResponseMatrix:
    with np.load(path, allow_pickle=False) as npz:
        targets = npz["targets"] if "targets" in npz.files else None
        return ResponseMatrix(
            npz["values"],
            npz["model_ids"].astype(object),
            npz["item_ids"].astype(object),
            targets,
        )


# -- the store -----------------------------------------------------------------------------


def benchmark_states(store_path: str | Path) -> dict[str, str]:
    """For each benchmark with results, a signature that changes whenever its results do."""
    from .store import Store

    path = Path(store_path)
    if not path.exists():
        return {}
    with Store.open(path, read_only=True) as store:
        signatures = store.result_signatures()
    return {name: fingerprint(str(path.resolve()), *sig) for name, sig in signatures.items()}


def store_is_empty(store_path: str | Path) -> bool:
    return not benchmark_states(store_path)


def build_matrix_artifact(
    store_path: str | Path, benchmark: str, artifacts_dir: str | Path, settings: Settings
) -> dict[str, Any]:
    """Build one benchmark's ±1 matrix from the store into `artifacts/matrix/{fingerprint}.npz`."""
    from .store import Store, build_matrix

    with Store.open(store_path, read_only=True) as store:
        last_run = store.last_run_id()
        matrix, summary = build_matrix(store, benchmark, settings.max_missing_model_frac)
    fp = summary.fingerprint
    path = artifact_path(artifacts_dir, "matrix", fp + ".npz")
    if not path.exists():
        save_matrix(matrix, path)
    return {
        "benchmark": benchmark,
        "path": str(path),
        "fingerprint": fp,
        "n_models": int(matrix.shape[0]),
        "n_items": int(matrix.shape[1]),
        "last_run": int(last_run),
        "summary": summary.line(),
    }


def fresh_models(store_path: str | Path, benchmark: str, live: dict[str, Any]) -> list[str]:
    """Models whose first result in `benchmark` arrived after the live set's data was read.

    Exact when the set was published by this pipeline (it records the last ingest run its
    matrix saw); otherwise models first seen after the manifest's `created` time.
    """
    from .store import Store

    with Store.open(store_path, read_only=True) as store:
        if live.get("last_run") is not None:
            return store.models_first_seen_after(run_id=int(live["last_run"]), benchmark=benchmark)
        after = datetime.fromisoformat(str(live["created"]))
        if after.tzinfo is None:
            after = after.replace(tzinfo=UTC)
        return store.models_first_seen_after(after=after, benchmark=benchmark)


# -- sources ----------------------------------------------------------------------------


@dataclass
class SyntheticLeaderboard:
    """A seeded synthetic leaderboard (`sparseeval.synthetic.make_leaderboard`) as a source.

    All `n_models` models are generated with the same seed; `model_range` releases only
    rows [lo, hi) and `benchmarks` only some benchmarks, so that a later run can add new
    models of the same leaderboard. Each (benchmark, block of models) is one ingest unit,
    keyed by its parameters: the same release is never ingested twice.
    """

    n_models: int = DEFAULT_SYNTHETIC_MODELS
    items: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_SYNTHETIC_ITEMS))
    seed: int = 0
    model_range: tuple[int, int] | None = None
    benchmarks: tuple[str, ...] | None = None
    block_cells: int = 4_000_000

    @cached_property
    def leaderboard(self) -> dict[str, ResponseMatrix]:
        return make_leaderboard(self.n_models, self.items, seed=self.seed)

    def units(self, store) -> Iterator[Any]:
        from .store.unit import Unit, content_key

        lo, hi = self.model_range or (0, self.n_models)
        if not 0 <= lo < hi <= self.n_models:
            raise ValueError(f"model_range {lo}..{hi} outside 0..{self.n_models}")
        for bench, n_items in self.items.items():
            if self.benchmarks is not None and bench not in self.benchmarks:
                continue
            step = max(1, self.block_cells // max(n_items, 1))
            for a in range(lo, hi, step):
                b = min(hi, a + step)
                label = f"synthetic:{bench}[{a}:{b}] (seed {self.seed}, {self.n_models} models)"
                key = content_key(
                    "synthetic", "1", str(self.seed), str(self.n_models),
                    json.dumps(self.items, sort_keys=True), bench, str(a), str(b),
                )  # fmt: skip
                yield Unit("synthetic", label, key, [label], self._stager(bench, a, b))

    def _stager(self, bench: str, a: int, b: int) -> Callable[[Any], None]:
        def stage(con) -> None:
            from .store.unit import stage_frames

            stage_frames(con, self.frame(bench, a, b))

        return stage

    def frame(self, bench: str, a: int, b: int) -> pl.DataFrame:
        """Long rows (model, benchmark, item, correct, ord, line) of models [a, b)."""
        m = self.leaderboard[bench]
        values = m.values[a:b]
        n_rows, n_items = values.shape
        models = pl.Series(np.asarray(m.model_ids[a:b], dtype=str))
        items = pl.Series(np.asarray(m.item_ids, dtype=str))
        ords = np.tile(np.arange(n_items, dtype=np.int64), n_rows)
        return pl.DataFrame(
            {
                "model": models.gather(np.repeat(np.arange(n_rows), n_items)),
                "benchmark": pl.Series([bench]).gather(np.zeros(values.size, dtype=np.int64)),
                "item": items.gather(ords),
                "correct": pl.Series(["0", "1"]).gather((values.reshape(-1) > 0).astype(np.int64)),
                "ord": ords,
                "line": np.arange(values.size, dtype=np.int64) + 1,
                "ref_no": np.zeros(values.size, dtype=np.int32),
            }
        )


def parse_source(spec: str):
    """A source from a short spec.

    `synthetic` or `synthetic:n_models=1000,seed=0` | a `.csv`/`.parquet` long table |
    `wide:BENCHMARK=path.csv` | an lm-eval output folder or `results_*.json` |
    `hub:org/model[,org/model...]` (Open LLM Leaderboard v1 details).
    """
    from .store import LmEvalRun, LongTable, OpenLLMLeaderboard, WideTable, default_hub_client

    spec = spec.strip()
    if spec == "synthetic" or spec.startswith("synthetic:"):
        return _synthetic_from_spec(spec.partition(":")[2])
    if spec.startswith("wide:"):
        bench, _, path = spec[5:].partition("=")
        if not bench or not path:
            raise ValueError(f"wide source must be wide:BENCHMARK=path.csv, got {spec!r}")
        return WideTable(Path(path), bench)
    if spec.startswith("hub:"):
        models = [m for m in spec[4:].split(",") if m]
        return OpenLLMLeaderboard(default_hub_client(), models=models or None)
    path = Path(spec)
    if path.is_dir() or path.name.startswith("results_"):
        return LmEvalRun(path)
    if path.suffix.lower() in {".csv", ".parquet", ".pq"}:
        return LongTable(path)
    raise ValueError(
        f"cannot tell what source {spec!r} is (a .csv/.parquet long table, wide:B=file.csv,"
        " an lm-eval folder, hub:org/model or synthetic)"
    )


def _synthetic_from_spec(options: str) -> SyntheticLeaderboard:
    """`n_models=5100,seed=0,items=ollm,models=0-5000,benchmarks=arc+gsm8k` (all optional)."""
    from .synthetic import OLLM_V1_ITEMS

    kw: dict[str, Any] = {}
    for part in filter(None, options.split(",")):
        k, _, v = part.partition("=")
        try:
            if k in {"n_models", "seed"}:
                kw[k] = int(v)
            elif k == "items":
                kw[k] = {"ollm": OLLM_V1_ITEMS, "default": DEFAULT_SYNTHETIC_ITEMS}[v]
            elif k == "models":
                lo, _, hi = v.partition("-")
                kw["model_range"] = (int(lo), int(hi))
            elif k == "benchmarks":
                kw[k] = tuple(v.split("+"))
            else:
                raise ValueError(k)
        except (KeyError, ValueError):
            raise ValueError(
                f"synthetic source: bad option {part!r} (n_models=N, seed=N, items=ollm|default,"
                " models=LO-HI, benchmarks=a+b)"
            ) from None
    return SyntheticLeaderboard(**kw)


def ingest_sources(
    store_path: str | Path, sources: Sequence[Any], fill_if_empty: bool = True
) -> dict[str, Any]:
    """Ingest each source (a spec string or a source object) into the store.

    With no sources and an empty store, the built-in synthetic leaderboard fills it.
    Returns counts and one line per unit.
    """
    from .store import Store, ingest

    srcs = [parse_source(s) if isinstance(s, str) else s for s in sources]
    filled = False
    if not srcs and fill_if_empty and store_is_empty(store_path):
        srcs, filled = [SyntheticLeaderboard()], True
    t0 = time.perf_counter()
    reports = []
    with Store.open(store_path) as store:
        for src in srcs:
            reports.extend(ingest(store, src))
    out = {
        "units": len(reports),
        "skipped": sum(r.status == "skipped" for r in reports),
        "new": sum(r.n_new for r in reports),
        "updated": sum(r.n_updated for r in reports),
        "quarantined": sum(r.n_quarantined for r in reports),
        "filled_with_synthetic": filled,
        "seconds": round(time.perf_counter() - t0, 3),
        "lines": [r.line() for r in reports][:50],
    }
    return out


# -- fitting --------------------------------------------------------------------------------


class FittedAnchors(AnchorEstimator):
    """A fitted SparseEval read back from an artifact folder (anchors + predictor)."""

    def __init__(
        self,
        anchors,
        anchor_ids,
        predictor,
        predictor_name,
        calibration_residuals,
        calibration_source: str = "validation",
    ):
        self.anchors_ = np.asarray(anchors, dtype=np.int64)
        self.anchor_ids_ = np.asarray(anchor_ids, dtype=object)
        self.predictor_ = predictor
        self.predictor_name_ = predictor_name
        self.calibration_residuals_ = np.asarray(calibration_residuals, dtype=np.float64)
        self.calibration_source_ = calibration_source
        self.n_anchors = len(self.anchors_)

    def predict_anchors(self, XA: np.ndarray) -> np.ndarray:
        return self.predictor_.predict(np.asarray(XA, dtype=np.float32))


def save_fitted(
    est, folder: Path, split_ids: dict[str, np.ndarray], test_pred: np.ndarray, test_true
) -> None:
    save_predictor(est.predictor_, folder / "predictor")
    np.savez(
        folder / "anchors.npz",
        anchors=np.asarray(est.anchors_, dtype=np.int64),
        anchor_ids=np.asarray(est.anchor_ids_, dtype=str),
        calibration_residuals=np.asarray(est.calibration_residuals_, dtype=np.float64),
        calibration_source=np.asarray(est.calibration_source_),
        test_pred=np.asarray(test_pred, dtype=np.float64),
        test_true=np.asarray(test_true, dtype=np.float64),
        **{f"{k}_ids": np.asarray(v, dtype=str) for k, v in split_ids.items()},
    )


def load_test_predictions(model_dir: str | Path) -> dict[str, list[float]]:
    with np.load(Path(model_dir) / "anchors.npz", allow_pickle=False) as npz:
        return {"test_pred": npz["test_pred"].tolist(), "test_true": npz["test_true"].tolist()}


def load_fitted(model_dir: str | Path) -> FittedAnchors:
    folder = Path(model_dir)
    summary = json.loads((folder / "summary.json").read_text())
    with np.load(folder / "anchors.npz", allow_pickle=False) as npz:
        return FittedAnchors(
            npz["anchors"],
            npz["anchor_ids"].astype(object),
            load_predictor(folder / "predictor"),
            summary["predictor"],
            npz["calibration_residuals"],
            str(npz["calibration_source"]) if "calibration_source" in npz else "validation",
        )


def load_split_ids(model_dir: str | Path) -> dict[str, set[str]]:
    with np.load(Path(model_dir) / "anchors.npz", allow_pickle=False) as npz:
        return {k: set(npz[f"{k}_ids"].tolist()) for k in ("train", "valid", "test")}


def calibration_split(
    model_ids: np.ndarray, train: np.ndarray, settings: Settings
) -> tuple[np.ndarray, np.ndarray]:
    """Set aside up to `n_calib` training models (at most a fifth) that only calibrate intervals.

    Validation models also choose anchors and the predictor, so their residuals are
    optimistic; these models are never seen by any selection step. Fewer than 10 -> none.
    """
    n_cal = min(int(settings.n_calib), len(train) // 5)
    if n_cal < 10:
        return train, train[:0]
    part = split_models(model_ids[train], n_test=n_cal, n_valid=0, seed=settings.seed + 1,
                        stable=settings.stable_split, min_train=1)  # fmt: skip
    return train[part.train], train[part.test]


def fit_benchmark(
    matrix_info: dict[str, Any],
    settings: Settings,
    artifacts_dir: str | Path,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Split, select anchors, fit the final predictor, test it; save to `artifacts/model/{key}`.

    Returns a small summary (paths, sizes, test metrics). An existing artifact with the
    same key is reused (`"trained": False`).
    """
    key = fit_key(matrix_info["fingerprint"], settings)
    folder = artifact_path(artifacts_dir, "model", key)
    done = folder / "summary.json"
    if done.exists():
        return json.loads(done.read_text()) | {"trained": False}
    bench = matrix_info["benchmark"]
    t0 = time.perf_counter()
    matrix = load_matrix(matrix_info["path"])
    split = split_models(
        matrix.model_ids, settings.n_test, settings.n_valid, settings.seed, settings.stable_split
    )
    if len(split.test) == 0 or len(split.valid) == 0:
        raise PipelineError(
            f"{bench}: split left {len(split.valid)} validation and {len(split.test)} test models"
            f" of {matrix.shape[0]}; lower n_test / n_valid or add models"
        )
    train, calib = calibration_split(matrix.model_ids, split.train, settings)
    X, y = matrix.values, matrix.y
    say = progress or (lambda msg: log.info("%s: %s", bench, msg))
    # Benchmarks are fitted side by side: one BLAS thread each (also keeps OpenBLAS from
    # warning about being called inside torch's OpenMP regions).
    with threadpool_limits(limits=1):
        est = SparseEval.from_settings(settings, progress=say).fit(
            X[train],
            y[train],
            X[split.valid],
            y[split.valid],
            item_ids=matrix.item_ids,
        )
    if len(calib):
        est.calibrate(X[calib], y[calib])
    pred = est.predict(X[split.test])
    test = metrics.evaluate(pred, y[split.test])
    curve = [{"method": "sparseeval", "n_anchors": len(est.anchors_)} | test]
    fit_split = Split(train, split.valid, split.test)
    curve += baseline_curve(X, y, fit_split, len(est.anchors_), settings.seed)
    y_train = y[split.train]
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ids = {k: matrix.model_ids[getattr(split, k)] for k in ("train", "valid", "test")}
    save_fitted(est, tmp, ids, pred, y[split.test])
    summary = {
        "benchmark": bench,
        "key": key,
        "model_dir": str(folder),
        "matrix_fingerprint": matrix_info["fingerprint"],
        "matrix_path": matrix_info["path"],
        "last_run": matrix_info.get("last_run"),
        "n_anchors": len(est.anchors_),
        "predictor": est.predictor_name_,
        "valid_scores": {k: 100 * v for k, v in est.valid_scores_.items()},
        "split_sizes": fit_split.sizes() | {"calibration": len(calib)},
        "test_metrics": test,
        "budget_rows": curve,
        "train_range": [float(y_train.min()), float(y_train.max())],
        "seconds": round(time.perf_counter() - t0, 2),
        "code_version": code_version(),
    }
    (tmp / "summary.json").write_text(json.dumps(summary, indent=2))
    try:
        os.replace(tmp, folder)
    except OSError:  # another worker finished the same key first
        shutil.rmtree(tmp, ignore_errors=True)
    return summary | {"trained": True}


# -- published sets: drift, gate, publish -----------------------------------------------------


def _ledger(artifacts_dir: str | Path, benchmark: str, version: int) -> Path:
    """Where this pipeline notes what a published version was built from."""
    return artifact_path(artifacts_dir, "published", f"{benchmark}-v{int(version)}.json")


def published_info(
    published_dir: str | Path, benchmark: str, artifacts_dir: str | Path | None = None
) -> dict[str, Any] | None:
    """The live published version of a benchmark (version, created, metrics), or None."""
    from . import publish

    version = publish.latest_version(published_dir, benchmark)
    if version is None:
        return None
    aset = publish.load_anchor_set(published_dir, benchmark, version)
    man = aset.manifest
    ledger = _ledger(artifacts_dir, benchmark, version) if artifacts_dir else None
    noted = json.loads(ledger.read_text()) if ledger and ledger.is_file() else {}
    if noted.get("data_fingerprint") != man.get("data_fingerprint"):
        noted = {}  # not ours (e.g. another home published it)
    return {
        "last_run": noted.get("last_run"),
        "version": version,
        "created": man.get("created"),
        "data_fingerprint": man.get("data_fingerprint"),
        "test_mae": _test_mae(man),
        "n_anchors": man.get("n_anchors"),
    }


def _test_mae(manifest: dict[str, Any]) -> float | None:
    """The test MAE (points) from a manifest's metrics, whatever its nesting."""
    m = manifest.get("metrics") or {}
    for path in (("test", "mae"), ("test_mae",), ("mae",)):
        cur: Any = m
        for k in path:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if isinstance(cur, int | float):
            return float(cur)
    return None


def score_published(
    published_dir: str | Path,
    benchmark: str,
    matrix: ResponseMatrix,
    model_ids: Sequence[str] | None = None,
    version: int | str = "latest",
) -> dict[str, Any]:
    """Metrics of a published anchor set on some models of `matrix` (all when None)."""
    from . import publish

    rows = _rows(matrix, model_ids)
    if len(rows) == 0:
        return {"n": 0}
    aset = publish.load_anchor_set(published_dir, benchmark, version)
    pred = np.asarray(aset.predict_matrix(matrix.values[rows], matrix.item_ids), dtype=float)
    true = matrix.y[rows]
    out: dict[str, Any] = {"n": len(rows), "mae": metrics.mae_points(pred, true)}
    if len(rows) >= 3:
        out |= metrics.evaluate(pred, true)
    return out


def score_fitted(
    model_dir: str | Path, matrix: ResponseMatrix, model_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    rows = _rows(matrix, model_ids)
    if len(rows) == 0:
        return {"n": 0}
    est = load_fitted(model_dir)
    pred = est.predict(matrix.values[rows])
    return {"n": len(rows), "mae": metrics.mae_points(pred, matrix.y[rows])}


def _rows(matrix: ResponseMatrix, model_ids: Sequence[str] | None) -> np.ndarray:
    if model_ids is None:
        return np.arange(matrix.shape[0])
    wanted = set(map(str, model_ids))
    return np.flatnonzero([str(m) in wanted for m in matrix.model_ids])


def evaluate_published_set(
    published_dir: str | Path,
    benchmark: str,
    matrix_path: str | Path,
    model_ids: Sequence[str] | None = None,
    version: int | str = "latest",
) -> dict[str, Any]:
    """Score a published set on models of a matrix file (for the 'evaluate' flow)."""
    return score_published(published_dir, benchmark, load_matrix(matrix_path), model_ids, version)


def drift_figures(
    published_dir: str | Path,
    benchmark: str,
    matrix_path: str | Path,
    fresh: Sequence[str],
) -> dict[str, Any]:
    """The published set's error on fresh models, and how many fall outside the known range.

    The known range is that of the true accuracies of models that were there before
    the set was published (the models it could have been trained on).
    """
    matrix = load_matrix(matrix_path)
    fresh_set = set(map(str, fresh))
    is_fresh = np.array([str(m) in fresh_set for m in matrix.model_ids], dtype=bool)
    out: dict[str, Any] = {"n_fresh": int(is_fresh.sum())}
    if not is_fresh.any():
        return out
    out |= {f"fresh_{k}": v for k, v in score_published(
        published_dir, benchmark, matrix, matrix.model_ids[is_fresh]
    ).items() if k != "n"}  # fmt: skip
    y = matrix.y
    if (~is_fresh).any():
        lo, hi = float(y[~is_fresh].min()), float(y[~is_fresh].max())
        out["out_of_range_frac"] = float(np.mean((y[is_fresh] < lo) | (y[is_fresh] > hi)))
    return out


def record_drift(
    artifacts_dir: str | Path, benchmark: str, live: dict[str, Any] | None, figures: dict
) -> None:
    """Append one drift check (live version, MAE on fresh models) to the benchmark's history."""
    if not live or not figures.get("n_fresh") or figures.get("fresh_mae") is None:
        return
    path = artifact_path(artifacts_dir, "published", f"{benchmark}-drift.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "version": live["version"],
        "mae": float(figures["fresh_mae"]),
        "n_models": int(figures["n_fresh"]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def drift_history(artifacts_dir: str | Path, benchmark: str) -> list[dict[str, Any]]:
    path = artifact_path(artifacts_dir, "published", f"{benchmark}-drift.jsonl")
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class DriftDecision:
    benchmark: str
    drift: bool
    publish: bool
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def drift_decision(
    benchmark: str,
    published: dict[str, Any] | None,
    figures: dict[str, Any],
    settings: Settings,
) -> DriftDecision:
    """Pure: should a new version be published? (No set yet, or drift on fresh models.)

    Drift when, on at least `min_new_models` fresh models, the published set's MAE exceeds
    `drift_mae_points`, or `drift_mae_ratio` times its published test MAE, or more than
    `drift_out_of_range_frac` of them lie outside the known accuracy range. A threshold
    <= 0 turns its criterion off.
    """
    s = settings
    if published is None:
        return DriftDecision(benchmark, False, True, "no published anchor set yet", figures)
    n = int(figures.get("n_fresh", 0))
    if n == 0:
        return DriftDecision(benchmark, False, False, "no new models since publishing", figures)
    if n < s.min_new_models:
        why = f"only {n} new model(s) since publishing (< min_new_models {s.min_new_models})"
        return DriftDecision(benchmark, False, False, why, figures)
    mae = float(figures.get("fresh_mae", 0.0))
    oor = float(figures.get("out_of_range_frac", 0.0))
    base = published.get("test_mae")
    reasons = []
    if s.drift_mae_points > 0 and mae > s.drift_mae_points:
        reasons.append(f"MAE {mae:.2f} > {s.drift_mae_points:g} points on {n} new models")
    if s.drift_mae_ratio > 0 and base and mae > s.drift_mae_ratio * base:
        reasons.append(
            f"MAE {mae:.2f} > {s.drift_mae_ratio:g} x published test MAE {base:.2f}"
            f" on {n} new models"
        )
    if s.drift_out_of_range_frac > 0 and oor > s.drift_out_of_range_frac:
        reasons.append(f"{oor:.0%} of {n} new models outside the training range")
    if reasons:
        return DriftDecision(benchmark, True, True, "drift: " + "; ".join(reasons), figures)
    why = f"no drift: MAE {mae:.2f} points on {n} new models, {oor:.0%} outside range"
    return DriftDecision(benchmark, False, False, why, figures)


def gate_decision(current_mae: float | None, candidate_mae: float | None) -> tuple[bool, str]:
    """Pure: publish only a candidate at least as good as the live set on the same models."""
    if current_mae is None:
        return True, "no live set to compare with"
    if candidate_mae is None:
        return False, "candidate could not be scored on the held-out models"
    if candidate_mae <= current_mae + 1e-12:
        return True, f"candidate MAE {candidate_mae:.3f} <= live {current_mae:.3f} points"
    return False, f"refused: candidate MAE {candidate_mae:.3f} > live {current_mae:.3f} points"


def compare_candidate(
    published_dir: str | Path,
    benchmark: str,
    fit: dict[str, Any],
    fresh: Sequence[str],
) -> dict[str, Any]:
    """Live set vs candidate on models neither was trained on.

    Held-out models: the candidate's test split (with stable splits and the same seed the
    live set never trained on them either). The fresh ones among them (arrived since the
    live set was published) are compared too; the candidate must not be worse on either.
    """
    matrix = load_matrix(fit["matrix_path"])
    if publish_latest(published_dir, benchmark) is None:
        return {"accept": True, "reason": "no live set to compare with"}
    test_ids = sorted(load_split_ids(fit["model_dir"])["test"])
    fresh_ids = sorted(set(map(str, fresh)) & set(test_ids))
    out: dict[str, Any] = {"n_heldout": len(test_ids), "n_fresh_heldout": len(fresh_ids)}
    accept, reasons = True, []
    for name, ids in (("heldout", test_ids), ("fresh_heldout", fresh_ids)):
        if not ids:
            continue
        live = score_published(published_dir, benchmark, matrix, ids)["mae"]
        cand = score_fitted(fit["model_dir"], matrix, ids)["mae"]
        ok, why = gate_decision(live, cand)
        out[f"live_mae_{name}"], out[f"candidate_mae_{name}"] = live, cand
        accept &= ok
        reasons.append(f"{name.replace('_', ' ')} ({len(ids)} models): {why}")
    out |= {"accept": accept, "reason": "; ".join(reasons) or "nothing to compare on"}
    return out


def write_candidate(
    published_dir: str | Path, benchmark: str, fit: dict[str, Any], settings: Settings
) -> dict[str, Any]:
    """Write the fitted model as a new (not yet live) published version."""
    from . import publish

    est = load_fitted(fit["model_dir"])
    test = fit["test_metrics"]
    path = publish.write_version(
        published_dir,
        benchmark,
        est,
        data_fingerprint=fit["matrix_fingerprint"],
        split_sizes=fit["split_sizes"],
        metrics={"test": test, "valid": {"mae": fit["valid_scores"].get(fit["predictor"])}},
        settings=settings.to_dict() | {"code_version": fit.get("code_version")},
        report_inputs=load_test_predictions(fit["model_dir"])
        | {"drift_rows": drift_history(settings.artifacts_dir, benchmark)}
        | {"budget_rows": fit.get("budget_rows", [])},
    )
    ledger = _ledger(settings.artifacts_dir, benchmark, _version_of(path))
    ledger.parent.mkdir(parents=True, exist_ok=True)
    note = {"data_fingerprint": fit["matrix_fingerprint"], "last_run": fit.get("last_run")}
    ledger.write_text(json.dumps(note))
    return {
        "benchmark": benchmark,
        "published_dir": str(published_dir),
        "path": str(path),
        "version": _version_of(path),
    }


def _version_of(path: Path | str) -> int:
    name = Path(path).name
    return int(name[1:]) if name.startswith("v") and name[1:].isdigit() else int(name)


def publish_latest(published_dir: str | Path, benchmark: str) -> int | None:
    from . import publish

    return publish.latest_version(published_dir, benchmark)


def promote(published_dir: str | Path, benchmark: str, version: int) -> None:
    from . import publish

    publish.set_latest(published_dir, benchmark, version)


def discard(published_dir: str | Path, benchmark: str, version: int) -> None:
    from . import publish

    publish.discard_version(published_dir, benchmark, version)


# -- report -------------------------------------------------------------------------------------


def metrics_rows(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per benchmark for a table artifact."""
    rows = []
    for r in results:
        fit = r.get("fit") or {}
        test = fit.get("test_metrics") or {}
        rows.append(
            {
                "benchmark": r["benchmark"],
                "models": (r.get("matrix") or {}).get("n_models"),
                "items": (r.get("matrix") or {}).get("n_items"),
                "trained": "cached" if r.get("fit_cached") else ("yes" if fit else "no"),
                "predictor": fit.get("predictor"),
                "test MAE": _round(test.get("mae")),
                "Kendall tau": _round(test.get("kendall_tau")),
                "drift": (r.get("decision") or {}).get("drift"),
                "published": r.get("published_version"),
            }
        )
    return rows


def _round(v: Any, nd: int = 3) -> Any:
    return round(v, nd) if isinstance(v, float) else v


def render_report(run: dict[str, Any]) -> str:
    """A Markdown report of one refresh: what ran, what was cached, drift, decisions."""
    lines = [
        f"# SparseEval refresh {run.get('started', '')}",
        "",
        f"- ingest: {_ingest_line(run.get('ingest') or {})}",
        f"- benchmarks: {len(run['results'])}; trained {run['n_trained']},"
        f" cached {run['n_cached']}; published {run['n_published']}",
        f"- code version `{code_version()}`; settings n_anchors={run['settings'].get('n_anchors')}"
        f", refine_steps={run['settings'].get('refine_steps')}, seed={run['settings'].get('seed')}",
        "",
        "| benchmark | models x items | training | test MAE (points) | Kendall tau | drift"
        " | decision |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in run["results"]:
        fit, mat, dec = r.get("fit") or {}, r.get("matrix") or {}, r.get("decision") or {}
        test = fit.get("test_metrics") or {}
        training = "cached" if r.get("fit_cached") else ("trained" if fit else "-")
        lines.append(
            f"| {r['benchmark']} | {mat.get('n_models', '?')} x {mat.get('n_items', '?')}"
            f" | {training} | {_fmt(test.get('mae'))} | {_fmt(test.get('kendall_tau'))}"
            f" | {_fmt((dec.get('figures') or {}).get('fresh_mae'))}"
            f" | {r.get('outcome', '')} |"
        )
    lines += ["", "## Decisions", ""]
    for r in run["results"]:
        dec = r.get("decision") or {}
        why = f"{dec['reason']}; " if dec.get("reason") else ""
        lines.append(f"- **{r['benchmark']}**: {why}{r.get('outcome', '')}")
        gate = r.get("gate") or {}
        if gate.get("reason"):
            lines.append(f"  - gate: {gate['reason']}")
        if r.get("published_path"):
            lines.append(f"  - files: `{r['published_path']}`")
    lines += ["", "Test MAE: the candidate's held-out test split (never seen in training)."]
    return "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "-"


def _ingest_line(ing: dict[str, Any]) -> str:
    if not ing:
        return "no sources"
    synth = " (filled the empty store from the built-in synthetic leaderboard)"
    return (
        f"{ing.get('units', 0)} unit(s), {ing.get('skipped', 0)} already ingested,"
        f" {ing.get('new', 0):,} new results, {ing.get('quarantined', 0)} quarantined"
        + (synth if ing.get("filled_with_synthetic") else "")
    )


def write_report(reports_dir: str | Path, markdown: str, stamp: str | None = None) -> Path:
    folder = Path(reports_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = stamp or datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = folder / f"refresh-{stamp}.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(markdown)
    os.replace(tmp, path)
    latest = folder / "refresh-latest.md"
    tmp_latest = folder / "refresh-latest.md.tmp"
    tmp_latest.write_text(markdown)
    os.replace(tmp_latest, latest)
    return path
