"""Report: Markdown + self-contained HTML with PNG plots, and metrics.json."""

from __future__ import annotations

import json
import re

import numpy as np

from sparseeval.pipeline.reports.anchor_report import render_report

PNG = b"\x89PNG\r\n\x1a\n"


def manifest(**kw) -> dict:
    return {
        "benchmark": "hellaswag",
        "version": 4,
        "created": "2026-01-01T00:00:00+00:00",
        "library_version": "0.1.0",
        "n_anchors": 10,
        "items": [f"{i}" for i in range(10)],
        "data_fingerprint": "f" * 64,
        "split_sizes": {"train": 300, "valid": 100, "test": 100},
        "predictor": {"name": "ridge"},
        "metrics": {"test": {"mae": 1.8, "kendall_tau": 0.91}, "valid": {"mae": 1.7}},
        "interval": {
            "level": 0.9,
            "halfwidth": 0.03,
            "diff_halfwidth": 0.042,
            "n_calibration": 100,
        },
        "settings": {"drift_mae_points": 2.0},
    } | kw


def inputs() -> dict:
    rng = np.random.default_rng(0)
    true = rng.uniform(0.3, 0.9, 100)
    return {
        "test_pred": (true + rng.normal(0, 0.018, 100)).tolist(),
        "test_true": true.tolist(),
        "budget_rows": [
            {"method": m, "n_anchors": k, "mae": mae / k**0.5, "kendall_tau": 1 - 1 / k}
            for m, mae in (("SparseEval", 20), ("random+ridge", 26), ("anchor points", 40))
            for k in (10, 25, 50, 100)
        ],
        "drift_rows": [
            {"version": 2, "mae": 1.5, "n_models": 30, "date": "2025-11-01"},
            {"version": 3, "mae": 2.6, "n_models": 22, "date": "2025-12-01"},
        ],
    }


def test_full_report_is_self_contained(tmp_path):
    paths = render_report(tmp_path, manifest(), inputs())
    names = sorted(p.name for p in paths["plots"])
    assert names == ["bands.png", "budget.png", "drift.png", "predicted_vs_true.png"]
    for p in paths["plots"]:
        assert p.read_bytes().startswith(PNG) and p.stat().st_size > 5000
    md = paths["md"].read_text()
    for p in paths["plots"]:
        assert f"](plots/{p.name})" in md
    assert "## Should I trust it?" in md and "held-out test models" in md
    assert "+-3.0 points" in md and "4.2 points" in md  # interval and resolvable difference
    assert "above the drift threshold" in md
    html = paths["html"].read_text()
    assert html.count("data:image/png;base64,") == 4
    srcs = re.findall(r"src='([^']*)'", html)
    assert srcs and all(s.startswith("data:") for s in srcs)  # nothing external
    assert "http://" not in html and "https://" not in html and "<script" not in html
    metrics = json.loads(paths["metrics"].read_text())
    assert metrics["version"] == 4 and metrics["interval"]["n_test"] == 100
    assert 0.75 <= metrics["interval"]["test_coverage"] <= 1.0
    assert metrics["resolvable_difference"] == 0.042 and len(metrics["drift"]) == 2


def test_report_without_inputs_says_what_is_missing(tmp_path):
    paths = render_report(tmp_path, manifest(metrics={}), {})
    md = paths["md"].read_text()
    assert paths["plots"] == []
    assert "no test predictions were given" in md and "no drift checks yet" in md
    assert "not measured" in md
    html = paths["html"].read_text()
    assert "<em>(no budget comparison was given)</em>" in html
    metrics = json.loads(paths["metrics"].read_text())
    assert metrics["interval"]["test_coverage"] is None


def test_unbounded_interval_is_reported_not_crashing(tmp_path):
    iv = {"level": 0.9, "halfwidth": None, "diff_halfwidth": None, "n_calibration": 3}
    paths = render_report(tmp_path, manifest(interval=iv), inputs())
    assert "Too few calibration models" in paths["md"].read_text()
    assert json.loads(paths["metrics"].read_text())["interval"]["halfwidth"] is None


