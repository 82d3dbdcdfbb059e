"""A refresh-like run for the worker-stop test (`test_clean_stops.py`), deployed to a process
work pool: it holds its home as a refresh does (`flows._home.hold_home`, with its guard) and
waits, in a subflow, on a task that takes a minute; the task writes MARKER once it runs."""

from __future__ import annotations

import time
from pathlib import Path

from prefect import flow, task
from sparseeval.flows._home import hold_home

from sparseeval.pipeline.lease import guarding_stops
from sparseeval.pipeline.settings import Settings


@task
def slow(marker: str) -> None:
    Path(marker).write_text("running")
    time.sleep(60)


@flow(name="fit-like")
def waits_on_a_task(marker: str) -> None:
    with guarding_stops():  # as `flows.refresh.fit_benchmarks` does
        slow.submit(marker).wait()


@flow(name="refresh-like")
def holds_the_home(home: str, marker: str) -> None:
    with hold_home(Settings.of(home=home)):
        waits_on_a_task(marker)
