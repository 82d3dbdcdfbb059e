"""Keep freed memory in the process: the fits allocate and free the same big arrays
(an MLP's activations and gradients, the selection's ridge temporaries) every step.

glibc's defaults give freed memory at the top of the heap back to the OS (above 128 kB
to 32 MB, adapting) and the next step faults it back in, zeroed: 12-15% of an MLP's CPU
time went to those page faults (bench/RESULTS.md). Raising the
trim threshold and the top pad keeps up to a few hundred MB of freed heap for reuse.
Results are unchanged (the same arithmetic on the same values). No-op off glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's mallopt parameters
TRIM_THRESHOLD = 512 * 2**20  # free heap kept before any is returned
TOP_PAD = 64 * 2**20  # extra heap asked for each time it grows
MMAP_THRESHOLD = 32 * 2**20  # the largest glibc allows: blocks below it come from the heap


@cache
def keep_freed_memory() -> bool:
    """Set glibc's malloc to keep freed memory (the first call in a process does it; calling
    it twice, even from two threads at once, is harmless). False where there is no glibc."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    for param, value in (
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
        (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        (M_TOP_PAD, TOP_PAD),
    ):
        mallopt(param, value)
    return True


__all__ = [
    "MMAP_THRESHOLD",
    "TOP_PAD",
    "TRIM_THRESHOLD",
    "keep_freed_memory",
]
