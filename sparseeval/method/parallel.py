"""Independent fits side by side in threads (NumPy, nnls and one-thread torch free the GIL),
and a cap on how many MLPs train at once while many fits are under way (the suite's)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


def side_by_side(tasks: Sequence[Callable[[], T]], n_jobs: int | None = None) -> list[T]:
    """Each task's result, in the tasks' order; the tasks run at once in threads.

    n_jobs: at most that many at a time (None: all of them; 1: one after another, here).
    Every fit seeds its own generators (an MLP draws its net under `predictors._BUILD_LOCK`),
    so the results do not depend on the order the tasks run in, nor on `n_jobs`.
    """
    if n_jobs == 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=n_jobs or len(tasks)) as pool:
        return list(pool.map(lambda task: task(), tasks))


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Slots:
    semaphore: threading.Semaphore | None = None  # None: no cap


@contextmanager
def trainings_at_once(n: int | None) -> Iterator[None]:
    """While inside, at most `n` MLP trainings run at once (`training_slot`), in every thread.

    Many fits side by side start dozens of training threads; on a few cores they then
    thrash caches and contend for the GIL (measured: ~30% more CPU for the same fits, 18-30
    threads on 2 cores). Waiting threads cost nothing and nothing a slot holder does
    waits for a slot, so this cannot deadlock. `n=None`: no cap. Inside another cap (a
    fit of the suite's side-by-side fits), that one stands. Results are unchanged.
    """
    if _Slots.semaphore is not None or n is None:
        yield
        return
    _Slots.semaphore = threading.Semaphore(max(1, n))
    try:
        yield
    finally:
        _Slots.semaphore = None


@contextmanager
def training_slot() -> Iterator[None]:
    """Hold one of the slots `trainings_at_once` set (at once when none are set)."""
    semaphore = _Slots.semaphore
    if semaphore is None:
        yield
        return
    with semaphore:
        yield


__all__ = [
    "T",
    "side_by_side",
    "training_slot",
    "trainings_at_once",
    "usable_cpus",
]
