"""Every page needs a person (issue [4/5] item 3), against a real Prefect test server and a
webhook receiver: a crashed first try pages only when its automatic rerun does not start
(a host down, no worker); one whose rerun started pages nothing; a refused candidate pages
nothing (an older install's refusal alert is removed); a drift page names its run, link and
next step; a hand-run refresh turned away by a busy home pages nothing and says it waited."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import pytest
from prefect import flow
from prefect.automations import Automation
from prefect.client.orchestration import get_client
from prefect.events import emit_event
from prefect.events.actions import SendNotification
from prefect.events.schemas.automations import EventTrigger, Posture
from prefect.states import Crashed, Pending
from sparseeval.flows import automations
from sparseeval.flows._run import rerun_started

from sparseeval.pipeline.lease import HomeLease
from tests.helpers import TINY, wait_for

WITHIN = timedelta(seconds=15)  # how long a rerun may take to start, here


@pytest.fixture(scope="module")
def server(prefect_harness):
    """The session's Prefect test server, left without SparseEval automations or block."""
    yield
    for name in automations.installed():
        automations._remove(name)
    if automations._existing_block():
        automations.CustomWebhookNotificationBlock.delete(automations.WEBHOOK_BLOCK)


@pytest.fixture
def installed(server, receiver):
    """`automations install URL`, its rerun-start window shortened to `WITHIN`: (the
    webhook's received bodies, the block id)."""
    url, got = receiver
    automations.install(url)
    block = automations._existing_block()
    (short,) = [a for a in automations.alert_automations(block, rerun_within=WITHIN)
                if a.name.endswith("alert-rerun-not-started")]  # fmt: skip
    automations._remove(short.name)
    short.create()
    return got, block


def _refresh_deployment(client) -> tuple:
    """A `refresh` deployment tagged `sparseeval` that no worker serves: (its id, flow id)."""
    flow_id = client.create_flow_from_name("refresh")
    name = f"pages-{time.monotonic_ns()}"
    return client.create_deployment(flow_id=flow_id, name=name, tags=["sparseeval"]), flow_id


def _crashed_first_try(client, deployment_id):
    run = client.create_flow_run_from_deployment(
        deployment_id, name=f"refresh {time.monotonic_ns()}", state=Pending()
    )
    client.set_flow_run_state(run.id, Crashed(message="heartbeats stopped"), force=True)
    return client.read_flow_run(run.id)


@pytest.mark.slow  # waits out the 15 s rerun window on a real server: the slow group
def test_a_crashed_first_try_pages_only_when_its_rerun_does_not_start(installed):
    got, _ = installed
    with get_client(sync_client=True) as client:
        deployment_id, flow_id = _refresh_deployment(client)
        host_down = _crashed_first_try(client, deployment_id)
        crashed = time.monotonic()  # the window runs from this crash, not from the lines below
        rerun = _crashed_first_try(client, deployment_id)
        rerun_started(str(rerun.id), rerun.name, str(flow_id))  # what its rerun says first
        page = wait_for(lambda: [a for a in got if host_down.name in a["subject"]], 120)
        assert page, got
        assert time.monotonic() - crashed >= WITHIN.total_seconds() - 2  # not at the crash
        wait_for(lambda: [a for a in got if rerun.name in a["subject"]], 10)
    for alert in got:
        print("webhook body:", alert)
    assert [a["subject"] for a in got] == [
        f"SparseEval run {host_down.name} is Crashed and its automatic rerun has not started"
        " within 15 s"
    ]  # no page on either crash, none for the rerun that started
    body = got[0]["body"]
    assert f"run: {host_down.name} ({host_down.id})" in body
    assert f"/runs/flow-run/{host_down.id}" in body  # the link
    assert "Crashed: heartbeats stopped" in body
    assert "next: no worker has picked the rerun up" in body and "prefect worker start" in body


