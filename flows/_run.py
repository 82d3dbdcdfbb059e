"""Running a flow: its settings, its task runner and the progress lines a person reads."""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import get_run_logger
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.urls import url_for
from sparseeval.flows import _console as console

from sparseeval.pipeline import alerts
from sparseeval.pipeline.lease import HomeLease, LeaseHeld
from sparseeval.pipeline.progress import PROGRESS
from sparseeval.pipeline.settings import Settings, SettingsError
from sparseeval.pipeline.stopping import reraise_stop


def say(message: str, level: int = logging.INFO) -> None:
    """One line for a person: to the run's log (the Prefect UI) and to the console."""
    get_run_logger().log(level, message)
    PROGRESS.log(level, message)


def resolve_settings(
    home: str | None = None,
    n_anchors: int | list[int] | None = None,
    settings_overrides: dict[str, Any] | None = None,
) -> Settings:
    """Defaults < sparseeval.toml < SPARSEEVAL_* env < flow parameters."""
    overrides = dict(settings_overrides or {})
    if home is not None:
        overrides["home"] = home
    if n_anchors is not None:
        overrides["n_anchors"] = n_anchors
    return Settings.load(**overrides)


def task_runner_for(settings: Settings, dask_processes: bool = True):
    """The task runner named by `settings.runner.task_runner`: threads here, or a Dask cluster."""
    if settings.runner.task_runner == "thread":
        return ThreadPoolTaskRunner(max_workers=max(1, settings.runner.workers))
    if settings.runner.task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as exc:  # the `dask` extra
            raise SettingsError(
                "task_runner = 'dask' needs prefect-dask: pip install 'sparseeval[dask]'"
            ) from exc
        if settings.runner.dask_address:
            return DaskTaskRunner(address=settings.runner.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": settings.runner.workers,
                "threads_per_worker": 1,
                "processes": dask_processes,
                "dashboard_address": None,
                # its HTTP server (health, metrics) on a free port: with 8787 taken (another
                # run's cluster) distributed would warn on the console and move anyway
                "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"},
                "preload": [console.PRELOAD],  # its console as the CLI's (`flows._console`)
            }
        )
    raise SettingsError(
        f"task_runner must be 'thread' or 'dask', got {settings.runner.task_runner!r}"
    )


def crashed_run_parameters(rerun_of: str, names: tuple[str, ...]) -> dict[str, Any]:
    """The parameters `names` the crashed run `rerun_of` was started with, from the server: its
    automatic rerun does the same work ({} when they cannot be read, said in the log). Says
    the rerun started (`rerun_started`), so that no page says it did not."""
    from uuid import UUID

    from prefect.client.orchestration import get_client

    try:
        with get_client(sync_client=True) as client:
            crashed = client.read_flow_run(UUID(str(rerun_of)))
    except Exception as exc:  # the server unreachable, an unknown id: this run's own
        say(f"rerun of {rerun_of}: its parameters could not be read ({exc}); running with"
            " the deployment's", logging.WARNING)  # fmt: skip
        return {}
    rerun_started(str(crashed.id), crashed.name, str(crashed.flow_id))
    return {k: v for k, v in (crashed.parameters or {}).items() if k in names}


def rerun_started(crashed_id: str, crashed_name: str, flow_id: str) -> None:
    """The event `sparseeval.rerun.started` about the crashed first try this run reruns (its
    resource, as the automations match it): the `alert-rerun-not-started` automation pages
    when it does not come within `automations.RERUN_START_WITHIN` of the crash."""
    from prefect.events import emit_event
    from sparseeval.flows.automations import RERUN_STARTED

    emit_event(
        event=RERUN_STARTED,
        resource={"prefect.resource.id": f"prefect.flow-run.{crashed_id}",
                  "prefect.resource.name": crashed_name},
        related=[{"prefect.resource.id": "prefect.tag.sparseeval", "prefect.resource.role": "tag"},
                 {"prefect.resource.id": f"prefect.flow.{flow_id}",
                  "prefect.resource.role": "flow", "prefect.resource.name": "refresh"}],
        payload={"rerun": str(flow_run.get_id()), "rerun_name": flow_run.get_name()},
    )  # fmt: skip


