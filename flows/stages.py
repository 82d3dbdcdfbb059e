"""Small flows for manual triggers: ingest only, retrain one benchmark, evaluate a published set."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact

import tasks
from sparseeval.records import BenchmarkResult, IngestSummary

from .refresh import check_and_publish, resolve_settings


@flow(name="ingest-only", log_prints=True)
def ingest_only(
    sources: list[str] | None = None, home: str | None = None, fill_if_empty: bool = False
) -> IngestSummary:
    """Ingest sources into the store; nothing is trained or published."""
    settings = resolve_settings(home)
    out = tasks.ingest(str(settings.store_path), list(sources or []), fill_if_empty)
    print(f"ingested {out.units} unit(s): {out.new:,} new results")
    return out


@flow(name="retrain-benchmark", log_prints=True)
def retrain_benchmark(
    benchmark: str,
    n_anchors: int | None = None,
    settings_overrides: dict[str, Any] | None = None,
    home: str | None = None,
    publish: bool = True,
) -> BenchmarkResult:
    """Rebuild and refit one benchmark; publish through the quality gate (no drift needed)."""
    s = resolve_settings(home, n_anchors, settings_overrides)
    sd, store, arts = s.to_dict(), str(s.store_path), str(s.artifacts_dir)
    states = tasks.store_state(store)
    if benchmark not in states:
        raise ValueError(f"no results for benchmark {benchmark!r} (have: {', '.join(states)})")
    matrix = tasks.build_matrix(store, benchmark, states[benchmark], arts, sd)
    fit = tasks.fit_benchmark(benchmark, matrix, sd, arts)
    out = BenchmarkResult(benchmark, matrix, fit)
    if publish:
        out = check_and_publish(store, str(s.published_dir), out, sd, "retrain requested")
    print(f"{benchmark}: test MAE {fit.test_metrics['mae']:.3f}; {out.outcome}")
    return out


@flow(name="evaluate-published", log_prints=True)
def evaluate_published(
    benchmark: str,
    models: list[str] | None = None,
    since: str | None = None,
    version: str = "latest",
    home: str | None = None,
) -> dict[str, Any]:
    """Score a published anchor set on models with full results in the store.

    models: model ids to score; since: an ISO time, scoring models first seen after it;
    neither: the models that arrived after the set was published.
    """
    from dataclasses import replace

    s = resolve_settings(home)
    store, pub, arts = str(s.store_path), str(s.published_dir), str(s.artifacts_dir)
    live = tasks.live_set(pub, benchmark, arts)
    if live is None:
        raise ValueError(f"nothing published for {benchmark!r} under {pub}")
    if models is None:
        since_live = replace(live, created=since, last_run=None) if since else live
        models = tasks.fresh_models(store, benchmark, since_live)
    states = tasks.store_state(store)
    matrix = tasks.build_matrix(store, benchmark, states[benchmark], arts, s.to_dict())
    scores = tasks.evaluate_published(pub, benchmark, matrix, models, version)
    rows = [{"benchmark": benchmark, "version": version, **scores}]
    create_table_artifact(rows, key="sparseeval-evaluation", description="published set on models")
    get_run_logger().info("%s %s on %d models: %s", benchmark, version, scores.get("n", 0), scores)
    return scores
