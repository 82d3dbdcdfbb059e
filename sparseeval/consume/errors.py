"""The one root of the errors a user can fix (bad data, a bad setting, a damaged file).

The CLI prints a `SparseEvalError` as one line (exit 2); anything else is a bug in
sparseeval and keeps its traceback (exit 3). Each subclass keeps the built-in base it had
before this root existed (`ValueError` for bad data and settings, `RuntimeError` for the
store and the lease, `OSError` for the Hub), so a library user's `except ValueError` still
catches what it caught; the root itself is no `ValueError`, so that a plain `ValueError`
(e.g. a NumPy broadcast error) is never taken for bad input.
"""

from __future__ import annotations

import errno


class SparseEvalError(Exception):
    """A problem the user can fix (input, settings, a file): its message says what and where."""


class SettingsError(SparseEvalError, ValueError):
    """A setting or argument no run can use (unknown, misplaced, of the wrong type or range)."""


# errno values that say the machine, not sparseeval, failed: a full disk or quota, a read-only
# or failing file system, no file handles or memory left
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO,
                                errno.EMFILE, errno.ENFILE, errno.ENOMEM})  # fmt: skip


def environment_fault(exc: BaseException) -> str | None:
    """One line for an error of the environment, `exc` or what it was raised from (`raise
    ... from`: a full disk, a server that is down or answers junk: `PREFECT_API_URL`), else
    None (a bug). An error raised while handling one (its context) is not it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # EFBIG: a size limit
            what = "disk full" if full else "system"
            return f"{_first_line(exc)} ({what}: nothing half-written; fix it, then run again)"
        if isinstance(exc, ConnectionError | TimeoutError) or _network(exc):
            return (
                f"{_first_line(exc)} (the server could not be used: is it up, and is"
                " PREFECT_API_URL right?)"
            )
        exc = exc.__cause__
    return None


def _network(exc: BaseException) -> bool:
    """An HTTP client's error (httpx, as Prefect's client raises): a network or server fault."""
    return any(k.__module__.split(".")[0] == "httpx" for k in type(exc).__mro__)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]


def is_user_error(exc: BaseException) -> bool:
    """Whether the user can fix it: a SparseEvalError, or an OSError about a path they
    named (missing, not readable, a folder, a full disk: it carries the file name) or the
    network, or a fault of the machine met anywhere in its chain (`environment_fault`: a
    full disk, a server down or answering junk). Anything else (a plain ValueError,
    TypeError, KeyError, ...) is a bug."""
    if isinstance(exc, SparseEvalError) or environment_fault(exc) is not None:
        return True
    if isinstance(exc, OSError):
        return exc.filename is not None or isinstance(exc, ConnectionError | TimeoutError)
    return False


MAX_LINE = 1000  # a guard against a message of megabytes, not a style limit


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (or its type), at most `MAX_LINE`
    characters: a longer one keeps its start and its end (where the report's path and the
    next step are), the middle elided."""
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    if len(line) <= MAX_LINE:
        return line
    half = (MAX_LINE - 5) // 2
    return f"{line[:half]} ... {line[-half:]}"


__all__ = ["MAX_LINE", "SettingsError", "SparseEvalError", "environment_fault", "first_line",
           "is_user_error"]  # fmt: skip
