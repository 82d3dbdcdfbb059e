"""The one root of the errors a user can fix (bad data, a bad setting, a damaged file).

The CLI prints a `SparseEvalError` as one line (exit 2); anything else is a bug in
sparseeval and keeps its traceback. It subclasses `ValueError`, as every domain error did
before it, so a library user's `except ValueError` still catches them all.
"""

from __future__ import annotations


class SparseEvalError(ValueError):
    """A problem the user can fix (input, settings, a file): its message says what and where."""


__all__ = ["SparseEvalError"]
