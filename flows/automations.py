"""Prefect automations of the SparseEval deployments, as code: `sparseeval automations install`.

- crash-zombie-runs: a flow run whose heartbeats stop (its worker or process died, say a
  `kill -9` or a host crash) is marked Crashed after `ZOMBIE_AFTER`, which frees the work
  pool's and the deployment's concurrency slot so the next scheduled run starts. Needs
  heartbeats: the deployments set `PREFECT_FLOWS_HEARTBEAT_FREQUENCY` (Prefect 3.9 also
  reads `PREFECT_RUNNER_HEARTBEAT_FREQUENCY`); see Prefect's "How to detect and respond to
  zombie flows".
- rerun-crashed-refresh: a crashed refresh run of a deployment is run again once (the
  refresh is idempotent: a rerun cleans what the crash left and resumes from the cache).
  The rerun gets `rerun_of` (the crashed run's id) and is named `rerun ...` when it starts.
  Only a first try is rerun: a run the flow itself named `refresh ...` when it started
  (`FIRST_TRIES`). A rerun is never one, whether it crashed after it started (named
  `rerun ...`) or before (it still has the name the server gave it at creation), so a
  crash that repeats costs one rerun and two alerts, never a loop. The price: a run that
  crashes before it starts (a worker that cannot start its process) is not rerun; it alerts.
- alert-*: a notification (a webhook block) on a crashed or failed SparseEval run (its
  name, deployment, UI link and state message: the failed file, reason and report path;
  a crashed rerun says that the rerun crashed too), on a refused candidate
  (`sparseeval.publish.refused`) and on drift that persists (`sparseeval.drift.persistent`,
  emitted by the refresh after `drift_alert_nights`).
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
RUN_SUBJECT = (
    "SparseEval run {{ flow_run.name }} is {{ flow_run.state.name }}"
    "{% if flow_run.state.name == 'Crashed' and flow.name == 'refresh' %}"
    "{% if flow_run.parameters.rerun_of %}: the automatic rerun crashed too, not rerun again"
    f"{{% elif flow_run.name.startswith('{FIRST_TRY_NAME}') %}}: rerunning it once"
    "{% else %}: it crashed before it started, not rerun{% endif %}{% endif %}"
)


def run_body(ui_url: str | None) -> str:
    """The alert body of a crashed or failed run: name, deployment, link (the UI at
    `ui_url`, as `sparseeval automations install` saw it; else the server's own), what it
    reruns, and the state message (a failed refresh's names the file, reason and report)."""
    link = f"{ui_url.rstrip('/')}/runs/flow-run/{{{{ flow_run.id }}}}" if ui_url else (
        "{{ flow_run|ui_url }}")  # fmt: skip
    return (
        "run: {{ flow_run.name }} ({{ flow_run.id }})\n"
        "deployment: {{ deployment.name if deployment else 'none' }}\n"
        f"url: {link}\n"
        "{% if flow_run.parameters.rerun_of %}rerun of: {{ flow_run.parameters.rerun_of }}\n"
        "{% endif %}"
        "{{ flow_run.state.name }}: {{ flow_run.state.message }}"
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


def rerun_automation() -> Automation:
    """Run a deployment's refresh again once when its first try crashed (`FIRST_TRIES`);
    never a rerun, crashed before or after it started."""
    rerun_of = {"__prefect_kind": "jinja", "template": "{{ flow_run.id }}"}
    return Automation(
        name=PREFIX + "rerun-crashed-refresh",
        description="A crashed refresh run is run again once (the refresh is idempotent).",
        trigger=EventTrigger(
            expect={"prefect.flow-run.Crashed"},
            match=FIRST_TRIES,
            match_related=[OURS, ResourceSpecification({"prefect.resource.role": "flow",
                                                        "prefect.resource.name": "refresh"})],
            posture=Posture.Reactive,
            threshold=1,
            within=timedelta(0),
        ),
        actions=[RunDeployment(source="inferred", parameters={"rerun_of": rerun_of})],
    )  # fmt: skip


def alert_automations(block_id: UUID) -> list[Automation]:
    """Notify through the webhook block on crashes, failures, refusals and persistent drift."""
    from prefect.settings import PREFECT_UI_URL

    alerts = {
        "alert-run-crashed-or-failed": (
            {"prefect.flow-run.Crashed", "prefect.flow-run.Failed"}, FLOW_RUNS, [OURS],
            RUN_SUBJECT, run_body(PREFECT_UI_URL.value()),
        ),
        "alert-publish-refused": (
            {"sparseeval.publish.refused"}, _benchmarks(), [],
            "SparseEval: {{ event.resource.name }} candidate refused",
            "{{ event.payload.reason }}",
        ),
        "alert-persistent-drift": (
            {"sparseeval.drift.persistent"}, _benchmarks(), [],
            "SparseEval: {{ event.resource.name }} has drifted for"
            " {{ event.payload.nights }} nights",
            "{{ event.payload.reason }}",
        ),
    }  # fmt: skip
    return [
        Automation(
            name=PREFIX + name,
            description=f"Notify {WEBHOOK_BLOCK} ({', '.join(sorted(events))}).",
            trigger=EventTrigger(
                expect=events,
                match=match,
                match_related=related,
                posture=Posture.Reactive,
                threshold=1,
                within=timedelta(0),
            ),
            actions=[SendNotification(block_document_id=block_id, subject=subject, body=body)],
        )
        for name, (events, match, related, subject, body) in alerts.items()
    ]


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
