"""Flow tests on tiny synthetic data, under a temporary Prefect server (`prefect_harness`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparseeval import pipeline, publish

pytestmark = pytest.mark.usefixtures("prefect_harness")

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
    src = pipeline.SyntheticLeaderboard(n_models=n_models, items=ITEMS, seed=3)
    import polars as pl

    frames = [src.frame(b, lo, hi) for b in (benchmarks or ITEMS)]
    path = folder / f"release-{lo}-{hi}-{'-'.join(benchmarks or ITEMS)}.parquet"
    pl.concat(frames).select("model", "benchmark", "item", "correct").write_parquet(path)
    return str(path)


def run(home: Path, sources, **overrides):
    from flows.refresh import refresh

    return refresh(sources=sources, home=str(home), settings_overrides=TINY | overrides)


def by_bench(run_out):
    return {r["benchmark"]: r for r in run_out["results"]}


def test_refresh_then_cached_then_incremental(tmp_path):
    home = tmp_path / "home"
    first = run(home, [release(tmp_path, 0, 200)])
    res = by_bench(first)
    assert set(res) == set(ITEMS)
    assert first["n_trained"] == 2 and first["n_published"] == 2
    for b in ITEMS:
        assert publish.latest_version(home / "published", b) == 1
        assert res[b]["fit"]["test_metrics"]["mae"] < 15
    assert Path(first["report_path"]).is_file()

    second = run(home, [])
    assert second["n_trained"] == 0 and second["n_cached"] == 2
    assert second["n_published"] == 0
    assert all(r["matrix_cached"] for r in second["results"])

    third = run(home, [release(tmp_path, 200, 230, ["gsm8k"])], drift_mae_points=1000,
                drift_mae_ratio=1000, drift_out_of_range_frac=1)  # fmt: skip
    res = by_bench(third)
    assert res["gsm8k"]["fit_cached"] is False and res["arc"]["fit_cached"] is True
    assert third["n_trained"] == 1 and third["n_published"] == 0
    assert res["gsm8k"]["n_fresh"] == 30
