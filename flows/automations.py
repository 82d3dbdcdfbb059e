"""Prefect automations of the SparseEval deployments, as code: `sparseeval automations install`.

- crash-zombie-runs: a flow run whose heartbeats stop (its worker or process died, say a
  `kill -9` or a host crash) is marked Crashed after `ZOMBIE_AFTER`, which frees the work
  pool's and the deployment's concurrency slot so the next scheduled run starts. Needs
  heartbeats: the deployments set `PREFECT_FLOWS_HEARTBEAT_FREQUENCY` (Prefect 3.9 also
  reads `PREFECT_RUNNER_HEARTBEAT_FREQUENCY`); see Prefect's "How to detect and respond to
  zombie flows".
- rerun-crashed-refresh: a crashed refresh run of a deployment is run again once (the
  refresh is idempotent: a rerun cleans what the crash left and resumes from the cache).
  The rerun gets `rerun_of` (the crashed run's id), is scheduled `RERUN_AFTER` after the
  crash (not for a worker that is being stopped) and is named `rerun ...` when it starts.
  Only a first try is rerun: a run the flow itself named `refresh ...` when it started
  (`FIRST_TRIES`). A rerun is never one, whether it crashed after it started (named
  `rerun ...`) or before (it still has the name the server gave it at creation), so a
  crash that repeats costs one rerun and two alerts, never a loop. The price: a run that
  crashes before it starts (a worker that cannot start its process) is not rerun; it alerts.
- alert-*: a notification (a webhook block) only where a person is needed, each naming the
  run (its UI link), what failed (the file, reason and report, or the benchmark) and the
  next step: a failed SparseEval run; a crashed run that is not rerun (a rerun that crashed
  too, a run that crashed before it started, another flow's); a crashed first try whose
  automatic rerun has not started within `RERUN_START_WITHIN` (no worker: a host down, a
  worker stopped); drift that persists (`sparseeval.drift.persistent`, emitted by the
  refresh after `drift_alert_nights`). A crashed first try pages nothing by itself (its
  rerun pages if it fails, crashes or does not start), nor does a refused candidate (the
  live set is kept; the report and the summary line say why).
"""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

from prefect.automations import Automation
from prefect.blocks.notifications import CustomWebhookNotificationBlock
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState, RunDeployment, SendNotification
from prefect.events.schemas.automations import EventTrigger, Posture
from prefect.events.schemas.events import ResourceSpecification

PREFIX = "sparseeval: "
HEARTBEAT_SECONDS = 30  # PREFECT_FLOWS_HEARTBEAT_FREQUENCY of the deployments
ZOMBIE_AFTER = timedelta(seconds=3 * HEARTBEAT_SECONDS)  # three missed heartbeats
WEBHOOK_BLOCK = "sparseeval-alerts"
FLOW_RUNS = ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]})
OURS = ResourceSpecification(
    {"prefect.resource.role": "tag", "prefect.resource.id": "prefect.tag.sparseeval"}
)
ENDED = ("Completed", "Failed", "Cancelled", "Crashed")
RERUN_NAME = "rerun "  # how an automatic rerun's name starts (`flows._run.run_name`)
FIRST_TRY_NAME = "refresh "  # how a first try is named when it starts (`run_name("refresh")`)
# The runs the rerun automation reruns: first tries that started. The name a run is given
# when it starts is the one thing of a run that a trigger can see and a rerun never has: a
# rerun that crashed before it started keeps the server's name (`clever-fox`), not ours.
FIRST_TRIES = ResourceSpecification(
    {"prefect.resource.id": "prefect.flow-run.*",
     "prefect.resource.name": f"{FIRST_TRY_NAME}*"}
)  # fmt: skip
NOT_FIRST_TRIES = ResourceSpecification(
    {"prefect.resource.id": "prefect.flow-run.*", "prefect.resource.name": f"!{FIRST_TRY_NAME}*"}
)  # every run but a first try, which the rerun automation reruns
REFRESH_FLOW = ResourceSpecification(
    {"prefect.resource.role": "flow", "prefect.resource.name": "refresh"}
)
RERUN_STARTED = "sparseeval.rerun.started"  # a rerun's first step (`flows._run.rerun_started`)
RERUN_START_WITHIN = timedelta(minutes=10)  # a rerun not started by then pages
# A rerun is scheduled this long after the crash: a worker being stopped (SIGTERM, then
# SIGKILL after a supervisor's timeout: 15 s in deployments/systemd) keeps polling until it
# exits, and a rerun it took would die with it (an operator's trial saw that page).
RERUN_AFTER = timedelta(seconds=60)
CRASHED_SUBJECT = (
    "SparseEval run {{ flow_run.name }} is Crashed"
    "{% if flow_run.parameters.rerun_of %}: the automatic rerun crashed too, not rerun again"
    "{% elif flow.name == 'refresh' %}: it crashed before it started, not rerun{% endif %}"
)
NEXT_FAILED = (
    "next: fix what the message names (the report lists every failure), then run it again:"
    " {{ rerun_command }}"
)
NEXT_CRASHED = (
    "next: read the run's log at the link (the process died: out of memory, a kill, a host"
    " down), then run it again: {{ rerun_command }}"
)
NEXT_NOT_STARTED = (
    "next: no worker has picked the rerun up (a host down, a worker stopped): start one"
    " where sparseeval is installed, `prefect worker start --pool"
    " {{ flow_run.work_pool_name or 'POOL' }}` (from any folder: a run moves to the checkout"
    " `prefect deploy` ran in); the rerun then runs (or cancel it and run {{ rerun_command }}"
    " later)"
)
RERUN_COMMAND = (
    "{% if deployment %}`prefect deployment run '{{ flow.name }}/{{ deployment.name }}'`"
    "{% else %}the same command{% endif %}"
)


