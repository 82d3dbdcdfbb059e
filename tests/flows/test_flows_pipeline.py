"""Prefect-free parts of the refresh pipeline: keys, artifacts, drift and gate decisions."""

from __future__ import annotations

import numpy as np
import pytest

from sparseeval import Settings, make_synthetic
from sparseeval.method.splits import calibration_split
from sparseeval.pipeline import artifacts, drift, gate, recipe, sources
from sparseeval.pipeline.records import LiveSet


def settings(tmp_path, **kw):
    return Settings.load(path=None, env={}, home=tmp_path, **kw)


def test_artifact_paths_are_content_keyed(tmp_path):
    p = artifacts.artifact_path(tmp_path, "matrix", "abc")
    assert p == tmp_path / "matrix" / "abc"
    with pytest.raises(ValueError):
        artifacts.artifact_path(tmp_path, "matrix", "../x/y")


def test_fit_key_covers_data_settings_and_home(tmp_path):
    s = settings(tmp_path)
    k = artifacts.fit_key("arc", "fp1", s)
    assert k == artifacts.fit_key("arc", "fp1", settings(tmp_path))  # stable
    assert k != artifacts.fit_key("arc", "fp2", s)  # data
    assert k != artifacts.fit_key("winogrande", "fp1", s)  # the benchmark (same answers)
    assert k != artifacts.fit_key("arc", "fp1", s.replace(n_anchors=50))  # training settings
    assert k != artifacts.fit_key("arc", "fp1", settings(tmp_path / "other"))  # artifacts folder
    # settings that do not change the fit do not change the key
    assert k == artifacts.fit_key("arc", "fp1", s.replace(drift_mae_points=9.0))
    assert artifacts.code_version().startswith("0.")


def test_matrix_roundtrip(tmp_path):
    m = make_synthetic(30, 12, seed=1)
    path = artifacts.save_matrix(m, tmp_path / "m.npz")
    back = artifacts.load_matrix(path)
    assert back.fingerprint() == m.fingerprint()
    assert back.values.dtype == np.int8


def test_synthetic_source_units_are_keyed_by_release():
    src = sources.SyntheticLeaderboard(n_models=50, items={"arc": 10, "gsm8k": 8}, seed=2)
    keys = [u.key for u in src.units(None)]
    assert len(keys) == len(set(keys)) == 2
    later = sources.SyntheticLeaderboard(
        n_models=50, items={"arc": 10, "gsm8k": 8}, seed=2, model_range=(40, 50),
        benchmarks=("arc",),
    )  # fmt: skip
    (unit,) = list(later.units(None))
    assert unit.key not in keys
    frame = later.frame("arc", 40, 50)
    assert frame.height == 100 and set(frame["correct"].unique()) <= {"0", "1"}
    want = src.leaderboard["arc"].values[40]
    assert frame["correct"].to_list()[:10] == ["1" if v > 0 else "0" for v in want]


def test_parse_source_specs(tmp_path):
    src = sources.parse_source("synthetic:n_models=100,seed=3,models=0-80,benchmarks=arc+mmlu")
    assert src.n_models == 100 and src.model_range == (0, 80) and src.benchmarks == ("arc", "mmlu")
    assert type(sources.parse_source(str(tmp_path / "x.parquet"))).__name__ == "LongTable"
    assert type(sources.parse_source("wide:arc=a.csv")).__name__ == "WideTable"
    with pytest.raises(ValueError, match="bad option"):
        sources.parse_source("synthetic:colour=blue")
    with pytest.raises(ValueError, match="cannot tell"):
        sources.parse_source("notes.txt")


