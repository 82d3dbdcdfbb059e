"""A temporary Prefect server for one CLI run that never outlives the CLI.

Prefect starts its own temporary server when `PREFECT_API_URL` is unset, but a killed
CLI leaves it running. This one is a child process that the kernel stops when the CLI
dies, however it dies (`PR_SET_PDEATHSIG`), and that the CLI stops on SIGTERM / Ctrl-C.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from sparseeval.cli.common import UserError

PR_SET_PDEATHSIG = 1
APP = "prefect.server.api.server:create_app"


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float, log) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            last = (log.read().decode(errors="replace").strip().splitlines() or [""])[-1]
            raise RuntimeError(
                f"the temporary Prefect server exited (code {proc.returncode}): {last[:300]}"
            )
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            if r.status == 200:
                return
        time.sleep(0.25)
    raise UserError(
        f"the temporary Prefect server did not start within {timeout:.0f}s (a busy machine?"
        " run again, or point PREFECT_API_URL at a running server: `prefect server start`)"
    )


def check_configured(url: str, timeout: float = 10.0) -> None:
    """A UserError, before any work, when the server PREFECT_API_URL names is down or is no
    Prefect server (it answers 5xx, or junk to `/health`); a server that asks for a key
    (401/403, Prefect Cloud) is left to the client."""
    import urllib.error

    where = f"PREFECT_API_URL {url}"
    fix = "is the server up and the URL right? unset PREFECT_API_URL to use a temporary server"
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/health", timeout=timeout) as r:
            body = r.read(64).strip()
    except urllib.error.HTTPError as e:
        if e.code >= 500:
            raise UserError(f"{where}: the server answered {e.code} ({fix})") from None
        return  # 401/403/404: a protected or differently laid out server; the client says
    except (OSError, ValueError) as e:  # refused, unreachable, timed out, not a URL
        why = getattr(e, "reason", None) or e
        raise UserError(f"{where}: no answer ({why}; {fix})") from None
    if body != b"true":
        raise UserError(f"{where}: answers, but not as a Prefect server does ({fix})")


def _drain() -> None:
    """Flush Prefect's log and event workers (else they retry a stopped server for a minute)."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    with contextlib.suppress(Exception):
        APILogWorker.drain_all(timeout=10)
    with contextlib.suppress(Exception):
        EventsWorker.drain_all(timeout=10)


def _raise_on_sigterm(signum, frame) -> None:
    from sparseeval.pipeline.stopping import Stopped, note_signal

    note_signal(signum)
    raise Stopped(signum)


@contextlib.contextmanager
def stopping_on_sigterm() -> Iterator[None]:
    """While the block runs (main thread), SIGTERM raises `stopping.Stopped`, a SystemExit
    that unwinds through every `finally` (the lease, the server) to the command, which says
    "stopped by signal SIGTERM" and exits 143. Prefect's own bridge, installed over it while
    a flow runs, hands the signal back to it when the flow has crashed."""
    previous = signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def temporary_server(timeout: float = 120.0) -> Iterator[str | None]:
    """Yield the API URL of a private temporary server (None when a server is configured)."""
    import prefect
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    if configured := get_current_settings().api.url:
        check_configured(str(configured))
        yield None
        return

    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = os.environ | {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"}
    args = [sys.executable, "-m", "uvicorn", "--app-dir", str(Path(prefect.__file__).parent.parent),
            "--factory", APP, "--host", "127.0.0.1", "--port", str(port), "--log-level", "error",
            "--lifespan", "on"]  # fmt: skip
    # The server's own chatter (e.g. tracebacks while it shuts down) goes to a temp file.
    with tempfile.TemporaryFile() as log, _server(args, env, log) as proc:
        _wait_healthy(url, proc, timeout, log)
        with temporary_settings(updates={PREFECT_API_URL: url}):
            try:
                yield url
            finally:
                _drain()  # send queued logs and events while the server still listens


@contextlib.contextmanager
def _server(args: list[str], env: dict, log) -> Iterator[subprocess.Popen]:
    """The server process; stopped on exit, on SIGTERM (as SystemExit) and with the CLI."""
    proc = subprocess.Popen(args, env=env, preexec_fn=_die_with_parent, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        with stopping_on_sigterm():
            yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