def test_report_shows_adaptive_width_bands_and_a_widened_candidate(tmp_path):
    from sparseeval.consume.scoring.conformal import ConformalInterval
    from sparseeval.pipeline.gate import coverage_check

    rng = np.random.default_rng(3)
    cp, tp = rng.uniform(0.2, 0.9, 200), rng.uniform(0.2, 0.9, 120)
    ct = cp - rng.normal(0, 0.004 + 0.1 * cp * (1 - cp) ** 2)
    tt = tp - rng.normal(0, 2 * (0.004 + 0.1 * tp * (1 - tp) ** 2))
    wide, check = coverage_check(ConformalInterval.fit(cp - ct, 0.9, pred=cp), tp, tt)
    iv = wide.to_dict() | {"coverage_check": check, "calibrated_on": "calibration"}
    data = inputs() | {"test_pred": tp.tolist(), "test_true": tt.tolist()}
    paths = render_report(tmp_path, manifest(interval=iv), data)
    md = paths["md"].read_text()
    assert "depending on the estimate" in md and "width that follows the estimate" in md
    assert "Not published as fitted: test coverage" in md and "widened to nominal" in md
    assert f"{100 * check['coverage_before']:.1f}% (standard error" in md  # before widening
    assert "| third of the estimate |" in md and "| third of the true score |" in md
    assert "](plots/bands.png)" in md
    bands = json.loads(paths["metrics"].read_text())["interval"]["bands"]
    assert [r["band"] for r in bands["estimate"]] == ["low", "middle", "high"]
    assert sum(r["n"] for r in bands["truth"]) == 120


def test_flag_rates_count_both_reasons_and_cover_flagged_models_with_the_wider_interval():
    from sparseeval.consume.scoring.conformal import ConformalInterval
    from sparseeval.consume.scoring.flags import PoolCheck
    from sparseeval.pipeline.reports.flags import flag_blocks, flag_summary

    conf = ConformalInterval.fit(np.full(50, 0.02), 0.9)  # half-width 0.02 everywhere
    pred = np.array([0.3, 0.5, 0.3, 0.3])  # the 2nd beyond the range (0-0.45)
    true = np.array([0.3, 0.55, 0.35, 0.9])  # the 2nd inside only when widened x3 above
    inputs = {"test_pred": pred, "test_true": true,
              "test_flag_range": [False, True, False, False],
              "test_flag_pattern": [False, False, True, False]}  # fmt: skip
    pool = PoolCheck(0.0, 0.45, 0.0, (0.0,), (1.0,), -9.0, 0.02, 3.0).to_dict()  # no edge
    s = flag_summary(conf, pool, inputs)
    assert (s["flagged"], s["out_of_range"], s["answer_pattern"]) == (2, 1, 1)
    assert s["coverage_flagged"] == 0.5 and s["coverage_others"] == 0.5  # the pattern: said
    assert s["coverage_all"] == 0.5
    text = flag_blocks(s, 0.9)[1][1]
    assert text.startswith("2 of 4 test models (50.0%) were flagged")
    assert "3x as wide on the outer side" in text
    assert flag_summary(conf, None, inputs) is None and flag_blocks(None, 0.9) == []
    assert s["saturated"] is None and "what these anchors can tell" not in text  # older fits
    # saturated models (the zone, or answers like the strongest's) count as flagged too
    saturated = flag_summary(conf, pool, inputs | {"test_flag_saturated": [0, 0, 1, 1]})
    assert (saturated["flagged"], saturated["saturated"]) == (3, 2)
    said = flag_blocks(saturated, 0.9)[1][1]
    assert said.startswith("3 of 4 test models (75.0%) were flagged")
    assert "2 at the top or bottom of what these anchors can tell" in said
