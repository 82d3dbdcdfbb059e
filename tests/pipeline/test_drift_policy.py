"""The drift policy converges: a paired gate, drift counted night by night, escalation."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from sparseeval.pipeline import drift
from sparseeval.pipeline.records import LiveSet
from sparseeval.pipeline.settings import Settings
from tests.helpers import release, run


def _live(version: int) -> LiveSet:
    return LiveSet(version, "2026-01-01T00:00:00+00:00", "x", 2.0, 8)


def test_gate_settings_are_checked(tmp_path):
    assert Settings.of(home=tmp_path).drift.gate == "paired"
    assert Settings.of(home=tmp_path).drift.drift_alert_nights == 3
    with pytest.raises(ValueError, match="gate must be 'paired' or 'strict'"):
        Settings.of(home=tmp_path, gate="lenient")
    with pytest.raises(ValueError, match="drift_alert_nights must be at least 1"):
        Settings.of(home=tmp_path, drift_alert_nights=0)


def test_drift_nights_counts_the_live_versions_run_of_drift(tmp_path):
    fig = {"n_fresh": 30, "fresh_mae": 4.0}
    assert drift.drift_nights(tmp_path, "arc", 1) == 0
    path = tmp_path / "published" / "arc-drift.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "mae": 4.0, "n_models": 30}\n')  # an older row: no drift
    assert drift.drift_nights(tmp_path, "arc", 1) == 0
    for drifted in (True, False, True, True):
        assert drift.record_drift(tmp_path, "arc", _live(1), fig, drifted)
    assert drift.drift_nights(tmp_path, "arc", 1) == 2
    assert drift.drift_nights(tmp_path, "arc", 2) == 0  # a new version starts afresh
    assert not drift.record_drift(tmp_path, "arc", None, fig, True)  # no live set: no row
    assert drift.drift_history(tmp_path, "arc")[-1]["drift"] is True


def test_suite_gate_paired_tolerates_noise_strict_does_not(monkeypatch):
    from types import SimpleNamespace

    from sparseeval.method.suite import AVERAGE
    from sparseeval.pipeline import assess

    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 0.8, 80)
    live_pred = truth + rng.normal(0, 0.03, 80)
    cand_pred = live_pred + np.sign(live_pred - truth) * 0.001 + rng.normal(0, 0.01, 80)
    fit = SimpleNamespace(test_pred={AVERAGE: cand_pred}, test_true={AVERAGE: truth},
                          suite=SimpleNamespace(benchmarks_=["arc", "gsm8k"]))  # fmt: skip
    live = SimpleNamespace(version=3)
    monkeypatch.setattr(assess, "_live_average_pred", lambda *a: live_pred)
    paired = assess.suite_gate(live, {}, fit, "paired")
    strict = assess.suite_gate(live, {}, fit, "strict")
    worse = SimpleNamespace(**{**vars(fit), "test_pred": {AVERAGE: truth + 0.2}})
    clearly = assess.suite_gate(live, {}, worse, "paired")
    assert paired.figures["candidate_mae"] > paired.figures["live_mae"]
    assert paired.accept and "within noise" in paired.reason, paired.reason
    assert not strict.accept
    assert not clearly.accept and "worse" in clearly.reason


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
@pytest.mark.usefixtures("prefect_harness")
def test_repeated_refusal_escalates_to_persistent_drift(tmp_path, monkeypatch):
    module = importlib.import_module("sparseeval.flows._results")  # where events are emitted
    events = []
    real_emit = module.emit_event
    monkeypatch.setattr(module, "emit_event", lambda **kw: events.append(kw) or real_emit(**kw))
    home = tmp_path / "home"
    run(home, [release(tmp_path, 0, 200, ["arc"])])
    from tests.flows.test_flows import WORSE

    weak = {"drift_mae_points": 0.01, **WORSE, "gate": "strict", "drift_alert_nights": 3}
    first = run(home, [release(tmp_path, 200, 260, ["arc"])], **weak).results[0]
    assert first.gate is not None and not first.gate.accept  # refused by the gate
    assert first.decision.figures["drift_nights"] == 1
    second = run(home, [], **weak).results[0]  # the same drift, the same refused candidate
    assert "already refused" in second.outcome
    assert "(refused 2 nights in a row)" in second.outcome, second.outcome
    assert not [e for e in events if e["event"] == "sparseeval.drift.persistent"]
    third = run(home, [], **weak).results[0]
    assert "(refused 3 nights in a row)" in third.outcome, third.outcome
    persistent = [e for e in events if e["event"] == "sparseeval.drift.persistent"]
    assert len(persistent) == 1
    assert persistent[0]["resource"]["prefect.resource.id"] == "sparseeval.benchmark.arc"
    assert persistent[0]["payload"]["nights"] == 3
    assert persistent[0]["payload"]["reason"].startswith("drift:")


def test_drift_is_judged_on_the_newest_arrivals_with_a_paired_test(tmp_path):
    s = Settings.of(home=tmp_path)
    quiet = {"n_fresh": 150, "n_new_since": 900, "fresh_mae": 2.7, "out_of_range_frac": 0.0}
    paired = {"paired_n": 30, "paired_live_mae": 2.7, "paired_candidate_mae": 2.1,
              "paired_arrivals": 320, "paired_noise": 0.3}  # fmt: skip
    same = drift.drift_decision("arc", _live(1), quiet | paired | {"paired_difference": -0.1}, s)
    assert not same.drift  # the candidate's edge is inside the noise
    assert same.reason.endswith(
        "(window: newest 150 of 900 new models; paired test on the newest 30 held-out models"
        " (among the newest 320 arrivals))"
    )
    better = drift.drift_decision("arc", _live(1), quiet | paired | {"paired_difference": -0.6}, s)
    assert better.drift and better.publish
    assert "live MAE 2.70 vs candidate 2.10 on the newest 30 held-out models" in better.reason
    with pytest.raises(ValueError, match="drift_paired_models must be 0 or at least 3"):
        Settings.of(home=tmp_path, drift_paired_models=2)


@pytest.mark.usefixtures("prefect_harness")
def test_the_drift_window_takes_the_newest_held_out_arrivals(tmp_path):
    home = tmp_path / "home"
    first = run(home, [release(tmp_path, 0, 200, ["arc"])])
    second = run(home, [release(tmp_path, 200, 260, ["arc"])], min_new_models=5,
                 drift_window=40, drift_paired_models=3)  # fmt: skip
    (r,) = second.results
    f = r.decision.figures
    assert first.results[0].published_version == 1
    assert (f["n_fresh"], f["n_new_since"], f["paired_n"]) == (40, 60, 3)
    assert "window: newest 40 of 60 new models; paired test on the newest 3" in r.decision.reason
    from sparseeval.pipeline.recipe import evaluation_of

    test = set(evaluation_of(r.fit)["test_ids"].tolist())
    newest = [m for m in reversed(drift.arrivals(home / "store.duckdb", "arc")) if m in test][:3]
    assert f["paired_arrivals"] == 260 - min(
        drift.arrivals(home / "store.duckdb", "arc").index(m) for m in newest
    )
    assert "window: " in Path(second.report_path).read_text()
