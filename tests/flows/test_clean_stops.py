"""Stops are clean (issue [4/5] item 4): a process worker stopped by SIGTERM mid-run ends its
flow-run process with SIGKILL (Prefect 3.9, within a second), which no `finally` survives;
the run's guard (`flows/_guard.py`) gives the home's lease back and marks the run Crashed at
once. (Before, `.lease` stayed and the run stayed Running until its missed heartbeats
marked it, 89 s in an operator's trial.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from sparseeval.flows import _guard

from sparseeval.pipeline.lease import LEASE_FILE
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a real worker and flow-run process: the slow group
def test_a_worker_stopped_mid_run_leaves_no_lease_and_its_run_crashed(prefect_harness,
                                                                      tmp_path):  # fmt: skip
    from prefect.settings import PREFECT_API_URL

    home, marker, pool = tmp_path / "home", tmp_path / "running", f"stops-{os.getpid()}"
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
            sent = time.monotonic()
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
            gone = wait_for(lambda: not (home / LEASE_FILE).exists(), 30)
            state = wait_for(lambda: (s := client.read_flow_run(run.id).state).is_final() and s,
                             30)  # fmt: skip
            took = time.monotonic() - sent
        finally:
            if worker.poll() is None:
                worker.kill()
            print("worker:", worker.communicate(timeout=30)[0].decode(errors="replace")[-2000:])
    print(f"{took:.1f} s after the worker's SIGTERM: lease gone {bool(gone)}, run {state}")
    assert gone, "the worker's stop left the home's lease behind"
    assert state and state.is_crashed() and state.message == _guard.MESSAGE, state
    assert took < 30
