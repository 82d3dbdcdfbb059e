"""Stops are clean (issue [4/5] item 4): a process worker stopped by SIGTERM mid-run ends its
flow-run process with SIGKILL (Prefect 3.9, within a second), which no `finally` survives;
the run's guard (`flows/_guard.py`) gives the home's lease back and marks the run Crashed at
once. (Before, `.lease` stayed and the run stayed Running until its missed heartbeats
marked it, 89 s in an operator's trial.)"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from sparseeval.flows import _guard

from sparseeval.pipeline.lease import LEASE_FILE
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def a_run_holding_the_home(tmp_path):
    """A process worker from another folder running `worker_stopped.holds_the_home`, once it
    holds the home and waits in its task: (client, run, worker process, home)."""
    from prefect.settings import PREFECT_API_URL

    home, marker, pool = tmp_path / "home", tmp_path / "running", f"stops-{uuid.uuid4().hex[:8]}"
    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
        deployment = flow.from_source(
            source=str(ROOT), entrypoint="tests/flows/worker_stopped.py:holds_the_home"
        ).deploy(
            name=pool, work_pool_name=pool, print_next_steps=False, build=False, push=False,
            parameters={"home": str(home), "marker": str(marker)},
        )  # fmt: skip
        env = os.environ | {"PREFECT_API_URL": PREFECT_API_URL.value(),
                            "PREFECT_WORKER_QUERY_SECONDS": "1"}  # fmt: skip
        worker = subprocess.Popen(  # from another folder, as an operator starts it
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool], env=env,
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            run = client.create_flow_run_from_deployment(deployment)
            assert wait_for(marker.exists, 180), "the run never reached its task"
            assert (home / LEASE_FILE).exists()
            yield client, run, worker, home
        finally:
            if worker.poll() is None:
                worker.kill()
            print("worker:", worker.communicate(timeout=30)[0].decode(errors="replace")[-2000:])


def _final_state(client, run_id):
    return wait_for(lambda: (s := client.read_flow_run(run_id).state).is_final() and s, 30)


@pytest.mark.slow  # a real worker and flow-run process: the slow group
def test_a_worker_stopped_mid_run_leaves_no_lease_and_its_run_crashed(prefect_harness,
                                                                      tmp_path):  # fmt: skip
    with a_run_holding_the_home(tmp_path) as (client, run, worker, home):
        sent = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        gone = wait_for(lambda: not (home / LEASE_FILE).exists(), 30)
        state = _final_state(client, run.id)
        took = time.monotonic() - sent
    print(f"{took:.1f} s after the worker's SIGTERM: lease gone {bool(gone)}, run {state}")
    assert gone, "the worker's stop left the home's lease behind"
    assert state and state.is_crashed() and state.message == _guard.MESSAGE, state
    assert took < 30


@pytest.mark.slow
def test_a_cancelled_run_is_cancelled_not_crashed(prefect_harness, tmp_path):
    """`prefect flow-run cancel`: the worker stops the run with SIGTERM; the run gives its
    lease back and ends Cancelled. The guard marked it Crashed (and the automation reran it:
    an operator's trial) before it left a run stopped on a signal alone."""
    from prefect.states import Cancelling

    with a_run_holding_the_home(tmp_path) as (client, run, _worker, home):
        client.set_flow_run_state(run.id, Cancelling())
        state = _final_state(client, run.id)
        gone = wait_for(lambda: not (home / LEASE_FILE).exists(), 30)
        time.sleep(3)  # the guard, had it acted, would have by now
        states = [s.type.value for s in client.read_flow_run_states(run.id)]
    assert gone and state and state.is_cancelled(), state
    assert "CRASHED" not in states, states
