"""The report's coverage verdict is the gate's test, and a suite's readers are checked alike."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.pipeline.gate import CoverageCheck, coverage_check
from sparseeval.pipeline.manifest import interval
from sparseeval.pipeline.reports.anchor_report import coverage_verdict
from sparseeval.pipeline.reports.coverage import suite_blocks, suite_verdicts


@pytest.mark.parametrize("coverage", [0.86, 0.871, 0.88, 0.9, 0.93])
def test_the_verdict_says_below_exactly_when_the_gate_widens(coverage):
    check = CoverageCheck(coverage, 400, 0.9)
    text = coverage_verdict(coverage, 0.9, 400)
    assert ("BELOW" in text) == check.below
    assert ("consistent" in text) != (check.below or "above" in text)


def test_an_under_covering_suite_reader_is_widened_and_the_report_says_so():
    rng = np.random.default_rng(0)
    calib = rng.normal(0, 0.01, 300)  # calibrated narrow ...
    test_true = rng.uniform(0.2, 0.8, 300)
    test_pred = test_true + rng.normal(0, 0.03, 300)  # ... wrong on the test models
    reader = type("R", (), {"calibration_residuals_": calib, "calibration_predictions_": None})
    got = interval(
        reader, {"interval_level": 0.9}, {"test_pred": test_pred, "test_true": test_true}
    )
    assert got["coverage_check"]["action"] == "widened" and got["test_coverage"] < 0.8
    widened = ConformalInterval.from_dict(got)
    assert widened.coverage(test_pred, test_true) >= 0.9
    fine = interval(reader, {"interval_level": 0.9},
                    {"test_pred": test_true, "test_true": test_true})  # fmt: skip
    member = lambda iv: {"items": ["1"], "reader": "ridge", "joint": {"interval": iv}}  # noqa: E731
    members = {"arc": member(got), "mmlu": member(fine)}
    (_, (_, _, rows), (_, note), *_) = suite_blocks({"suite": {"members": members}})
    assert rows[0][-2].endswith("(BELOW nominal: widened before publishing)")
    assert "widened" not in rows[1][-2] and rows[0][-1] == "not measured"  # no own reader here
    assert "widened to nominal on the test models before publishing" in note
    (line,) = suite_verdicts({"suite": {"members": members}})
    assert f"arc all anchors {100 * got['test_coverage']:.1f}% (BELOW nominal" in line
    assert coverage_check(widened, test_pred, test_true)[1]["action"] == "kept"


def test_the_gates_coverage_check_is_of_the_interval_a_user_gets():
    """Flagged models widened and the top edge count: a set whose plain interval misses
    the top of its test models is kept when its edge covers them (and the manifest says so)."""
    from sparseeval.consume.scoring.flags import Edge, PoolCheck

    conf = ConformalInterval(0.9, 0.02, 0.03, 100)
    pred = np.linspace(0.3, 0.9, 100)
    true = pred + np.where(pred > 0.75, 0.05, 0.0)  # the top quarter under-estimated by 5 points
    assert coverage_check(conf, pred, true)[1]["action"] == "widened"  # plain: 75% covered
    edge = PoolCheck(0.0, 1.0, 0.0, (0.0,), (1.0,), -9.0, 0.02, 3.0, top=Edge(0.75, 0.0, 0.06))
    kept, check = coverage_check(conf, pred, true, edge)
    assert check["action"] == "kept" and check["coverage_before"] == 1.0 and kept == conf
    flagged = pred > 0.75  # flags are said, not widened: without the edge the check widens
    _, check = coverage_check(conf, pred, true, replace(edge, top=None), flagged)
    assert check["action"] == "widened"
    reader = type("R", (), {"calibration_residuals_": np.full(100, 0.02),
                            "calibration_predictions_": None})  # fmt: skip
    inputs = {"test_pred": pred, "test_true": true, "test_flag_range": [False] * 100,
              "test_flag_pattern": [False] * 100}  # fmt: skip
    action = lambda *pool: interval(reader, {"interval_level": 0.9}, inputs, *pool)[  # noqa: E731
        "coverage_check"]["action"]  # fmt: skip
    assert action(edge.to_dict()) == "kept" and action() == "widened"
