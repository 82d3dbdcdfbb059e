"""The one root of the errors a user can fix (bad data, a bad setting, a damaged file).

The CLI prints a `SparseEvalError` as one line (exit 2); anything else is a bug in
sparseeval and keeps its traceback (exit 3). Each subclass keeps the built-in base it had
before this root existed (`ValueError` for bad data and settings, `RuntimeError` for the
store and the lease, `OSError` for the Hub), so a library user's `except ValueError` still
catches what it caught; the root itself is no `ValueError`, so that a plain `ValueError`
(e.g. a NumPy broadcast error) is never taken for bad input.
"""

from __future__ import annotations


class SparseEvalError(Exception):
    """A problem the user can fix (input, settings, a file): its message says what and where."""


class SettingsError(SparseEvalError, ValueError):
    """A setting or argument no run can use (unknown, misplaced, of the wrong type or range)."""


def is_user_error(exc: BaseException) -> bool:
    """Whether the user can fix it: a SparseEvalError, or an OSError about a path they
    named (missing, not readable, a folder, a full disk: it carries the file name) or the
    network. Anything else (a plain ValueError, TypeError, KeyError, ...) is a bug."""
    if isinstance(exc, SparseEvalError):
        return True
    if isinstance(exc, OSError):
        return exc.filename is not None or isinstance(exc, ConnectionError | TimeoutError)
    return False


__all__ = ["SettingsError", "SparseEvalError", "is_user_error"]
