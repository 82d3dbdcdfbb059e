"""Threads that parse at once (NumPy reading `.npy` headers in the refresh's task threads)
must not fail with CPython's "AST constructor recursion depth mismatch" (a CI run of the
fault corpus did, on 3.11.7): `import sparseeval` serialises `ast.parse`.

The race needs a collection running Python finalizers in the middle of a parse, so each
run makes garbage with `__del__` and parses a long module in four threads for 1.5 s; in a
fresh interpreter without the guard it failed 5-11 times per 2 s on this machine."""

from __future__ import annotations

import subprocess
import sys

RACE = """
import ast, sys, threading, time
if sys.argv[1] == "guarded":
    import sparseeval  # noqa: F401
SRC = "\\n".join(f"def f{i}(a, b=[1, (2, 3)]):\\n    return [x * {i} for x in a if x] + b"
                for i in range(200))
class Junk:
    def __del__(self):
        sum(range(50))
errors, stop = [], time.monotonic() + 1.5
def work():
    while time.monotonic() < stop:
        junk = [Junk() for _ in range(50)]
        for j in junk:
            j.self = j  # a cycle: freed by the collector, inside someone's parse
        del junk
        try:
            ast.parse(SRC)
        except SystemError as exc:
            errors.append(str(exc))
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(errors), errors[:1])
"""


def _race(mode: str) -> str:
    done = subprocess.run([sys.executable, "-c", RACE, mode], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_threads_parse_safely_once_sparseeval_is_imported():
    assert _race("guarded") == "0 []"


def test_the_guard_is_installed_once():
    import ast

    import sparseeval._ast_guard as guard

    wrapped = ast.parse
    guard.guard()
    assert ast.parse is wrapped and wrapped._sparseeval_guarded