def test_drift_decision(tmp_path):
    s = settings(tmp_path, drift_mae_points=2.0, drift_mae_ratio=1.5, min_new_models=5)
    live = LiveSet(1, None, None, 1.0, None)
    d = drift.drift_decision("arc", None, {}, s)
    assert d.publish and not d.drift and "no published" in d.reason
    d = drift.drift_decision("arc", live, {"n_fresh": 0}, s)
    assert not d.publish
    d = drift.drift_decision("arc", live, {"n_fresh": 3, "fresh_mae": 9.0}, s)
    assert not d.publish and "min_new_models" in d.reason
    d = drift.drift_decision("arc", live, {"n_fresh": 10, "fresh_mae": 1.2}, s)
    assert not d.drift and not d.publish
    d = drift.drift_decision("arc", live, {"n_fresh": 10, "fresh_mae": 1.6}, s)
    assert d.drift and "x published test MAE" in d.reason  # ratio
    d = drift.drift_decision("arc", live, {"n_fresh": 10, "fresh_mae": 2.5}, s)
    assert d.drift and "> 2 points" in d.reason
    d = drift.drift_decision(
        "arc", live, {"n_fresh": 10, "fresh_mae": 0.5, "out_of_range_frac": 0.5}, s
    )
    assert d.drift and "outside the training range" in d.reason
    off = s.replace(drift_mae_points=0, drift_mae_ratio=0, drift_out_of_range_frac=0)
    assert not drift.drift_decision("arc", live, {"n_fresh": 10, "fresh_mae": 50.0}, off).drift


def test_gate_decision():
    assert gate.gate_decision(None, 3.0)[0]
    assert gate.gate_decision(2.0, 2.0)[0]
    assert gate.gate_decision(2.0, 1.5)[0]
    ok, why = gate.gate_decision(1.5, 2.0)
    assert not ok and "refused" in why
    assert not gate.gate_decision(1.5, None)[0]


def test_refresh_help_has_an_example(capsys):
    from sparseeval.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["refresh", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "sparseeval refresh --source" in out


def test_refresh_bad_setting_is_one_line(capsys):
    from sparseeval.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["refresh", "--set", "colour=blue"])
    assert args.func(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "colour" in err[0]


def test_calibration_models_are_set_aside_from_training(tmp_path):
    ids = np.array([f"org/m{i}" for i in range(1000)], dtype=object)
    train = np.arange(600)
    s = settings(tmp_path)
    fit_rows, calib = calibration_split(ids, train, 100)
    assert 60 < len(calib) < 140 and not set(fit_rows) & set(calib)
    assert sorted(np.r_[fit_rows, calib]) == list(train)
    assert len(calibration_split(ids, train[:40], s.splits.n_calib)[1]) == 0  # too few: none


def test_interrupted_first_fill_completes_on_the_next_run(tmp_path, monkeypatch):
    """A kill during the first synthetic fill left some benchmarks: the next run adds the rest."""
    from functools import partial

    small = partial(sources.SyntheticLeaderboard, n_models=40, items={"arc": 10, "gsm8k": 8})
    store = tmp_path / "store.duckdb"
    sources.ingest_sources(store, [small(benchmarks=("arc",))])  # the part that landed
    monkeypatch.setattr(sources, "SyntheticLeaderboard", small)
    again = sources.ingest_sources(store, [], fill_if_empty=True)
    assert again.filled_with_synthetic and again.new == 40 * 8  # gsm8k only; arc skipped
    assert set(recipe.benchmark_states(store)) == {"arc", "gsm8k"}
    quiet = sources.ingest_sources(store, [], fill_if_empty=True)
    assert not quiet.filled_with_synthetic and quiet.new == 0
    mixed = tmp_path / "real-arc.csv"
    mixed.write_text("model,benchmark,item,correct\nm1,arc,x1,1\n")
    refused = sources.ingest_sources(store, [str(mixed)])
    assert refused.failed == 1 and [r["message"] for r in refused.sources] == [
        "benchmark(s) arc in this store hold the built-in synthetic demo data; the two are"
        " never mixed: use another home (SPARSEEVAL_HOME) for real results"
    ]
    table = tmp_path / "real.csv"
    table.write_text("model,benchmark,item,correct\nm1,mmlu,x1,1\n")
    assert sources.ingest_sources(store, [str(table)]).new == 1
    assert sources.ingest_sources(store, [], fill_if_empty=True).units == 0  # real data: no fill
    filled = sources.ingest_sources(store, ["synthetic:n_models=20,benchmarks=mmlu"])
    assert (
        filled.failed == 1
        and "mmlu in this store hold real results" in filled.sources[0]["message"]
    )
