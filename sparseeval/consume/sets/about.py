"""What a published set estimates and where its data came from, in words (NumPy only)."""

from __future__ import annotations

from collections.abc import Mapping

SYNTHETIC_NOTE = "this set was fit on the built-in SYNTHETIC demo leaderboard, not real data"


def data_sources(provenance: Mapping | None) -> str:
    """The manifest's `provenance` as one phrase: "KIND (N source(s)), ..." ('' if unknown)."""
    kinds = (provenance or {}).get("kinds") or {}
    if not isinstance(kinds, Mapping):
        return ""
    return ", ".join(
        f"{kind} ({k.get('n_sources', '?') if isinstance(k, Mapping) else '?'} source(s))"
        for kind, k in kinds.items()
    )


__all__ = [
    "SYNTHETIC_NOTE",
    "data_sources",
]
