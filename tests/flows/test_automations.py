"""The automations kept as code (flows/automations.py), against a real Prefect test server:
they install idempotently, a webhook receiver on 127.0.0.1 gets the alerts, and a flow run
whose heartbeats stop is marked Crashed.

The event and state names follow Prefect's "How to detect and respond to zombie flows"
(`prefect.flow-run.heartbeat`, proactive trigger, `ChangeFlowRunState(CRASHED)`).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.events import emit_event
from prefect.states import Running
from sparseeval.flows import automations

from tests.helpers import wait_for


@pytest.fixture(scope="module")
def server(prefect_harness):
    """The session's Prefect test server (a second harness nested in it loses events), left
    without SparseEval automations or webhook block."""
    yield
    for name in automations.installed():
        automations._remove(name)
    if automations._existing_block():
        automations.CustomWebhookNotificationBlock.delete(automations.WEBHOOK_BLOCK)


ALL = sorted(
    automations.PREFIX + n
    for n in ("crash-zombie-runs", "rerun-crashed-refresh", "alert-run-failed",
              "alert-run-crashed", "alert-rerun-not-started", "alert-persistent-drift")
)  # fmt: skip


def test_install_creates_every_automation_once_and_alerts_reach_the_webhook(server, receiver):
    url, got = receiver
    assert automations.install(url) and automations.install(url)  # twice: replaced, not doubled
    assert automations.installed() == ALL
    with get_client(sync_client=True) as client:
        (rerun,) = client.read_automations_by_name(automations.PREFIX + "rerun-crashed-refresh")
    assert rerun.actions[0].schedule_after == timedelta(seconds=60)  # past a stopping worker
    emit_event(
        event="sparseeval.drift.persistent",
        resource={
            "prefect.resource.id": "sparseeval.benchmark.arc",
            "prefect.resource.name": "arc",
        },
        payload={"nights": 3, "reason": "MAE 4.1 > 3 points on 60 new models"},
    )
    (alert,) = wait_for(lambda: got)
    assert alert["subject"] == "SparseEval: arc has drifted for 3 nights"
    assert alert["body"].startswith("MAE 4.1 > 3 points on 60 new models\n")


def test_without_a_webhook_only_the_healing_automations_are_installed(server, monkeypatch):
    monkeypatch.setattr(automations, "_existing_block", lambda: None)
    names = automations.install()
    assert names == [automations.PREFIX + "crash-zombie-runs",
                     automations.PREFIX + "rerun-crashed-refresh"]  # fmt: skip


@flow
def _idle() -> None:
    pass


@pytest.mark.slow  # a real server's heartbeat timeout: the slow group
def test_a_run_whose_heartbeats_stop_is_marked_crashed(server):
    zombie = automations.zombie_automation(after=timedelta(seconds=10))
    automations._remove(zombie.name)
    zombie.create()
    with get_client(sync_client=True) as client:
        run = client.create_flow_run(_idle, state=Running())
        emit_event(event="prefect.flow-run.heartbeat",
                   resource={"prefect.resource.id": f"prefect.flow-run.{run.id}"})  # fmt: skip
        state = wait_for(lambda: (s := client.read_flow_run(run.id).state).is_crashed() and s, 90)
    assert state and state.is_crashed()
    assert state.message == "Flow run marked as crashed: its heartbeats stopped."
