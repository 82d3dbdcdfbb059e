"""Events sent while the Prefect server is down are dropped (Prefect logs `EventsWorker failed
to process item`): the run report and the summary line say how many, and what that means."""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect.events.clients import PrefectEventsClient
from prefect.events.worker import EventsWorker

from sparseeval.pipeline.reports.run_report import summary_line
from tests.helpers import release, run

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]  # a real server


@pytest.fixture
def events_server_down():
    """Prefect's own events client, its server unreachable (nothing listens on port 9)."""
    EventsWorker.drain_all(timeout=10)
    EventsWorker.set_client_override(PrefectEventsClient, api_url="http://127.0.0.1:9/api")
    yield
    EventsWorker.drain_all(timeout=10)
    EventsWorker.set_client_override(None)


def test_a_run_whose_events_were_dropped_says_so(tmp_path, events_server_down):
    out = run(tmp_path / "home", [release(tmp_path, 0, 200)])
    assert out.dropped_events > 0  # task-run states, `sparseeval.*` events
    line = (f"{out.dropped_events} Prefect events could not be sent (server unreachable);"
            " the run's state in the UI may be stale")  # fmt: skip
    assert f"- {line}" in Path(out.report_path).read_text()
    assert line in summary_line(out)


def test_both_ways_prefect_drops_events_are_counted():
    """One event lost while sending (the server went away), or every one the worker held (it
    could not connect): as `prefect._internal.concurrency` logs them."""
    import logging

    from sparseeval.flows._run import EVENTS_LOGGER, counting_dropped_events

    log = logging.getLogger(EVENTS_LOGGER)
    with counting_dropped_events() as dropped:
        log.error("Service %r failed to process item %r", "EventsWorker", object())
        log.error("Service %r failed with %s pending items.", "EventsWorker", 4)
        log.error("Service %r failed to process item %r", "APILogWorker", object())  # logs
    assert dropped.count == 5


def test_a_run_whose_events_were_sent_says_nothing_of_them(tmp_path):
    out = run(tmp_path / "home", [release(tmp_path, 0, 200, ["arc"])])
    assert out.dropped_events == 0
    assert "could not be sent" not in Path(out.report_path).read_text()
