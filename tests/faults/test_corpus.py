"""Every case of the fault-and-bad-input corpus (`tests/faults/corpus.py`, `corpus_28.py`):
the real CLI on files built to hurt it. Slow (minutes): run with `python -m pytest -n 2 -m slow`.

One world per worker (a refresh publishing arc, gsm8k and the suite), then each case in a
folder of its own; a case fails on a traceback, a silent wrong result, a lost row, a hang or
anything else it did not expect, and says which with its note.
"""

from __future__ import annotations

import pytest

from tests.faults import corpus, corpus_28  # noqa: F401  (corpus_28's cases register themselves)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with corpus.corpus_world(tmp_path_factory.mktemp("corpus")) as w:
        yield w


# Known and not yet root-caused: said here, so that a fix shows up as XPASS.
KNOWN = {
    "refresh: no file may grow past 64 KiB": (
        "in the full corpus run the shared temporary Prefect server answers this refresh with"
        " HTTP 500 (the CLI says so in one line, exit 2); alone, with a fresh world, it passes"
    ),
}
CASES = [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN[c.name], strict=False))
         if c.name in KNOWN else c for c in corpus.CASES]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.cls}: {c.name}")
def test_the_cli_holds(case: corpus.Case, world: corpus.World, tmp_path):
    verdict = case.run(tmp_path, world)
    found = corpus.problems(verdict)
    assert not found, f"{case.note}: {', '.join(found)}: {verdict.why}"
