"""A run that holds a home's lease and waits, in a subflow, on a task that takes a minute
(as a refresh waits on a fit): `python -m tests.flows.slow_subflow HOME MARKER`, for the
stop-signal tests (`test_stop_mid_fit.py`). The task writes MARKER once it runs."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from prefect import flow, task

from sparseeval.pipeline.lease import HomeLease, guarding_stops


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
    with HomeLease(home, "slow test run"):
        waits_on_a_task(marker)


if __name__ == "__main__":
    holds_the_home(sys.argv[1], sys.argv[2])