GUARD = Path(__file__).with_name("_guard.py")  # run as a script: it imports little


@contextlib.contextmanager
def guarded(lease: HomeLease) -> Iterator[None]:
    """While the block runs, a guard process (`flows/_guard.py`, in a session of its own, so
    that a signal to this run's process group spares it) that gives `lease` back and marks
    this run Crashed should this process die without unwinding (a SIGKILL); told
    `released` when the block ends."""
    run_id = flow_run.get_id()
    args = [sys.executable, str(GUARD), str(lease.path), lease.token, str(run_id or "")]
    guard = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            guard.stdin.write(b"released\n")
            guard.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            guard.wait(timeout=5)


def run_name(kind: str) -> str:
    """`{kind} {time}`, or `rerun {time}` for an automatic rerun (it has `rerun_of`):
    the rerun automation never reruns a run whose name starts so."""
    rerun = (flow_run.parameters or {}).get("rerun_of")
    return f"rerun {stamp()}" if rerun else f"{kind} {stamp()}"


@contextlib.contextmanager
def alert_on_failure(settings: Settings, in_deployment: bool) -> Iterator[None]:
    """A run outside a deployment that fails POSTs its alert to `alert_webhook` (a deployed
    run's alerts come from the automations, which also see crashes); then the error goes on.
    A run turned away because another holds the home pages no one: the person who started it
    reads its one line (and a schedule on a held home is a skipped run, `flows._home`)."""
    try:
        yield
    except Exception as exc:
        reraise_stop(exc)  # a stop signal (DuckDB's "Query interrupted") pages no one
        if settings.runner.alert_webhook and not in_deployment and not isinstance(exc, LeaseHeld):
            send_alert(settings.runner.alert_webhook, f"{type(exc).__name__}: {exc}")
        raise


def send_alert(url: str, message: str) -> None:
    """The failed run's alert (name, UI link, message); a webhook that fails is said, once."""
    run_id = str(flow_run.get_id())
    link = url_for("flow-run", obj_id=run_id)  # the UI's page of this run
    alert = alerts.run_alert(flow_run.get_name() or "refresh", run_id, None, link, "Failed",
                             message)  # fmt: skip
    try:
        alerts.post(url, alert)
    except OSError as exc:
        say(f"alert not sent ({type(exc).__name__}: {exc})", logging.WARNING)
    else:
        say(f"alert sent: {alert['subject']}")


# Prefect's queue services (its EventsWorker among them) log a failed item here.
EVENTS_LOGGER = "prefect._internal.concurrency"


class DroppedEvents(logging.Handler):
    """Counts the events Prefect's EventsWorker could not send and dropped: it logs `Service
    'EventsWorker' failed to process item ...` for one (the server went away while it ran)
    and `... failed with N pending items.` for all it held (it could not connect at all)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if not args or args[0] != "EventsWorker":
            return
        if "failed to process item" in str(record.msg):
            self.count += 1
        elif "pending items" in str(record.msg) and isinstance(args[-1], int):
            self.count += args[-1]

    def settled(self, timeout: float = 5.0) -> int:
        """The count once the events already queued were sent or dropped (at most `timeout`
        seconds: Prefect's events worker sends in the background, so a run's last events
        would otherwise fail only after its report)."""
        from prefect.events.worker import EventsWorker

        quiet = logging.getLogger("EventsWorker")  # its "Still processing items" warnings
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            EventsWorker.drain_all(timeout=timeout)
        finally:
            quiet.setLevel(level)
        return self.count


@contextlib.contextmanager
def counting_dropped_events() -> Iterator[DroppedEvents]:
    """While the block runs, count the Prefect events this process drops (`DroppedEvents`)."""
    handler, log = DroppedEvents(), logging.getLogger(EVENTS_LOGGER)
    log.addHandler(handler)
    try:
        yield handler
    finally:
        log.removeHandler(handler)


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
