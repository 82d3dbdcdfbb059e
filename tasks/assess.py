"""Tasks of the assess step: the live set, the models new since it, drift and the gate."""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from sparseeval.pipeline import assess as decide
from sparseeval.pipeline import drift, publish
from sparseeval.pipeline.records import DriftDecision, FitInfo, GateResult, LiveSet, MatrixInfo
from sparseeval.pipeline.settings import PathsSection, Settings


@task(name="live-set", cache_policy=NO_CACHE, task_run_name="live-set-{benchmark}")
def live_set(paths: PathsSection, benchmark: str, budget: int | None = None) -> LiveSet | None:
    """The live published version (and what it was built from), or None."""
    return publish.live_set(paths.published_dir, benchmark, paths.artifacts_dir, budget)


@task(name="fresh-models", cache_policy=NO_CACHE, task_run_name="fresh-models-{benchmark}")
def fresh_models(paths: PathsSection, benchmark: str, live: LiveSet | None) -> list[str]:
    """Models that arrived after the live set's data was read (none without a live set)."""
    return drift.fresh_models(paths.store_path, benchmark, live) if live else []


@task(name="assess", cache_policy=NO_CACHE, task_run_name="assess-{matrix.benchmark}")
def assess(
    settings: Settings,
    matrix: MatrixInfo,
    fit: FitInfo,
    live: LiveSet | None,
    fresh: list[str],
    requested: str | None = None,
    budget: int | None = None,
) -> tuple[DriftDecision, GateResult | None]:
    """Drift of the live set on new models; the candidate's gate when it may be published
    (`settings`: its paths and drift sections are read)."""
    decision, gate = decide.assess(settings, matrix, fit, live, fresh, requested, budget)
    log = get_run_logger()
    log.info("%s: %s", matrix.benchmark, decision.reason)
    if gate is not None:
        log.info("%s: gate %s", matrix.benchmark, gate.reason)
    return decision, gate


@task(name="evaluate-published", cache_policy=NO_CACHE)
def evaluate_published(
    paths: PathsSection, matrix: MatrixInfo, model_ids: list[str] | None,
    version: str | int = "latest",
) -> dict[str, Any]:  # fmt: skip
    """Scores of a published set on some models of the benchmark's matrix."""
    return drift.evaluate_published(
        paths.published_dir, matrix.benchmark, matrix.path, model_ids, version
    )


__all__ = [
    "assess",
    "evaluate_published",
    "fresh_models",
    "live_set",
]