def _link(ui_url: str | None) -> str:
    """A run's UI link: on the UI at `ui_url` (as `sparseeval automations install` saw it),
    else the server's own."""
    if ui_url:
        return f"{ui_url.rstrip('/')}/runs/flow-run/{{{{ flow_run.id }}}}"
    return "{{ flow_run|ui_url }}"


def run_body(ui_url: str | None, next_step: str = NEXT_FAILED) -> str:
    """The alert body of a run: name, deployment, link, what it reruns, the state message (a
    failed refresh's names the file, reason and report) and the next step."""
    return (
        "run: {{ flow_run.name }} ({{ flow_run.id }})\n"
        "deployment: {{ deployment.name if deployment else 'none' }}\n"
        f"url: {_link(ui_url)}\n"
        "{% if flow_run.parameters.rerun_of %}rerun of: {{ flow_run.parameters.rerun_of }}\n"
        "{% endif %}"
        "{{ flow_run.state.name }}: {{ flow_run.state.message }}\n"
        + next_step.replace("{{ rerun_command }}", RERUN_COMMAND)
    )


def zombie_automation(after: timedelta = ZOMBIE_AFTER) -> Automation:
    """Mark a flow run Crashed when its heartbeats stop for `after` (Prefect's recipe)."""
    return Automation(
        name=PREFIX + "crash-zombie-runs",
        description="A flow run with no heartbeat for three periods is marked Crashed.",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", *(f"prefect.flow-run.{s}" for s in ENDED)},
            match=FLOW_RUNS,
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=after,
        ),
        actions=[
            ChangeFlowRunState(
                state=StateType.CRASHED,
                message="Flow run marked as crashed: its heartbeats stopped.",
            )
        ],
    )


def rerun_automation(after: timedelta = RERUN_AFTER) -> Automation:
    """Run a deployment's refresh again once, `after` its first try crashed (`FIRST_TRIES`);
    never a rerun, crashed before or after it started."""
    rerun_of = {"__prefect_kind": "jinja", "template": "{{ flow_run.id }}"}
    return Automation(
        name=PREFIX + "rerun-crashed-refresh",
        description="A crashed refresh run is run again once (the refresh is idempotent).",
        trigger=EventTrigger(
            expect={"prefect.flow-run.Crashed"},
            match=FIRST_TRIES,
            match_related=[OURS, REFRESH_FLOW],
            posture=Posture.Reactive,
            threshold=1,
            within=timedelta(0),
        ),
        actions=[RunDeployment(source="inferred", parameters={"rerun_of": rerun_of},
                               schedule_after=after)],
    )  # fmt: skip


