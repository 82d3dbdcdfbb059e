"""Small builders shared by the tests."""

from pathlib import Path

from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import evaluate
from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.versions import write_version


def tiny_fit(seed: int = 0, n_test: int = 80, n_valid: int = 80, item_ids=None):
    """A 300 x 60 synthetic matrix, its split and a quickly fitted 8-anchor SparseEval."""
    m = make_synthetic(300, 60, seed=seed)
    sp = split_models(m.model_ids, n_test=n_test, n_valid=n_valid, seed=seed)
    est = SparseEval(
        n_anchors=8, refine_steps=1, epochs=50, ensemble=1, predictor="ridge",
        progress=lambda s: None,
    )  # fmt: skip
    est.fit(m.values[sp.train], m.y[sp.train], m.values[sp.valid], m.y[sp.valid],
            item_ids=m.item_ids if item_ids is None else item_ids)  # fmt: skip
    return m, sp, est


def publish_fit(root, benchmark: str, fitted, **kw):
    """Write `fitted` (from `tiny_fit`) as the next version of `benchmark` under `root`."""
    m, sp, est = fitted
    pred = est.predict(m.values[sp.test])
    return write_version(
        root, benchmark, est, data_fingerprint=m.fingerprint(), split_sizes=sp.sizes(),
        metrics={"test": evaluate(pred, m.y[sp.test])}, settings=Settings(home=root),
        report_inputs={"test_pred": pred, "test_true": m.y[sp.test]}, **kw,
    )  # fmt: skip


# -- flows on tiny synthetic releases ----------------------------------------------------

ITEMS = {"arc": 60, "gsm8k": 50}
TINY = {
    "n_anchors": 8,
    "refine_steps": 2,
    "epochs": 50,
    "patience": 10,
    "n_test": 40,
    "n_valid": 30,
    "min_new_models": 5,
}


def release(folder: Path, lo: int, hi: int, benchmarks=None, n_models: int = 260) -> str:
    """Models [lo, hi) of one tiny synthetic leaderboard as a long Parquet file."""
    import polars as pl

    from sparseeval.pipeline import sources

    src = sources.SyntheticLeaderboard(n_models=n_models, items=ITEMS, seed=3)

    frames = [src.frame(b, lo, hi) for b in (benchmarks or ITEMS)]
    path = folder / f"release-{lo}-{hi}-{'-'.join(benchmarks or ITEMS)}.parquet"
    pl.concat(frames).select("model", "benchmark", "item", "correct").write_parquet(path)
    return str(path)


def run(home: Path, specs, **overrides):
    """The refresh flow on `specs` (None: the `sources` setting) with tiny settings."""
    from sparseeval.flows.refresh import refresh

    return refresh(sources=specs, home=str(home), settings_overrides=TINY | overrides)
