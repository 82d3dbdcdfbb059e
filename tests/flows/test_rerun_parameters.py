"""The automatic rerun of a crashed refresh does the crashed run's work: the rerun automation
passes only `rerun_of` (`flows/automations.py`), and the rerun reads the crashed run's
parameters from the server (an operator's trial: a run started with `settings_overrides`
was rerun with the deployment's defaults)."""

from __future__ import annotations

import sys

import pytest
from prefect.client.orchestration import get_client
from sparseeval.flows.refresh import refresh

refresh_flow = sys.modules[refresh.__module__]  # the module (the package exports the flow)


@pytest.mark.usefixtures("prefect_harness")
def test_a_rerun_does_the_crashed_runs_work_with_its_parameters(tmp_path, monkeypatch):
    seen = {}

    def night(settings, sources, benchmarks, in_deployment, fill_if_empty, dask_processes):
        seen.update(settings=settings, sources=sources, benchmarks=benchmarks,
                    fill=fill_if_empty)  # fmt: skip
        return None

    monkeypatch.setattr(refresh_flow, "night", night)
    crashed = {"sources": ["new.parquet"], "benchmarks": ["arc"], "n_anchors": 50,
               "settings_overrides": {"epochs": 300}, "home": str(tmp_path / "home"),
               "fill_if_empty": False}  # fmt: skip
    with get_client(sync_client=True) as client:
        run = client.create_flow_run(refresh, parameters=crashed)
    refresh(rerun_of=str(run.id))
    s = seen["settings"]
    assert (seen["sources"], seen["benchmarks"], seen["fill"]) == (["new.parquet"], ["arc"], False)
    assert (s.selection.n_anchors, s.predictor.epochs, s.paths.home) == (50, 300, tmp_path / "home")


@pytest.mark.usefixtures("prefect_harness")
def test_a_rerun_whose_crashed_run_is_unknown_runs_with_its_own_parameters(monkeypatch, caplog):
    seen = {}
    monkeypatch.setattr(refresh_flow, "night", lambda settings, *a: seen.setdefault("s", settings))
    refresh(rerun_of="00000000-0000-0000-0000-000000000000", n_anchors=30)
    assert seen["s"].selection.n_anchors == 30
    assert "its parameters could not be read" in caplog.text
