"""A stop signal is never bad data: SIGTERM, SIGINT and what they become on the way up.

A supervisor's SIGTERM (or a person's Ctrl-C) reaches the run as the handler's
`SystemExit`, as `KeyboardInterrupt`, or, when it lands inside a DuckDB query, as DuckDB's
`InterruptException` ("Query interrupted"): an ordinary `Exception` that code reading a
file would otherwise take for a bad file. `as_stop` recognises all of them (and any error
raised while a stop signal is pending, `note_signal`) as `Stopped`, so that ingest never
fails a unit, never moves an inbox file to `failed/` and never marks a source failed for
it: the run ends "stopped by signal", its DuckDB transaction rolled back, the lease given
back by the `finally`s on the way out, and the process exits `128 + signal` (143 for
SIGTERM).
"""

from __future__ import annotations

import signal

import duckdb

_pending: list[int] = []  # the stop signals this process received (the first one counts)


class Stopped(SystemExit):
    """The run was stopped by a signal: not a failure of any file, source or benchmark."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"stopped by signal {signal_name(self.signum)}"


def signal_name(signum: int) -> str:
    """`SIGTERM` for 15, and so on."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def note_signal(signum: int) -> None:
    """A stop signal arrived (the SIGTERM handlers call this first)."""
    _pending.append(int(signum))


def stop_requested() -> int | None:
    """The stop signal this process received, or None."""
    return _pending[0] if _pending else None


def as_stop(exc: BaseException) -> Stopped | None:
    """The stop that `exc` is or hides, or None for an ordinary error.

    A stop: `Stopped`, `SystemExit`/`KeyboardInterrupt` (SIGINT), DuckDB's
    `InterruptException`, or any exception at all once a stop signal is pending.
    """
    if isinstance(exc, Stopped):
        return exc
    signum = stop_requested()
    if signum is None and isinstance(exc, SystemExit) and isinstance(exc.code, int):
        signum = exc.code - 128 if 128 < exc.code < 128 + 65 else None
    if signum is None and isinstance(exc, KeyboardInterrupt | duckdb.InterruptException):
        signum = signal.SIGINT
    return Stopped(signum) if signum is not None else None


def reraise_stop(exc: BaseException) -> None:
    """Raise `Stopped` when `exc` is a stop (`as_stop`); else return, for the caller to
    treat it as the error it is."""
    stop = as_stop(exc)
    if stop is exc:
        raise stop
    if stop is not None:
        raise stop from exc


def forget_signals() -> None:
    """Clear the pending stop (a test that sent one; a process that goes on regardless)."""
    _pending.clear()


__all__ = [
    "Stopped",
    "as_stop",
    "forget_signals",
    "note_signal",
    "reraise_stop",
    "signal_name",
    "stop_requested",
]