def test_a_crashed_rerun_pages_with_the_next_step(installed):
    got, _ = installed
    with get_client(sync_client=True) as client:
        deployment_id, _ = _refresh_deployment(client)
        run = client.create_flow_run_from_deployment(
            deployment_id, parameters={"rerun_of": "0e6b5c0c-0000-4000-8000-000000000000"},
            state=Pending(),
        )  # fmt: skip
        client.set_flow_run_state(run.id, Crashed(message="killed"), force=True)
        assert wait_for(lambda: got, 60), "no page"
        deployment = client.read_deployment(deployment_id)
    (page,) = got
    assert page["subject"] == (f"SparseEval run {run.name} is Crashed: the automatic rerun"
                               " crashed too, not rerun again")  # fmt: skip
    assert f"/runs/flow-run/{run.id}" in page["body"]
    assert "rerun of: 0e6b5c0c-0000-4000-8000-000000000000" in page["body"]
    assert page["body"].endswith(
        f"then run it again: `prefect deployment run 'refresh/{deployment.name}'`"
    )


@flow(name="drift-page-test")
def _drifting() -> str:
    emit_event(
        event="sparseeval.drift.persistent",
        resource={"prefect.resource.id": "sparseeval.benchmark.arc",
                  "prefect.resource.name": "arc"},
        payload={"nights": 3, "reason": "MAE 4.1 > 3 points on 60 new models"},
    )  # fmt: skip
    from prefect.runtime import flow_run

    return str(flow_run.get_id())


def test_a_refusal_pages_no_one_and_a_drift_page_names_its_run(installed, server):
    got, block = installed
    old = Automation(  # what an older `automations install` left: a page per refusal
        name=automations.PREFIX + "alert-publish-refused",
        trigger=EventTrigger(
            expect={"sparseeval.publish.refused"}, match=automations._benchmarks(),
            posture=Posture.Reactive, threshold=1, within=timedelta(0)),
        actions=[SendNotification(block_document_id=block, subject="refused", body="x")],
    )  # fmt: skip
    old.create()
    automations.install()  # again, with the block it saved
    assert automations.PREFIX + "alert-publish-refused" not in automations.installed()
    emit_event(
        event="sparseeval.publish.refused",
        resource={"prefect.resource.id": "sparseeval.benchmark.arc",
                  "prefect.resource.name": "arc"},
        payload={"reason": "candidate MAE 2.1 > live 1.9 points"},
    )  # fmt: skip
    run_id = _drifting()
    assert wait_for(lambda: got, 60), "no drift page"
    time.sleep(3)  # a refusal page would have come with it
    (page,) = got
    assert page["subject"] == "SparseEval: arc has drifted for 3 nights"
    assert page["body"].startswith("MAE 4.1 > 3 points on 60 new models\nrun: ")
    assert f"/runs/flow-run/{run_id}" in page["body"]
    assert "next: the live set stays until a candidate passes the gate" in page["body"]


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.mark.usefixtures("prefect_harness")
def test_a_hand_run_refresh_turned_away_by_a_busy_home_pages_no_one(tmp_path, receiver,
                                                                     cli_refresh):  # fmt: skip
    """It waits `lease_wait_seconds`, saying so in the run's log (what a served or deployed
    run shows: the progress logger alone was silent there), then fails in one line; the
    person who ran it reads that line, so `alert_webhook` gets nothing."""
    url, got = receiver
    home = tmp_path / "home"
    run_log, handler = logging.getLogger("prefect.flow_runs"), _Records()
    run_log.addHandler(handler)
    sets = [f"--set={k}={v}" for k, v in (TINY | {"alert_webhook": url,
                                                  "lease_wait_seconds": 1}).items()]  # fmt: skip
    try:
        with HomeLease(home, "refresh nightly (another run)"):
            code = cli_refresh("--home", str(home), "--source", "synthetic", *sets)
    finally:
        run_log.removeHandler(handler)
    assert code == 2
    waited = [line for line in handler.lines if "waiting up to 1s" in line]
    assert waited and "in use by 'refresh nightly (another run)'" in waited[0], handler.lines
    time.sleep(2)
    assert got == []
