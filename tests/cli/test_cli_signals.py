"""A killed `sparseeval refresh` never leaves its temporary Prefect server running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparseeval.cli.tempserver import APP


def _servers_of(parent: int) -> list[int]:
    """Pids of temporary-server processes started by `parent` (its children running uvicorn)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = int(next(ln for ln in status.read_text().splitlines() if ln.startswith("PPid:"))
                       .split()[1])  # fmt: skip
            cmd = (status.parent / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, StopIteration, ValueError):
            continue
        if ppid == parent and APP in cmd:
            found.append(int(status.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state  # a zombie is gone


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_refresh_stops_its_temporary_server(tmp_path, sig):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    cli = subprocess.Popen(
        [sys.executable, "-m", "sparseeval", "refresh", "--home", str(tmp_path / "home")],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # a loaded 2-core machine starts it slowly
        while not (servers := _servers_of(cli.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert servers, "the CLI never started its temporary server"
        os.kill(cli.pid, sig)
        cli.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(map(_alive, servers)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(map(_alive, servers)), f"server {servers} outlived the CLI ({sig.name})"
    finally:
        cli.kill()
