"""What the tasks share: when to retry, and the content keys of the cached ones."""

from __future__ import annotations

from typing import Any

from prefect.context import TaskRunContext

from sparseeval.pipeline.artifacts import fit_key, matrix_key

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


def matrix_cache_key(ctx: TaskRunContext, p: dict[str, Any]) -> str:
    return matrix_key(p["benchmark"], p["store_state"], p["settings"])


def fit_cache_key(ctx: TaskRunContext, p: dict[str, Any]) -> str:
    return fit_key(p["matrix"].fingerprint, p["settings"].replace(n_anchors=p["budget"]))
