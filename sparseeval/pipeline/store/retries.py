"""Hub calls retried on HTTP 429 / 5xx and network errors, with backoff honouring Retry-After.

A call that still fails raises `HubError`, its message redacted (no token ever leaks).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.sets.hub import redact

log = logging.getLogger("sparseeval.pipeline.store.hub")
T = TypeVar("T")

# Retries of one Hub call: attempts in all, first wait (doubling each retry), longest wait.
RETRY_ATTEMPTS = 5
RETRY_BASE_S = 1.0
RETRY_MAX_WAIT_S = 60.0


class HubError(SparseEvalError, OSError):
    """A Hub call failed (after retries where retrying made sense); the message is redacted."""


def with_retries(what: str, fn: Callable[..., T], *args: Any, secret: Any = None, **kw: Any) -> T:
    """`fn(*args, **kw)`, retried on HTTP 429 / 5xx and network errors.

    At most `RETRY_ATTEMPTS` attempts; waits `RETRY_BASE_S` doubling each time, or the
    response's `Retry-After` when longer, never more than `RETRY_MAX_WAIT_S`. Any failure
    that is not retried (or still fails) raises `HubError` naming `what`, its message
    redacted (also of `secret`, the client's token) and without the original traceback.
    """
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            return fn(*args, **kw)
        except Exception as exc:
            status = http_status(exc)
            if attempt >= RETRY_ATTEMPTS or not _retryable(exc, status):
                tried = f" after {attempt} attempts" if attempt > 1 else ""
                msg = f"{what} failed{tried}: {_one_line(exc)}"
                raise HubError(redact(msg, secret)[:1000]) from None
            wait = retry_wait(exc, attempt)
            why = f"HTTP {status}" if status else type(exc).__name__
            log.warning(
                "%s: %s; retry %d of %d in %.2fs", what, why, attempt, RETRY_ATTEMPTS - 1, wait
            )
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def http_status(exc: BaseException) -> int | None:
    """The HTTP status of a client error that carries a response (`HfHubHTTPError`), if any."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def retry_wait(exc: BaseException, attempt: int) -> float:
    """Seconds to wait before attempt `attempt + 1`: backoff, or Retry-After if longer; capped."""
    backoff = RETRY_BASE_S * 2 ** (attempt - 1)
    return min(RETRY_MAX_WAIT_S, max(backoff, _retry_after(exc) or 0.0))


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _retryable(exc: BaseException, status: int | None) -> bool:
    if status is not None:
        return status == 429 or status >= 500
    if type(exc).__name__ == "OfflineModeIsEnabled":  # a ConnectionError that never heals
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    try:
        import httpx2

        return isinstance(exc, httpx2.TransportError)
    except ImportError:  # pragma: no cover - older huggingface_hub (requests / httpx)
        return type(exc).__name__ in {"ConnectTimeout", "ReadTimeout", "ConnectError"}


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = [
    "RETRY_ATTEMPTS",
    "RETRY_BASE_S",
    "RETRY_MAX_WAIT_S",
    "HubError",
    "T",
    "http_status",
    "retry_wait",
    "with_retries",
]
