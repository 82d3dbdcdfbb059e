"""Production nights (issue [2/5]): a deployed run reads its home from the environment and
never fills the synthetic demo; one run per home; a failed source fails the run; every
published set says what it estimates and where its data came from."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest
from sparseeval.flows import _home
from sparseeval.flows.refresh import refresh

from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.pipeline.lease import LEASE_FILE
from tests.helpers import TINY, InADeployment, release, run


def _failure(settings_overrides=TINY, **kwargs) -> str:
    state = refresh(return_state=True, settings_overrides=settings_overrides, **kwargs)
    assert state.is_failed()
    exc = state.result(raise_on_failure=False)
    return f"{type(exc).__name__}: {exc}"


def test_a_deployed_run_needs_an_explicit_home(prefect_harness, monkeypatch, tmp_path):
    monkeypatch.setattr(_home, "deployment", InADeployment)
    monkeypatch.delenv("SPARSEEVAL_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert _failure(fill_if_empty=False) == f"SettingsError: {_home.NO_HOME}"
    assert not (tmp_path / ".sparseeval").exists()  # nothing written in the worker's folder


def test_a_deployed_run_never_fills_the_demo(prefect_harness, monkeypatch, tmp_path):
    monkeypatch.setattr(_home, "deployment", InADeployment)
    home = tmp_path / "home"
    msg = _failure(home=str(home), fill_if_empty=True)
    assert msg == "SettingsError: " + _home.NO_SOURCES.format(home=home)
    assert not (home / "published").exists()


def test_a_second_run_on_the_home_refuses_naming_the_holder(prefect_harness, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    holder = {"holder": "refresh nightly (flow run 42)", "token": "t", "pid": os.getpid(),
              "host": socket.gethostname(), "since": "2026-12-01T03:00:00+00:00",
              "renewed": time.time()}  # fmt: skip
    (home / LEASE_FILE).write_text(json.dumps(holder))
    msg = _failure(home=str(home), settings_overrides=TINY | {"lease_wait_seconds": 0.2})
    assert msg.startswith(f"LeaseHeld: home {home} is in use by 'refresh nightly (flow run 42)'")
    assert json.loads((home / LEASE_FILE).read_text())["token"] == "t"  # left as it was


def test_a_home_that_is_a_file_fails_at_once(prefect_harness, tmp_path):
    home = tmp_path / "home"
    home.write_text("not a folder")
    start = time.monotonic()
    assert _failure(home=str(home)).startswith(f"SettingsError: home {home} is not a folder")
    assert time.monotonic() - start < 30  # no retries with back-off


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_a_failed_source_fails_the_run_and_is_in_the_summary(prefect_harness, tmp_path):

    home = tmp_path / "home"
    good = run(home, [release(tmp_path, 0, 200)])
    assert good.failed == [] and not (home / LEASE_FILE).exists()  # the lease is given back
    state = refresh(sources=[str(tmp_path / "typo.parquet")], home=str(home),
                    settings_overrides=TINY, return_state=True)  # fmt: skip
    assert state.is_failed()
    assert str(state.result(raise_on_failure=False)).startswith(
        f"refresh failed for source {tmp_path / 'typo.parquet'}: {tmp_path / 'typo.parquet'}:"
        " no such file or folder; report at "
    )


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_the_manifest_says_what_it_estimates_and_where_the_data_came_from(
    prefect_harness, tmp_path
):
    home = tmp_path / "home"
    path = release(tmp_path, 0, 200, benchmarks=["arc"])
    run(home, [path])
    manifest = load_anchor_set(home / "published", "arc").manifest
    assert manifest["target"]["kind"] == "items"
    assert manifest["target"]["definition"].startswith("mean over the 60 stored items")
    assert manifest["provenance"]["synthetic"] is False
    assert manifest["provenance"]["kinds"]["long-parquet"]["sources"] == [path]
    demo = tmp_path / "demo"
    run(demo, ["synthetic:n_models=200,benchmarks=arc"])
    manifest = load_anchor_set(demo / "published", "arc").manifest
    assert manifest["provenance"]["synthetic"] is True


def test_predict_says_what_the_set_estimates_and_warns_on_the_demo(prefect_harness, tmp_path,
                                                                   capsys):  # fmt: skip
    from sparseeval.cli import main
    from sparseeval.consume.sets.anchorset import load_anchor_set

    demo = tmp_path / "demo"
    run(demo, ["synthetic:n_models=200,benchmarks=arc"])
    aset = load_anchor_set(demo / "published", "arc")
    answers = tmp_path / "a.csv"
    answers.write_text("item,correct\n" + "".join(f"{i},1\n" for i in aset.items))
    capsys.readouterr()
    assert main(["predict", "--anchor-set", str(demo / "published"), "--benchmark", "arc",
                 "--responses", str(answers)]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"estimates: {aset.target} (data: {aset.data})"
    assert aset.target.startswith("mean over the") and aset.data.startswith("synthetic")
    assert lines[2] == (
        "note: this set was fit on the built-in SYNTHETIC demo leaderboard, not real data"
    )
    est = aset.predict({i: 1 for i in aset.items})
    assert est.synthetic and est.target == aset.target
