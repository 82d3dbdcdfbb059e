"""What the report says about coverage: one verdict per figure, the gate's own test.

Every coverage figure of a report (a set's, the suite average's, each suite member reader's)
is judged by `gate.CoverageCheck`, as the gate judged it before publishing: below nominal by
more than its standard error (and then widened before publishing), above it, or consistent
with it. A suite's trust section gives each member reader's figure with its verdict, and the
per-benchmark table shows the same figures with the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparseeval.pipeline.gate import CoverageCheck

WORDS = {"below": "BELOW nominal", "above": "above nominal",
         "consistent": "consistent with nominal"}  # fmt: skip
KINDS = (("joint", "all anchors"), ("own", "own anchors only"))


def coverage_state(coverage: float, level: float, n: int) -> str:
    """ "below", "above" or "consistent": the gate's test of a coverage figure."""
    check = CoverageCheck(coverage, n, level)
    if check.below:
        return "below"
    return "above" if coverage > level + check.se else "consistent"


def coverage_verdict(coverage: float, level: float, n: int) -> str:
    """Coverage on test models with its standard error, and what it means, in one sentence:
    the gate's own test (`gate.CoverageCheck`), so the report and the gate never disagree."""
    se = CoverageCheck(coverage, n, level).se
    verdict = {
        "below": f"BELOW the nominal {100 * level:.0f}% by more than its standard error: the"
        " intervals as fitted were too narrow",
        "above": f"above the nominal {100 * level:.0f}%: the intervals are conservative",
        "consistent": f"consistent with the nominal {100 * level:.0f}% (within its standard error)",
    }[coverage_state(coverage, level, n)]
    return (
        f"{100 * coverage:.1f}% (standard error {100 * se:.1f} points) of {n} held-out test"
        f" models fell inside their {100 * level:.0f}% interval: {verdict}."
    )


def member_coverage(reader: Mapping[str, Any]) -> tuple[float, int, float, str, bool] | None:
    """(coverage as fitted, test models, level, verdict state, widened) of a suite member
    reader's interval entry; None when its test coverage was not measured."""
    interval = reader.get("interval") or {}
    cov, n = interval.get("test_coverage"), interval.get("n_test")
    if cov is None or not n:
        return None
    level = float(interval.get("level", 0.9))
    widened = (interval.get("coverage_check") or {}).get("action") == "widened"
    return float(cov), int(n), level, coverage_state(float(cov), level, int(n)), widened


def member_cell(reader: Mapping[str, Any]) -> str:
    """A member reader's coverage with its verdict, as the table and the trust section say it."""
    got = member_coverage(reader)
    if got is None:
        return "not measured"
    cov, _, _, state, widened = got
    return f"{100 * cov:.1f}% ({WORDS[state]}{': widened before publishing' if widened else ''})"


def suite_verdicts(manifest: Mapping[str, Any]) -> list[str]:
    """The trust section's lines on a suite's member readers (none for other sets): each
    reader's test coverage as fitted and the gate's verdict on it."""
    members = (manifest.get("suite") or {}).get("members") or {}
    if not members:
        return []
    parts = [f"{b} {what} {member_cell(m.get(kind) or {})}"
             for b, m in members.items() for kind, what in KINDS]  # fmt: skip
    below = [p for p in parts if "BELOW" in p]
    head = ("Each benchmark's readers were checked like the average, on the same test models"
            " (intervals as a user gets them: flagged models widened, the top edge)")  # fmt: skip
    tail = (f"; {len(below)} of {len(parts)} below nominal as fitted, widened to nominal before"
            " publishing" if below else f"; none of the {len(parts)} below nominal")  # fmt: skip
    return [f"{head}: {'; '.join(parts)}{tail}."]


def suite_blocks(manifest: Mapping[str, Any]) -> list[tuple]:
    """A suite's per-benchmark table: the reader kept, test MAE and coverage with all anchors
    and with its own only (the same figures and verdicts as the trust section)."""
    suite = manifest.get("suite")
    if not suite:
        return []
    tests, rows = suite.get("test_metrics") or {}, []
    for b, member in (suite.get("members") or {}).items():
        joint, own = tests.get(b) or {}, tests.get(f"{b} (own anchors only)") or {}
        rows.append([b, len(member.get("items", [])), member.get("reader"), _fmt(joint.get("mae")),
                     _fmt(own.get("mae")), member_cell(member.get("joint") or {}),
                     member_cell(member.get("own") or {})])  # fmt: skip
    head = ["benchmark", "anchors", "reader kept", "test MAE, all anchors",
            "test MAE, own anchors only", "test coverage, all anchors (as fitted)",
            "test coverage, own anchors only (as fitted)"]  # fmt: skip
    note = ("The suite average is the mean of these benchmarks' estimates; the metrics below "
            "are the average's. A model answering one benchmark only is read by its own "
            "anchors. Each reader's intervals get the gate's coverage check, as the average's "
            "do: a reader below nominal by more than the standard error was widened to nominal "
            "on the test models before publishing.")  # fmt: skip
    return [("h2", "Per benchmark"), ("table", head, rows), ("p", note)]


def _fmt(v) -> str:
    return "" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


__all__ = [
    "KINDS",
    "WORDS",
    "coverage_state",
    "coverage_verdict",
    "member_cell",
    "member_coverage",
    "suite_blocks",
    "suite_verdicts",
]
