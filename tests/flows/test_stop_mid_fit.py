"""A stop signal ends a run within seconds even while a subflow waits on a long task: the
lease is given back and the process exits 128 + signal. SIGTERM is what a supervisor sends;
SIGINT is what a Prefect worker passes on when it is stopped. (Prefect's own handler alone,
which each subflow installs, made the run wait for the task: 74-170 s in an operator trial.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from sparseeval.pipeline.lease import LEASE_FILE

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_mid_fit_ends_the_run_in_seconds_and_frees_the_home(tmp_path, signum):
    from prefect.settings import PREFECT_API_URL

    home, marker = tmp_path / "home", tmp_path / "running"
    env = os.environ | {"PREFECT_API_URL": PREFECT_API_URL.value()}
    cmd = [sys.executable, "-m", "tests.flows.slow_subflow", str(home), str(marker)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists() and (home / LEASE_FILE).exists(), proc.communicate(timeout=5)[0]
    sent = time.monotonic()
    proc.send_signal(signum)
    code = proc.wait(timeout=40)
    took = time.monotonic() - sent
    assert code == 128 + signum and took < 20, (code, took)  # the task alone sleeps 60 s
    assert not (home / LEASE_FILE).exists()
