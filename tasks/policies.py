"""What the tasks share: when to retry."""

from __future__ import annotations

_NETWORK_MODULES = {"huggingface_hub", "httpx", "httpcore", "requests", "urllib3"}


def transient(task, task_run, state) -> bool:
    """Retry network and lock trouble; a bad file or setting fails at once."""
    exc = state.result(raise_on_failure=False)
    from sparseeval.pipeline.store import SourceError, StoreLockedError

    if isinstance(exc, StoreLockedError):
        return True
    if any(c.__module__.split(".")[0] in _NETWORK_MODULES for c in type(exc).__mro__):
        return True
    return isinstance(exc, OSError | ConnectionError | TimeoutError) and not isinstance(
        exc, SourceError | FileNotFoundError
    )
