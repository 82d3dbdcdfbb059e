"""The console of a CLI run: a user error is the CLI's one line, not Prefect's traceback.

Prefect logs a task's or flow's exception with its traceback, then "Finished in state
Failed(...)", on the root logger's console and on the run's log (the Prefect server). While
`QUIET_ENV` is set (the CLI sets it for a run without `--verbose`), the console handlers of
this process, and of each local Dask worker process (`dask_setup`, a worker preload), drop
the records of user errors (`consume.errors.is_user_error`) and Prefect's end-state lines:
the run's log keeps them, traceback included, and a bug's traceback stays on the console.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

from sparseeval.consume.errors import is_user_error

QUIET_ENV = "SPARSEEVAL_CONSOLE_ONE_LINE"  # "1": the console filter is on (CLI, no --verbose)
PRELOAD = __name__  # the module a local Dask worker runs first (`dask_setup`)


class OneLineErrors(logging.Filter):
    """Drops a record that carries a user error, Prefect's "Finished in state ..." error
    lines (a failed or never-run task: the CLI says which benchmark failed and why) and the
    warnings of Dask's own life cycle (e.g. "Worker process still alive after 4.0 seconds,
    killing" when a busy machine stops the local cluster)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            return not is_user_error(exc)
        if record.name.split(".")[0] == "distributed" and record.levelno < logging.ERROR:
            return False
        end_state = record.name.startswith("prefect.") and record.levelno >= logging.ERROR
        return not (end_state and str(record.msg).startswith("Finished in state"))


def consoles() -> list[logging.Handler]:
    """The root logger's stream handlers (Prefect's console, `main`'s), files aside."""
    streams = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]
    return [h for h in streams if not isinstance(h, logging.FileHandler)]


@contextlib.contextmanager
def one_line_errors(on: bool = True) -> Iterator[None]:
    """While it lasts (and `on`), this process's consoles and those of the local Dask workers
    started meanwhile drop what `OneLineErrors` drops; then the filters and `QUIET_ENV` go."""
    if not on:
        yield
        return
    drop, handlers, before = OneLineErrors(), consoles(), os.environ.get(QUIET_ENV)
    os.environ[QUIET_ENV] = "1"  # the worker processes inherit it
    for handler in handlers:
        handler.addFilter(drop)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(drop)
        if before is None:
            os.environ.pop(QUIET_ENV, None)
        else:
            os.environ[QUIET_ENV] = before


def dask_setup(worker: object = None) -> None:
    """A local Dask worker's preload: Prefect's logging set up, then its consoles filtered
    when the CLI asked (`QUIET_ENV`); a worker of another run's cluster is left as it is."""
    if os.environ.get(QUIET_ENV) != "1":
        return
    from prefect.logging.configuration import ensure_logging_setup

    ensure_logging_setup()  # later set-ups are incremental: they keep the handlers and filters
    for handler in consoles():
        if not any(isinstance(f, OneLineErrors) for f in handler.filters):
            handler.addFilter(OneLineErrors())
