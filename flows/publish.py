"""The publish step, one Prefect transaction per set: a benchmark's, a budget's, the suite.

The library's publish unit (`publish.publish_unit`: write candidate -> gate -> mirror to
the Hub -> swap `latest`) run with Prefect's transaction and tasks (`PREFECT`). Before each
step the transaction is told why the candidate would be rolled back; a refused gate, a
failed mirror or any crash rolls back, the candidate is discarded with that reason in its
tombstone (`tasks.discard_candidate`) and the live set stays.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from prefect.transactions import transaction
from sparseeval.flows._results import event
from sparseeval.flows._run import say

from sparseeval import tasks
from sparseeval.pipeline import publish
from sparseeval.pipeline.records import BenchmarkResult, MatrixInfo
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_publish import suite_line

# The publish unit's unit of work and steps in the refresh flow.
PREFECT = publish.Steps(transaction=transaction, mirror=tasks.mirror_to_hub,
                        promote=tasks.promote)  # fmt: skip


def alert_persistent_drift(settings: Settings, r: BenchmarkResult) -> None:
    """`sparseeval.drift.persistent` when a drifted live set stays live (nothing published
    tonight) after `drift_alert_nights` checks in a row in drift."""
    d = r.decision
    nights = d.figures.get("drift_nights", 0) if d else 0
    if (
        d
        and d.drift
        and r.published_version is None
        and nights >= settings.drift.drift_alert_nights
    ):
        say(f"{r.label}: in drift for {nights} nights in a row", logging.WARNING)
        why = f"{d.figures.get('drift_reason', d.reason)}; {r.outcome}"
        event("drift.persistent", r, {"nights": nights, "reason": why})


def publish_benchmark(settings: Settings, r: BenchmarkResult) -> BenchmarkResult:
    """The publish unit of one benchmark's (and budget's) gated candidate."""
    write = lambda: (tasks.write_candidate(settings, r.fit, r.budget), r.gate)  # noqa: E731
    out = publish.publish_unit(settings, write, PREFECT)
    if out.version is None:
        if not r.gate.accept:
            event("publish.refused", r, {"reason": r.gate.reason, **r.gate.figures})
        return replace(r, outcome=out.line, unchanged_from=out.unchanged_from)
    event("anchors.published", r, {
        "version": out.version, "path": out.path, "hub_commit": out.hub_commit,
        "test_mae": r.fit.test_metrics["mae"], "gate": r.gate.to_dict(),
    })  # fmt: skip
    return replace(r, published_version=out.version, published_path=out.path,
                   hub_commit=out.hub_commit, outcome=out.line)  # fmt: skip


def point_default(settings: Settings, r: BenchmarkResult, replace: bool = True) -> None:
    """Readers of the benchmark load the set this run maintains (`versions.point_default`):
    its largest budget's, whether published tonight or kept; with one budget, the set of its
    fit's number of anchors (`{benchmark}/k{K}`) when tonight's candidate went live there or
    repeated its live version (else the default stays). Not `replace`: a one-off budget,
    the default only for a benchmark that has none."""
    if len(settings.selection.budgets) > 1:
        budget = r.budget if r.budget == max(settings.selection.budgets) else None
    else:
        went = r.published_version is not None or r.unchanged_from is not None
        budget = r.fit.n_anchors if went and r.fit is not None else None
    if budget is not None:
        tasks.point_default(settings.paths, r.benchmark, budget, replace)


def publish_suite(settings: Settings, matrices: dict[str, MatrixInfo]) -> str:
    """Fit and publish the suite through the same unit, unless up to date or refused before."""
    say(f"suite: {', '.join(matrices)} read together")
    if line := tasks.suite_status(settings, matrices):
        return line
    write = lambda: tasks.write_suite_candidate(settings, matrices)  # noqa: E731
    out = publish.publish_unit(settings, write, PREFECT)
    suite, gate = BenchmarkResult("suite"), out.gate
    if out.version is not None:
        where = {"version": out.version, "path": out.path, "hub_commit": out.hub_commit}
        event("anchors.published", suite, where | {"gate": gate.to_dict()})
    elif not gate.accept:
        event("publish.refused", suite, {"reason": gate.reason, **gate.figures})
    return suite_line(out)


__all__ = [
    "PREFECT",
    "alert_persistent_drift",
    "point_default",
    "publish_benchmark",
    "publish_suite",
]
