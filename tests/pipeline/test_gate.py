"""The paired quality gate (`sparseeval.pipeline.gate`), on hand-computed examples."""

from __future__ import annotations

import numpy as np
import pytest

from sparseeval.pipeline.gate import compare_group, decide


def test_known_answer():
    truth = [0.50, 0.60, 0.70, 0.80]
    live = [0.52, 0.57, 0.70, 0.84]  # |errors| 2, 3, 0, 4 points
    cand = [0.51, 0.61, 0.72, 0.80]  # |errors| 1, 1, 2, 0 points -> d = -1, -2, 2, -4
    g = compare_group("heldout", live, cand, truth)
    assert g.n == 4 and g.live_mae == pytest.approx(2.25) and g.candidate_mae == pytest.approx(1.0)
    assert g.difference == pytest.approx(-1.25)
    # sd(d, ddof=1) = sqrt(((.25)^2 + (.75)^2 + (3.25)^2 + (2.75)^2) / 3) = sqrt(6.25) = 2.5
    assert g.noise == pytest.approx(1.645 * 2.5 / 2)
    assert g.verdict == "within noise"
    assert g.line() == ("heldout (4 models): candidate MAE 1.000 vs live 2.250 points"
                        " (difference -1.250 ± 2.056: within noise)")  # fmt: skip


def test_a_tiny_gap_on_many_models_is_noise_not_a_refusal():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.3, 0.8, 79)
    live = truth + rng.normal(0, 0.03, 79)
    err = np.abs(live - truth) + rng.normal(0.0004, 0.005, 79)  # 0.04 points worse on average
    cand = truth + np.sign(live - truth) * err
    ok, why = decide([compare_group("heldout", live, cand, truth)])
    assert ok and "within noise" in why


def test_clearly_worse_on_fresh_models_is_refused_and_clearly_better_accepted():
    truth = np.linspace(0.3, 0.9, 30)
    live = truth + 0.02  # 2 points off everywhere
    worse, better = truth + np.r_[0.05, 0.04].repeat(15), truth + 0.001
    ok, why = decide([compare_group("heldout", live, live, truth),
                      compare_group("fresh heldout", live, worse, truth)])  # fmt: skip
    assert not ok and why.startswith("refused: ") and "fresh heldout (30 models)" in why
    assert why.endswith(": worse)")
    ok, why = decide([compare_group("fresh heldout", live, better, truth)])
    assert ok and why.endswith(": better)")


def test_nothing_to_compare_is_a_refusal_with_a_reason():
    assert decide([]) == (False, "candidate could not be compared with the live set on any model")


# -- the coverage check ---------------------------------------------------------------


def _under_covering(seed: int = 0):
    """Intervals calibrated on small errors, test models whose errors are twice as large."""
    from sparseeval.consume.scoring.conformal import ConformalInterval

    rng = np.random.default_rng(seed)
    cp, tp = rng.uniform(0.3, 0.8, 200), rng.uniform(0.3, 0.8, 150)
    ct, tt = cp - rng.normal(0, 0.01, 200), tp - rng.normal(0, 0.02, 150)
    return ConformalInterval.fit(cp - ct, 0.9, pred=cp), cp, ct, tp, tt


def test_coverage_below_nominal_beyond_its_error_widens_the_intervals():
    from sparseeval.pipeline.gate import coverage_check

    conf, cp, ct, tp, tt = _under_covering()
    wide, check = coverage_check(conf, tp, tt)
    assert check["action"] == "widened" and check["coverage_before"] < 0.9 - 0.0245
    assert check["standard_error"] == pytest.approx(np.sqrt(0.09 / 150))
    assert wide.coverage(tp, tt) >= 0.9 and wide.coverage(cp, ct) >= 0.9
    assert "below nominal by more than its standard error" in check["reason"]
    assert "widened to nominal on the test models" in check["reason"]
    kept, check = coverage_check(conf, cp[:150], ct[:150])  # calibration-like errors
    assert kept is conf and check["action"] == "kept" and "within" in check["reason"]


def test_a_published_manifest_of_an_under_covering_candidate_is_widened_and_says_so():
    """Fails before issue 20: the manifest kept the narrow intervals, with no check."""
    from types import SimpleNamespace

    from sparseeval.consume.scoring.conformal import ConformalInterval
    from sparseeval.pipeline.manifest import interval

    conf, cp, ct, tp, tt = _under_covering(1)
    est = SimpleNamespace(calibration_residuals_=cp - ct, calibration_predictions_=cp,
                          calibration_source_="calibration")  # fmt: skip
    out = interval(est, {"interval_level": 0.9}, {"test_pred": tp, "test_true": tt})
    assert out["coverage_check"]["action"] == "widened"
    published = ConformalInterval.from_dict(out)
    assert published.adaptive and max(published.quantiles) > max(conf.quantiles)
    assert published.coverage(tp, tt) >= 0.9
    assert out["test_coverage"] == pytest.approx(conf.coverage(tp, tt))  # measured before
