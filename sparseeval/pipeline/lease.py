"""One writer per home: a lease file `{home}/.lease` naming the run that holds it.

A refresh takes the lease before it touches the store or the published sets and gives it
back when it ends, so a served and a deployed run on the same home never run at once: the
second waits up to `wait` seconds, then refuses in one line naming the holder. A lease
left by a crashed run is taken over: at once when its process is gone (same host), or
when it has not been renewed for `stale_after` seconds (another host, or a hung one).
The holder renews it from a daemon thread while it runs. A SIGTERM to a process holding
the lease (a supervisor stopping it) ends it at once through its `finally`s, so the lease is
given back (when no one else handles SIGTERM: Prefect's own bridge unwinds the same way).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from sparseeval.consume.errors import SparseEvalError
from sparseeval.pipeline.progress import PROGRESS
from sparseeval.pipeline.stopping import Stopped, note_signal, signal_name

LEASE_FILE = ".lease"


class LeaseHeld(SparseEvalError, RuntimeError):
    """Another live run holds the home (or its lease file cannot be used): one line."""


class HomeLease:
    """`with HomeLease(home, "refresh 2026-12-01 03:00"):` — hold the home for one run."""

    def __init__(
        self,
        home: str | Path,
        holder: str,
        *,
        wait: float = 0.0,
        stale_after: float = 600.0,
        say: Callable[[str], None] | None = None,
    ) -> None:
        """`say`: where the one "waiting up to ..." line goes (default: the progress logger,
        which only the CLI prints; a flow passes its own, which reaches the run's log)."""
        self.path = Path(home) / LEASE_FILE
        self.holder, self.wait, self.stale_after = holder, wait, stale_after
        self.say = say or PROGRESS.info
        self.token = uuid.uuid4().hex
        self.took_over: dict | None = None  # the stale lease this one replaced, if any
        self._stop = threading.Event()
        self._replaced: dict[int, object] = {}  # the stop-signal handlers ours replaced

    def acquire(self) -> HomeLease:
        """Take the lease (waiting up to `wait` s for a live holder), or raise `LeaseHeld`."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_dir() or self.path.is_symlink():
            raise LeaseHeld(
                f"lease {self.path} is a folder or a link, not a lease file: remove it (no run"
                " holds this home otherwise)"
            )
        deadline, said = time.monotonic() + self.wait, False
        while not self._try():
            if time.monotonic() >= deadline:
                raise LeaseHeld(self._held_by(read_lease(self.path)))
            if not said:  # a wait of minutes is not silent
                held = self._held_by(read_lease(self.path)).rsplit("; waited", 1)[0]
                self.say(f"{held}; waiting up to {self.wait:g}s for it (lease_wait_seconds)")
                said = True
            time.sleep(min(1.0, max(0.05, self.wait / 20)))
        threading.Thread(target=self._renew_loop, daemon=True).start()
        self._replaced = _exit_on_stop(self)
        _HELD.append(self)
        return self

    def release(self) -> None:
        """Give the lease back (only if it is still ours)."""
        self._stop.set()
        if self._replaced and threading.current_thread() is threading.main_thread():
            _restore(self._replaced)
            self._replaced = {}
        with contextlib.suppress(ValueError):
            _HELD.remove(self)
        current = read_lease(self.path)
        if current and current.get("token") == self.token:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> HomeLease:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def _record(self) -> dict:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        return {"holder": self.holder, "token": self.token, "pid": os.getpid(),
                "host": socket.gethostname(), "since": now, "renewed": time.time()}  # fmt: skip

    def _try(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            current = read_lease(self.path)
            if current is not None and not is_stale(current, self.stale_after):
                return False
            self._set_aside(current)
            return False if self.took_over is None else self._try()
        with os.fdopen(fd, "w") as f:
            json.dump(self._record(), f)
        return True

    def _set_aside(self, stale: dict | None) -> None:
        """Move a stale lease out of the way (atomically: one taker wins the rename)."""
        aside = self.path.with_name(f"{self.path.name}.stale-{self.token}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return  # another run took it over first; try again
        moved = read_lease(aside)
        if (moved or {}).get("token") != (stale or {}).get("token"):
            with contextlib.suppress(OSError):  # a fresh lease raced in: put it back
                os.link(aside, self.path)
        else:
            self.took_over = stale or {}
        aside.unlink(missing_ok=True)

    def _renew_loop(self) -> None:
        while not self._stop.wait(max(1.0, self.stale_after / 4)):
            current = read_lease(self.path)
            if not current or current.get("token") != self.token:
                return  # taken over (we were judged stale) or released
            _write(self.path, current | {"renewed": time.time()})

    def _held_by(self, current: dict | None) -> str:
        if not current:
            return f"home {self.path.parent} is busy (lease {self.path})"
        return (
            f"home {self.path.parent} is in use by {current.get('holder')!r} (pid"
            f" {current.get('pid')} on {current.get('host')}, since {current.get('since')});"
            f" waited {self.wait:g}s"
        )


STOP_GRACE_SECONDS = 2.0  # after SIGTERM, how long `finally`s may run before the process ends
# SIGTERM (a supervisor) and SIGINT (Ctrl-C; a Prefect worker stopping passes it on)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_HELD: list[HomeLease] = []  # the leases this process holds, the newest last


@contextlib.contextmanager
def guarding_stops() -> Iterator[None]:
    """Inside a block that installs its own stop handler (a Prefect subflow does), put the
    held lease's back on top, so that a stop signal still ends the process within
    `STOP_GRACE_SECONDS` with the lease given back, whatever the block waits on (Prefect's
    handler alone lets a subflow wait for its running tasks: minutes, in a fit)."""
    if not _HELD or threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced = _exit_on_stop(_HELD[-1])
    try:
        yield
    finally:
        _restore(replaced)


def _restore(replaced: dict[int, object]) -> None:
    for signum, handler in replaced.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _exit_on_stop(lease: HomeLease) -> dict[int, object]:
    """While `lease` is held (main thread only), SIGTERM or SIGINT ends the process: the
    handler found
    (Prefect's bridge raises TerminationSignal) or `stopping.Stopped` (a SystemExit; the
    signal is noted first, so that what it becomes on the way up is never taken for bad
    data) unwinds it through its `finally`s, which release the lease; should that be
    swallowed (a library turning it into an error), the lease is given back and the
    process ends `STOP_GRACE_SECONDS` later all the same. The handlers replaced (to
    restore on release), {} off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}

    def terminated(signum: int, frame: object) -> None:
        note_signal(signum)  # whatever it becomes on the way up, it is a stop (`stopping`)
        code = 128 + signum
        stop = threading.Timer(STOP_GRACE_SECONDS, _stop_now, (lease, code))
        stop.daemon = True  # a process that unwinds in time ends without waiting for it
        stop.start()
        if callable(handler := previous.get(signum)):
            handler(signum, frame)  # Prefect's bridge, or Ctrl-C's KeyboardInterrupt
        raise Stopped(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, terminated)
    return previous


