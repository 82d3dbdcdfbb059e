"""The publish step, one Prefect transaction per set: a benchmark's, a budget's, the suite.

write candidate -> gate -> mirror to the Hub -> swap `latest`. Before each step the
transaction is told why the candidate would be rolled back (`txn.set("reason", ...)`); a
refused gate, a failed mirror or any crash rolls back, the candidate is discarded with
that reason in its tombstone (`tasks.discard_candidate`) and the live set stays.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from prefect.transactions import transaction
from sparseeval.flows._results import event
from sparseeval.flows._run import say

from sparseeval import tasks
from sparseeval.pipeline import publish
from sparseeval.pipeline.records import BenchmarkResult, Candidate, GateResult, MatrixInfo
from sparseeval.pipeline.settings import Settings


def publish_unit(
    settings: Settings, write: Callable[[], tuple[Candidate, GateResult]]
) -> tuple[publish.Outcome, GateResult | None]:
    """Run `write` (a candidate-writing task and its gate) and publish, as one transaction.

    Refusals and mirror failures are outcomes (the rollback notes a refusal in the set's
    ledger); a crash propagates after the rollback.
    """
    hub_repo, cand, gate = settings.hub_repo, None, None
    try:
        with transaction() as txn:
            cand, gate = write()
            if not gate.accept:
                txn.set("reason", publish.refused_reason(gate))
                txn.set("refusal", gate.reason)
                raise publish.Refused(gate)
            sha = None
            if hub_repo:
                txn.set("reason", publish.mirror_rollback_reason(hub_repo))
                try:
                    sha = tasks.mirror_to_hub(settings, cand)
                except Exception as exc:
                    raise publish.mirror_failed(hub_repo, exc) from exc
            txn.set("reason", publish.promote_rollback_reason(cand, hub_repo, sha))
            tasks.promote(cand)
    except publish.Refused:
        return publish.refused(gate), gate
    except publish.MirrorFailed as exc:
        return publish.not_mirrored(exc), gate
    return publish.published(cand, hub_repo, sha), gate


def alert_persistent_drift(settings: Settings, r: BenchmarkResult) -> None:
    """`sparseeval.drift.persistent` when a drifted live set stays live (nothing published
    tonight) after `drift_alert_nights` checks in a row in drift."""
    d = r.decision
    nights = d.figures.get("drift_nights", 0) if d else 0
    if d and d.drift and r.published_version is None and nights >= settings.drift_alert_nights:
        say(f"{r.label}: in drift for {nights} nights in a row", logging.WARNING)
        why = f"{d.figures.get('drift_reason', d.reason)}; {r.outcome}"
        event("drift.persistent", r, {"nights": nights, "reason": why})


def publish_benchmark(settings: Settings, r: BenchmarkResult) -> BenchmarkResult:
    """The publish unit of one benchmark's (and budget's) gated candidate."""
    out, gate = publish_unit(
        settings, lambda: (tasks.write_candidate(settings, r.fit, r.budget), r.gate)
    )
    if out.version is None:
        if not gate.accept:
            event("publish.refused", r, {"reason": gate.reason, **gate.figures})
        return replace(r, outcome=out.line)
    event("anchors.published", r, {
        "version": out.version, "path": out.path, "hub_commit": out.hub_commit,
        "test_mae": r.fit.test_metrics["mae"], "gate": r.gate.to_dict(),
    })  # fmt: skip
    return replace(r, published_version=out.version, published_path=out.path,
                   hub_commit=out.hub_commit, outcome=out.line)  # fmt: skip


def publish_suite(settings: Settings, matrices: dict[str, MatrixInfo]) -> str:
    """Fit and publish the suite through the same unit, unless up to date or refused before."""
    from sparseeval.pipeline.suite_publish import suite_line

    say(f"suite: {', '.join(matrices)} read together")
    if line := tasks.suite_status(settings, matrices):
        return line
    out, gate = publish_unit(settings, lambda: tasks.write_suite_candidate(settings, matrices))
    suite = BenchmarkResult("suite")
    if out.version is not None:
        where = {"version": out.version, "path": out.path, "hub_commit": out.hub_commit}
        event("anchors.published", suite, where | {"gate": gate.to_dict()})
    elif not gate.accept:
        event("publish.refused", suite, {"reason": gate.reason, **gate.figures})
    return suite_line(out, gate)
