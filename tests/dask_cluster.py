"""A Dask cluster of separate processes on 127.0.0.1: `dask scheduler` and `dask worker`s
(distributed's own CLI), for the tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def _dask(role: str, args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """`dask {role} ARGS` (`scheduler` or `worker`) as its own process, its output in `log`."""
    cmd = [sys.executable, "-m", f"distributed.cli.dask_{role}", "--no-dashboard", *args]
    return subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


@contextlib.contextmanager
def local_cluster(folder: Path, n_workers: int = 2, env: dict[str, str] | None = None) -> Iterator:
    """A scheduler and `n_workers` single-thread workers, their logs in `folder`; yields a
    connected `distributed.Client` (`client.scheduler.address` is the `dask_address`).
    `env` is added to the processes' environment (e.g. the Prefect server's URL)."""
    from distributed import Client

    env = os.environ | {"OMP_NUM_THREADS": "1"} | (env or {})
    file = folder / "scheduler.json"
    at = ["--scheduler-file", str(file)]
    procs = [_dask("scheduler", ["--host", "127.0.0.1", "--port", "0", *at], env, folder / "s.log")]
    try:
        for i in range(n_workers):
            args = ["--nthreads", "1", "--name", f"w{i}", *at]
            procs.append(_dask("worker", args, env, folder / f"w{i}.log"))
        deadline = time.monotonic() + 60
        while not file.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        with Client(scheduler_file=str(file), timeout=60) as client:
            client.wait_for_workers(n_workers, timeout=60)
            yield client
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