def _stop_now(lease: HomeLease, code: int) -> None:
    lease.release()
    PROGRESS.warning("stopped by signal %s: the run did not end within %gs of it; the home's"
                     " lease is given back and the process ends now (exit %d)",
                     signal_name(code - 128), STOP_GRACE_SECONDS, code)  # fmt: skip
    os._exit(code)


def give_back(path: str | Path, token: str) -> bool:
    """Remove the lease at `path` if it is still the one `token` names (atomically: a run
    that took it over meanwhile keeps its own); whether it was."""
    path = Path(path)
    aside = path.with_name(f"{path.name}.gone-{uuid.uuid4().hex}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    ours = (read_lease(aside) or {}).get("token") == token
    if not ours:
        with contextlib.suppress(OSError):  # not ours: put it back (unless one came since)
            os.link(aside, path)
    aside.unlink(missing_ok=True)
    return ours


def read_lease(path: str | Path) -> dict | None:
    """The lease record, or None when there is none (or it is unreadable: treated as stale)."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def is_stale(record: dict, stale_after: float) -> bool:
    """A lease whose process is gone (same host) or that was not renewed in time; one renewed
    "in the future" beyond `stale_after` (a clock set wrong, or a forged file) is stale too."""
    if record.get("host") == socket.gethostname() and not _alive(record.get("pid")):
        return True
    renewed = record.get("renewed")
    if not isinstance(renewed, int | float) or isinstance(renewed, bool):
        return True
    return abs(time.time() - renewed) > stale_after


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write(path: Path, record: dict) -> None:
    tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)


__all__ = [
    "LEASE_FILE",
    "STOP_GRACE_SECONDS",
    "STOP_SIGNALS",
    "HomeLease",
    "LeaseHeld",
    "give_back",
    "guarding_stops",
    "is_stale",
    "read_lease",
]
