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
    A one-word `NAME: ` before a line (the suite's "arc: refine step 3") is not looked at.

    at_once: the first thinned line passes at once (else only once `seconds` have passed,
    so a quick fit says nothing).
    """
    last = [-float("inf") if at_once else time.monotonic()]

    def passed_on(line: str) -> None:
        if not _body(line).startswith(thin):
            say(line)
        elif time.monotonic() - last[0] >= seconds:
            last[0] = time.monotonic()
            say(line)

    return passed_on


def _body(line: str) -> str:
    """The line without a one-word `NAME: ` before it."""
    head, sep, rest = line.partition(": ")
    return rest if sep and " " not in head else line


EVERY = 15.0  # seconds between the lines of `still_working`


@contextlib.contextmanager
def _every(seconds: float, beat: Callable[[], None]) -> Iterator[None]:
    """While the block runs, `beat()` every `seconds` from a thread (in the caller's context,
    so that a run logger attached there still sees its lines)."""
    done = threading.Event()

    def loop() -> None:
        while not done.wait(seconds):
            beat()

    run = contextvars.copy_context().run
    thread = threading.Thread(target=run, args=(loop,), name="sparseeval-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@contextlib.contextmanager
def still_working(
    what: str | Callable[[], str],
    every: float | None = None,
    say: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """While the block runs, a progress line every `every` seconds (`EVERY`): `{what} (45 s
    so far)`, to `say` (default: the progress logger); `what` may be a function, asked each
    time. A quick block says nothing."""
    t0 = time.monotonic()

    def beat() -> None:
        line = what() if callable(what) else what
        (say or PROGRESS.info)(f"{line} ({time.monotonic() - t0:.0f} s so far)")

    with _every(EVERY if every is None else every, beat):
        yield


@contextlib.contextmanager
def saying(emit: Callable[[str], None], first: str) -> Iterator[Callable[[str], None]]:
    """A `say` for a long step: each line goes to `emit`, and once no new line has come for
    `EVERY` seconds the last one is said again, with how long it has run (`still {line}
    (45 s so far)`)."""
    now = time.monotonic()
    last = {"line": first, "since": now, "told": now}

    def say(line: str) -> None:
        now = time.monotonic()
        last.update(line=line, since=now, told=now)
        emit(line)

    def beat() -> None:
        now = time.monotonic()
        if now - last["told"] >= EVERY:
            last["told"] = now
            emit(f"still {last['line']} ({now - last['since']:.0f} s so far)")

    with _every(EVERY / 5, beat):
        yield say


__all__ = [
    "EVERY",
    "PROGRESS",
    "THINNED",
    "saying",
    "still_working",
    "throttled",
]
