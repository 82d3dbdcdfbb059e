"""Bounded self-healing and alerts worth reading (issue [3/5]), against a real Prefect test
server: a refresh that always crashes is rerun once, its crashed rerun alerts once saying so
and is not rerun; a webhook alert names the run, deployment, link, failed file, reason and
report; a command-line refresh alerts too when `alert_webhook` is set."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
from sparseeval.flows import automations

from tests.helpers import TINY, wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def crashing(prefect_harness, receiver):
    """The rerun and alert automations, and `refresh/crashing` served by a subprocess:
    (its deployment id, the webhook's received bodies)."""
    from prefect.settings import PREFECT_API_URL

    url, got = receiver
    automations.install(url)
    now = automations.rerun_automation(after=timedelta(0))  # not a minute after each crash
    automations._remove(now.name)
    now.create()
    env = os.environ | {"PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONPATH": str(ROOT),
                        "PREFECT_RUNNER_POLL_FREQUENCY": "1"}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "tests.flows.crashing"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    with get_client(sync_client=True) as client:
        deployment = wait_for(lambda: _deployment(client), 120)
        yield client, deployment, got
    proc.terminate()
    proc.wait(30)


def _deployment(client):
    found = [d for d in client.read_deployments() if d.name == "crashing"]
    return found[0] if found else None


def _settle(seconds: float) -> float:
    """How long to wait for what should not come: three times what did take, 5-20 s."""
    return min(20.0, max(5.0, 3 * seconds))


def _runs(client, deployment):
    runs = client.read_flow_runs(
        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))
    )
    return sorted(runs, key=lambda r: r.created)


@pytest.mark.slow  # minutes: the slow group
def test_a_refresh_that_always_crashes_is_rerun_once_and_only_its_rerun_pages(crashing):
    client, deployment, got = crashing
    first = client.create_flow_run_from_deployment(deployment.id)
    both = lambda: [r for r in _runs(client, deployment) if r.state.is_crashed()]  # noqa: E731
    crashed = wait_for(lambda: len(both()) >= 2 and len(got) >= 1 and both(), 240)
    assert crashed, (_runs(client, deployment), got)
    came = crashed[1].created - crashed[0].state.timestamp  # how long the rerun took to come
    # a third run would come by three times that
    wait_for(lambda: len(_runs(client, deployment)) > 2, _settle(came.total_seconds()))
    runs = _runs(client, deployment)
    print("runs:", [(r.name, r.state.name, r.parameters) for r in runs])
    assert [r.id for r in runs[:1]] == [first.id] and len(runs) == 2, "one rerun, no loop"
    rerun = runs[1]
    assert rerun.parameters["rerun_of"] == str(first.id) and rerun.name.startswith("rerun ")
    for body in got:
        print("webhook body:", body)
    (again,) = got  # the first crash pages no one: its rerun started (and pages, crashing)
    assert again["subject"] == (f"SparseEval run {rerun.name} is Crashed: the automatic rerun"
                                " crashed too, not rerun again")  # fmt: skip
    assert f"run: {rerun.name} ({rerun.id})" in again["body"]
    assert "deployment: crashing" in again["body"]
    assert f"/runs/flow-run/{rerun.id}" in again["body"]  # the link to the run
    assert f"rerun of: {first.id}" in again["body"]
    assert "next: read the run's log" in again["body"]


@pytest.mark.slow  # a served subprocess and a real server's automations: the slow group
def test_a_rerun_that_crashes_before_it_starts_is_not_rerun(crashing):
    """The bound holds for a rerun that never got its `rerun ...` name: one that crashed
    before its flow started (a worker that could not start it) keeps the server's name."""
    from prefect.states import Crashed, Pending

    client, deployment, got = crashing
    before = {r.id for r in _runs(client, deployment)}
    said = {
        "0e6b5c0c-0000-4000-8000-000000000000": "the automatic rerun crashed too, not rerun again",
        None: "it crashed before it started, not rerun",  # a first try that never started
    }
    crashed, took = [], []
    for rerun_of, subject in said.items():
        run = client.create_flow_run_from_deployment(
            deployment.id, parameters={"rerun_of": rerun_of} if rerun_of else {},
            state=Pending(),  # never picked up by the served process
        )  # fmt: skip
        assert not run.name.startswith(("rerun ", "refresh "))  # the server's name
        client.set_flow_run_state(run.id, Crashed(message="its process never started"),
                                  force=True)  # fmt: skip
        start = time.monotonic()
        alert = wait_for(lambda: [a for a in got if run.name in a["subject"]], 120)  # noqa: B023
        assert alert, got
        assert alert[0]["subject"] == f"SparseEval run {run.name} is Crashed: {subject}"
        crashed.append(run.id)
        took.append(time.monotonic() - start)
    # a rerun would come by three times as long as the alerts on the same events took
    wait_for(lambda: len(_runs(client, deployment)) > len(before) + 2, _settle(max(took)))
    new = [r for r in _runs(client, deployment) if r.id not in before]
    assert [r.id for r in new] == crashed, [(r.name, r.parameters) for r in new]


@pytest.mark.usefixtures("prefect_harness")
def test_a_command_line_refresh_that_fails_alerts_the_webhook(receiver, cli_refresh, tmp_path,
                                                              capsys):  # fmt: skip
    url, got = receiver
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    bad = inbox / "bad.csv"
    bad.write_text("model,benchmark,item\nm1,arc,i1\n")  # no `correct` column
    old = os.path.getmtime(bad) - 3600
    os.utime(bad, (old, old))
    sets = [f"--set={k}={v}" for k, v in (TINY | {"alert_webhook": url}).items()]
    code = cli_refresh("--home", str(tmp_path / "home"), "--source", f"inbox:{inbox}", *sets)
    assert code != 0
    print("webhook body:", got)
    (alert,) = got
    assert alert["subject"].startswith("SparseEval run refresh ")
    assert alert["subject"].endswith(" is Failed")
    body = alert["body"]
    assert "deployment: none (command line)" in body
    assert "url: http" in body and "/runs/flow-run/" in body
    assert f"{bad}: line 1: missing column(s) correct" in body
    assert f"report at {tmp_path / 'home' / 'reports'}" in body
    assert body.endswith("next: fix what the message names (the report lists every failure),"
                         " then run the same command again")  # fmt: skip
    assert "alert sent: SparseEval run" in capsys.readouterr().err
