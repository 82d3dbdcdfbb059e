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

pytestmark = pytest.mark.slow  # real subprocesses and servers: the slow group


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


def _big_inbox(tmp_path: Path, n_models: int = 2000, n_items: int = 500) -> Path:
    """An inbox with one good long table of `n_models * n_items` rows (1M: ingest takes
    about 1.5 s of CPU), written two minutes ago (settled)."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    rows = "".join(f"org/m{m},arc,{i},{(m * 7 + i * 3) % 5 > 1:d}\n"
                   for m in range(n_models) for i in range(n_items))  # fmt: skip
    big = inbox / "big.csv"
    big.write_text("model,benchmark,item,correct\n" + rows)
    os.utime(big, (time.time() - 120,) * 2)
    return inbox


def test_sigterm_during_ingest_stops_the_run_and_fails_no_file(prefect_harness, tmp_path):
    """A supervisor's SIGTERM while the inbox is read: exit 143, "stopped by signal", the file
    stays in the inbox (not in failed/), nothing of it is stored, the lease is given back."""
    from prefect.settings import PREFECT_API_URL

    from sparseeval.pipeline.lease import LEASE_FILE
    from sparseeval.pipeline.store import Store

    inbox, home = _big_inbox(tmp_path), tmp_path / "home"
    env = os.environ | {"PREFECT_API_URL": PREFECT_API_URL.value(),
                        "PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # fmt: skip
    argv = [sys.executable, "-m", "sparseeval", "refresh", "--home", str(home), "--no-fill",
            "--source", f"inbox:{inbox}"]  # fmt: skip
    cli = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        said = []
        for line in cli.stderr:  # the progress lines
            said.append(line)
            if "ingest: reading" in line:
                break
        time.sleep(0.3)  # into the reading of the file
        cli.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        _, err = cli.communicate(timeout=60)
        stopped_in = time.monotonic() - t0
    finally:
        cli.kill()
    err = "".join(said) + err
    assert cli.returncode == 143, err
    assert "stopped by signal SIGTERM" in err and "Traceback" not in err, err
    assert "failed" not in err.replace("nothing failed", ""), err
    assert (inbox / "big.csv").is_file() and not (inbox / "failed").exists(), err
    assert not (home / LEASE_FILE).exists(), err
    with Store.open(home / "store.duckdb", read_only=True) as store:
        con = store.con  # on a loaded machine the signal may land before the store has tables
        made = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'results'")
        n = con.execute("SELECT count(*) FROM results").fetchone()[0] if made.fetchone()[0] else 0
    assert n == 0, err  # the signal landed while the file was read; rolled back
    assert stopped_in < 15, f"took {stopped_in:.1f}s to stop (load {os.getloadavg()})"
