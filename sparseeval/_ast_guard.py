"""One `ast.parse` at a time in this process: CPython keeps the AST constructor's recursion
depth in interpreter-wide state, so two threads parsing at once can fail with
"SystemError: AST constructor recursion depth mismatch" (python/cpython#106905 and its
kin; seen on 3.11.7 in a refresh whose task threads loaded matrices).

Parsing is everywhere a night goes: NumPy reads every `.npy` header with
`ast.literal_eval`, `inspect.signature` parses builtins' text signatures, and 3.11's
tracebacks parse source lines for their carets. `guard()` wraps the module's `parse` (that
`literal_eval` and the others look up when called) in a re-entrant lock, once per process.
"""

from __future__ import annotations

import ast
import functools
import threading

_LOCK = threading.RLock()


def guard() -> None:
    """Make `ast.parse` take the process's parse lock (idempotent)."""
    if getattr(ast.parse, "_sparseeval_guarded", False):
        return
    unguarded = ast.parse

    @functools.wraps(unguarded)
    def parse(*args, **kwargs):
        with _LOCK:
            return unguarded(*args, **kwargs)

    parse._sparseeval_guarded = True  # type: ignore[attr-defined]
    ast.parse = parse
