"""JSON text read with bounds: nesting, huge numbers and repeated keys give one-line reasons.

`loads` never lets a RecursionError (100,000 nested brackets) or Python's int-digits
ValueError out: both become a `JsonTextError` whose message is the reason. An object with
a repeated key is kept as a `Repeated` dict, so a caller can refuse a record whose answer
could come from two places (`repeated_keys`).
"""

from __future__ import annotations

import json

from sparseeval.consume.errors import SparseEvalError


class JsonTextError(SparseEvalError, ValueError):
    """Text that is not JSON this library reads; the message is the reason."""


class Repeated(dict):
    """A JSON object that named some key more than once (the last value kept)."""

    repeated: list[str]


def _object(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    rep = Repeated(out)
    rep.repeated = list(dict.fromkeys(k for k, _ in pairs if k in seen or seen.add(k)))
    return rep


def loads(text: str | bytes) -> object:
    """`json.loads(text)` with objects that remember repeated keys; JsonTextError if not."""
    try:
        return json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise JsonTextError(exc.msg) from None
    except RecursionError:
        raise JsonTextError("nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise JsonTextError(str(exc).splitlines()[0][:120]) from None


def repeated_keys(value: object) -> list[str]:
    """The keys a parsed JSON object named more than once (empty for anything else)."""
    return list(value.repeated) if isinstance(value, Repeated) else []


def short_repr(value: object, limit: int = 60) -> str:
    """`repr(value)`, cut to `limit` characters (a message stays short)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "JsonTextError",
    "Repeated",
    "loads",
    "repeated_keys",
    "short_repr",
]