def alert_automations(
    block_id: UUID, ui_url: str | None = None, rerun_within: timedelta = RERUN_START_WITHIN
) -> list[Automation]:
    """Notify through the webhook block where a person is needed (the module's docstring);
    `rerun_within`: how long a crashed first try's rerun may take to start."""
    if ui_url is None:
        from prefect.settings import PREFECT_UI_URL

        ui_url = PREFECT_UI_URL.value()
    drift_body = (
        "{{ event.payload.reason }}\n"
        "{% if flow_run %}run: {{ flow_run.name }}\n"
        f"url: {_link(ui_url)}\n{{% endif %}}"
        "next: the live set stays until a candidate passes the gate; see the run's report,"
        " then retrain by hand: `prefect deployment run 'retrain-benchmark/retrain-one'"
        " --param benchmark={{ event.resource.name }}` (or wait for more models)"
    )
    notify = lambda subject, body: [  # noqa: E731
        SendNotification(block_document_id=block_id, subject=subject, body=body)
    ]
    reactive = dict(posture=Posture.Reactive, threshold=1, within=timedelta(0))
    return [
        _alert("alert-run-failed", EventTrigger(
            expect={"prefect.flow-run.Failed"}, match=FLOW_RUNS, match_related=[OURS],
            **reactive), notify("SparseEval run {{ flow_run.name }} is Failed",
                                run_body(ui_url)),
        ),
        _alert("alert-run-crashed", EventTrigger(
            expect={"prefect.flow-run.Crashed"}, match=NOT_FIRST_TRIES, match_related=[OURS],
            **reactive), notify(CRASHED_SUBJECT, run_body(ui_url, NEXT_CRASHED)),
        ),
        _alert("alert-rerun-not-started", EventTrigger(
            after={"prefect.flow-run.Crashed"}, expect={RERUN_STARTED}, match=FIRST_TRIES,
            match_related=[OURS, REFRESH_FLOW], for_each={"prefect.resource.id"},
            posture=Posture.Proactive, threshold=1, within=rerun_within),
            notify("SparseEval run {{ flow_run.name }} is Crashed and its automatic rerun has"
                   f" not started within {_duration(rerun_within)}",
                   run_body(ui_url, NEXT_NOT_STARTED)),
        ),
        _alert("alert-persistent-drift", EventTrigger(
            expect={"sparseeval.drift.persistent"}, match=_benchmarks(), **reactive),
            notify("SparseEval: {{ event.resource.name }} has drifted for"
                   " {{ event.payload.nights }} nights", drift_body),
        ),
    ]  # fmt: skip


def _duration(span: timedelta) -> str:
    seconds = span.total_seconds()
    return f"{seconds / 60:g} min" if seconds % 60 == 0 else f"{seconds:g} s"


def _alert(name: str, trigger: EventTrigger, actions: list) -> Automation:
    return Automation(
        name=PREFIX + name,
        description=f"Notify {WEBHOOK_BLOCK} ({', '.join(sorted(trigger.expect))}).",
        trigger=trigger,
        actions=actions,
    )


def _benchmarks() -> ResourceSpecification:
    return ResourceSpecification({"prefect.resource.id": ["sparseeval.benchmark.*"]})


def definitions(block_id: UUID | None) -> list[Automation]:
    """Every SparseEval automation; the alerts only with a notification block."""
    alerts = alert_automations(block_id) if block_id is not None else []
    return [zombie_automation(), rerun_automation(), *alerts]


def save_webhook(url: str) -> UUID:
    """The webhook notification block `sparseeval-alerts` (created or updated): its id."""
    block = CustomWebhookNotificationBlock(
        name=WEBHOOK_BLOCK,
        url=url,
        method="POST",
        json_data={"subject": "{{subject}}", "body": "{{body}}"},
    )
    return block.save(WEBHOOK_BLOCK, overwrite=True)


def unreachable() -> str | None:
    """Why the Prefect server PREFECT_API_URL names cannot be reached (None when it can)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        failed = client.api_healthcheck()  # the error as a value, never raised
    return None if failed is None else f"{type(failed).__name__}: {failed}"


def install(webhook_url: str | None = None) -> list[str]:
    """Create or replace every SparseEval automation on the current Prefect API; their names.

    With `webhook_url` the alerts notify it (a JSON POST {"subject", "body"}); without,
    an existing `sparseeval-alerts` block is used if there is one, else alerts are skipped.
    """
    block_id = save_webhook(webhook_url) if webhook_url else _existing_block()
    names = []
    for automation in definitions(block_id):
        _remove(automation.name)
        automation.create()
        names.append(automation.name)
    for old in set(installed()) - set(names):  # one an older install made (a refusal alert)
        _remove(old)
    return names


def installed() -> list[str]:
    """The names of the SparseEval automations on the current Prefect API."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return sorted(a.name for a in client.read_automations() if a.name.startswith(PREFIX))


def _existing_block() -> UUID | None:
    try:
        return CustomWebhookNotificationBlock.load(WEBHOOK_BLOCK)._block_document_id
    except ValueError:
        return None


def _remove(name: str) -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for old in client.read_automations_by_name(name=name):
            client.delete_automation(old.id)


__all__ = [
    "CRASHED_SUBJECT",
    "ENDED",
    "FIRST_TRIES",
    "FIRST_TRY_NAME",
    "FLOW_RUNS",
    "HEARTBEAT_SECONDS",
    "NEXT_CRASHED",
    "NEXT_FAILED",
    "NEXT_NOT_STARTED",
    "NOT_FIRST_TRIES",
    "OURS",
    "PREFIX",
    "REFRESH_FLOW",
    "RERUN_COMMAND",
    "RERUN_NAME",
    "RERUN_STARTED",
    "RERUN_START_WITHIN",
    "WEBHOOK_BLOCK",
    "ZOMBIE_AFTER",
    "alert_automations",
    "definitions",
    "install",
    "installed",
    "rerun_automation",
    "run_body",
    "save_webhook",
    "unreachable",
    "zombie_automation",
]
