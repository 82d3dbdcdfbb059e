"""What the tasks share: when to retry."""

from __future__ import annotations

import errno

_NETWORK_MODULES = {"huggingface_hub", "httpx", "httpcore", "requests", "urllib3"}
# An OSError is retried only when waiting can cure it: a busy file or a network hiccup.
# A full disk, a read-only home, a home that is a file, a missing path: fail at once.
_TRANSIENT_ERRNOS = {errno.EAGAIN, errno.EBUSY, errno.EINTR, errno.ETIMEDOUT, errno.ECONNRESET,
                     errno.ECONNREFUSED, errno.ECONNABORTED, errno.ENETUNREACH,
                     errno.EHOSTUNREACH, errno.ENETDOWN, errno.ESTALE}  # fmt: skip


def transient(task, task_run, state) -> bool:
    """Retry network and lock trouble; a bad file, a full disk or a bad setting fails at once."""
    exc = state.result(raise_on_failure=False)
    from sparseeval.pipeline.store import SourceError, StoreLockedError

    if isinstance(exc, StoreLockedError):
        return True
    if any(c.__module__.split(".")[0] in _NETWORK_MODULES for c in type(exc).__mro__):
        return True
    if isinstance(exc, SourceError):
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS


__all__ = [
    "transient",
]
