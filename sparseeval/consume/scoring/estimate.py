"""What scoring a model returns: an `Estimate` with its interval, a `Difference` of two."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    """An estimated full-benchmark accuracy in [0, 1] with its interval at `level`."""

    value: float
    low: float
    high: float
    level: float
    benchmark: str = ""
    version: int | None = None
    n_anchors: int = 0
    n_answered: int = 0
    missing: tuple[str, ...] = ()
    imputed: bool = False
    target: str = ""  # what the set estimates, in words (e.g. the leaderboard's definition)
    synthetic: bool = False  # the set was fit on the built-in synthetic demo, not real results
    data: str = ""  # where the set's results came from (`consume.sets.about.data_sources`)
    flags: tuple[
        str, ...
    ] = ()  # why the model is unlike the training pool (`consume.scoring.flags`)
    # the extra items' correction (`consume.scoring.next_items`): n_extra, n_rest, shift, sd
    # and unbiased (the difference estimate), combined_sd and weight (of the combination),
    # anchor_estimate [value, low, high], items; None when only anchors were read
    correction: dict | None = None
    note: str = ""  # e.g. why answered extra items were not used

    def to_dict(self) -> dict:
        return asdict(self) | {"missing": list(self.missing), "flags": list(self.flags),
                               "saturated": self.saturated}  # fmt: skip

    @property
    def n_extra(self) -> int:
        """Extra items (not anchors) the estimate read."""
        return int(self.correction["n_extra"]) if self.correction else 0

    @property
    def saturated(self) -> str:
        """The side, "top" or "bottom", where the model sits where the anchors stop telling
        models apart: its estimate in the zone (its interval opened there), or, at the top,
        answers like the pool's strongest models' (said, not opened); the flag says what
        would narrow it."""
        for side in ("top", "bottom"):
            if any(f.startswith(f"at the {side} of what these anchors can tell") for f in
                   self.flags):  # fmt: skip
                return side
        return ""

    @property
    def flag_line(self) -> str:
        """One line saying why the estimate is flagged ("" when it is not)."""
        if not self.flags:
            return ""
        how = ("the interval combines the extra items'" if self.correction
               else "trust the interval less")  # fmt: skip
        return f"unlike the training models ({how}): " + "; ".join(self.flags)

    def __str__(self) -> str:
        pct = round(100 * self.level)
        s = f"{100 * self.value:.1f}% ({pct}% interval {100 * self.low:.1f}-{100 * self.high:.1f}%)"
        if self.imputed:
            s += f", {len(self.missing)} of {self.n_anchors} anchors imputed"
        if self.correction:
            s += (f", {100 * self.correction['shift']:+.1f} points from {self.n_extra} more"
                  " items")  # fmt: skip
        if self.flags:
            s += f"; {self.flag_line}"
        return s


@dataclass(frozen=True)
class Difference:
    """Estimated accuracy of A minus B, its interval, and the smallest resolvable gap."""

    value: float
    low: float
    high: float
    level: float
    resolvable: float
    a: Estimate | None = None
    b: Estimate | None = None

    @property
    def significant(self) -> bool:
        """True when the interval excludes zero."""
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("value", "low", "high", "level")}
        d["resolvable"] = self.resolvable if np.isfinite(self.resolvable) else None
        d["significant"] = self.significant
        d["a"] = self.a.to_dict() if self.a else None
        d["b"] = self.b.to_dict() if self.b else None
        return d

    def __str__(self) -> str:
        pct = round(100 * self.level)
        return (
            f"{100 * self.value:+.1f} points ({pct}% interval {100 * self.low:+.1f} to "
            f"{100 * self.high:+.1f}); smallest resolvable difference "
            f"{100 * self.resolvable:.1f} points"
        )


__all__ = [
    "Difference",
    "Estimate",
]
