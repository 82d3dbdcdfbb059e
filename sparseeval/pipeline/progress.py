"""Progress lines of long work: the `sparseeval.progress` logger (the CLI prints it), a
throttle for frequent lines, and `still_working` for a step that may take long."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator

PROGRESS = logging.getLogger("sparseeval.progress")  # the CLI prints these lines
THINNED = ("init", "refine")  # a selection's frequent lines; its phase lines always pass


def throttled(
    say: Callable[[str], None],
    seconds: float = 15.0,
    thin: tuple[str, ...] = THINNED,
    at_once: bool = True,
) -> Callable[[str], None]:
    """`say`, passing on lines starting with `thin` at most once per `seconds`; others pass.

    at_once: the first thinned line passes at once (else only once `seconds` have passed,
    so a quick fit says nothing).
    """
    last = [-float("inf") if at_once else time.monotonic()]

    def passed_on(line: str) -> None:
        if not line.startswith(thin):
            say(line)
        elif time.monotonic() - last[0] >= seconds:
            last[0] = time.monotonic()
            say(line)

    return passed_on


EVERY = 15.0  # seconds between the lines of `still_working`


@contextlib.contextmanager
def still_working(
    what: str | Callable[[], str],
    every: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """While the block runs, a progress line every `every` seconds (`EVERY`): `{what} (45 s
    so far)`, to `say` (default: the progress logger); `what` may be a function, asked each
    time. A quick block says nothing."""
    done, t0 = threading.Event(), time.monotonic()

    def beat() -> None:
        while not done.wait(EVERY if every is None else every):
            line = what() if callable(what) else what
            (say or PROGRESS.info)(f"{line} ({time.monotonic() - t0:.0f} s so far)")

    # the caller's context goes along, so a run logger attached there still sees the lines
    run = contextvars.copy_context().run
    thread = threading.Thread(target=run, args=(beat,), name="sparseeval-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@contextlib.contextmanager
def saying(emit: Callable[[str], None], first: str) -> Iterator[Callable[[str], None]]:
    """A `say` for a long step: each line goes to `emit`, and while no new line comes for
    `EVERY` seconds the last one is said again (`still {line} (45 s so far)`)."""
    doing = [first]

    def say(line: str) -> None:
        doing[0] = line
        emit(line)

    with still_working(lambda: f"still {doing[0]}", say=emit):
        yield say
