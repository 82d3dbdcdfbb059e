"""A temporary Prefect server for one CLI run that never outlives the CLI.

Prefect starts its own temporary server when `PREFECT_API_URL` is unset, but a killed
CLI leaves it running. This one is a child process (in a process group of its own) that
the kernel stops when the CLI dies, however it dies (`PR_SET_PDEATHSIG`), and that the CLI
stops, group and all, on exit, an error, SIGTERM or Ctrl-C. It serves on a socket the CLI
bound and passed it (`--fd`), so no other process can take its port between a probe and
its bind. While it runs it is the API of every thread (also one without Prefect's context)
and, through `PREFECT_API_URL`, of every child process, so that none starts Prefect's own
temporary server (a port race, "address already in use", and a server left running with
parent pid 1).
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


def _listening_socket() -> socket.socket:
    """A socket listening on a free 127.0.0.1 port: the server serves on it (`--fd`)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


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

    env = os.environ | {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1"}
    # The server's own chatter (e.g. tracebacks while it shuts down) goes to a temp file.
    sock = _listening_socket()
    with tempfile.TemporaryFile() as log:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/api"
        args = [sys.executable, "-m", "uvicorn", "--app-dir",
                str(Path(prefect.__file__).parent.parent), "--factory", APP,
                "--fd", str(sock.fileno()), "--log-level", "error", "--lifespan", "on"]  # fmt: skip
        with _server(args, env, log, sock) as proc:
            _wait_healthy(url, proc, timeout, log)
            with (
                temporary_settings(updates={PREFECT_API_URL: url}),
                _environ(API_ENV, url),
                _in_every_thread(),
            ):
                try:
                    yield url
                finally:
                    _drain()  # send queued logs and events while the server still listens


API_ENV = "PREFECT_API_URL"


@contextlib.contextmanager
def _in_every_thread() -> Iterator[None]:
    """The current Prefect settings also for threads that do not carry Prefect's context
    (they read the process-global settings, made at import) while the block runs."""
    from prefect import context

    swap = getattr(context, "_temporary_global_settings_context", None)  # Prefect's harness's
    if swap is None:
        yield
        return
    with swap(context.SettingsContext.get()):
        yield


@contextlib.contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    """`os.environ[name] = value` while the block runs (for threads that do not carry
    Prefect's settings context, and child processes); then as it was."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@contextlib.contextmanager
def _server(args: list[str], env: dict, log, sock: socket.socket) -> Iterator[subprocess.Popen]:
    """The server process serving on `sock` (closed here once passed on: should the server
    die, its clients are refused, not left waiting), in a process group of its own; stopped
    (the group) on exit, on an error, on SIGTERM (as SystemExit) and with the CLI."""
    with sock:
        proc = subprocess.Popen(args, env=env, preexec_fn=_die_with_parent,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                pass_fds=(sock.fileno(),), start_new_session=True)  # fmt: skip
    try:
        with stopping_on_sigterm():
            yield proc
    finally:
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM to the server's process group, SIGKILL after `grace` seconds; reaped."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signum)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


__all__ = [
    "API_ENV",
    "APP",
    "PR_SET_PDEATHSIG",
    "check_configured",
    "stopping_on_sigterm",
    "temporary_server",
]
