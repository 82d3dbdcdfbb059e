"""The report's coverage verdict is the gate's test, and a suite's readers are checked alike."""

from __future__ import annotations

import numpy as np
import pytest

from sparseeval.consume.conformal import ConformalInterval
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
