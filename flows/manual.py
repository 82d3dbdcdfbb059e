"""Small flows for manual triggers: ingest only, retrain one benchmark, evaluate a published set."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact
from sparseeval.flows._home import hold_home
from sparseeval.flows._run import resolve_settings, stamp
from sparseeval.flows.refresh import assess_and_publish, fit_batch

from sparseeval import tasks
from sparseeval.consume.sets.layout import AnchorSetError
from sparseeval.pipeline.artifacts import forget_loaded
from sparseeval.pipeline.recipe import NotEnoughModels
from sparseeval.pipeline.records import BenchmarkResult, IngestSummary
from sparseeval.pipeline.settings import Settings, SettingsError


@flow(name="ingest-only", log_prints=True, flow_run_name=lambda: f"ingest {stamp()}")
def ingest_only(
    sources: list[str] | None = None, home: str | None = None, fill_if_empty: bool = False
) -> IngestSummary:
    """Ingest sources (default: the watched `sources` setting); nothing is trained or published."""
    settings = resolve_settings(home)
    with hold_home(settings):  # one writer per home, as a refresh
        specs = list(sources or settings.sources.sources)
        out = tasks.ingest(settings.paths, settings.sources, specs,
                           fill_if_empty)  # fmt: skip
    print(f"ingested {out.units} unit(s): {out.new:,} new results")
    return out


@flow(name="retrain-benchmark", log_prints=True, flow_run_name="retrain-{benchmark}")
def retrain_benchmark(
    benchmark: str,
    n_anchors: int | list[int] | None = None,
    settings_overrides: dict[str, Any] | None = None,
    home: str | None = None,
    publish: bool = True,
) -> list[BenchmarkResult]:
    """Rebuild and really refit one benchmark (no cache), then publish through the gate.

    No drift is needed, but the quality gate applies and a set fit on the data the live
    set was fit on is never published. One result per budget. `n_anchors` is for this run
    only: its sets are published, but readers keep loading the benchmark's default (the set
    the nightly maintains) unless it has none. Holds the home's lease, as a refresh does
    (one writer per home).
    """
    settings = resolve_settings(home, n_anchors, settings_overrides)
    with hold_home(settings):  # a refresh starting now must not take our candidate for a leftover
        states = tasks.store_state(settings.paths)
        if benchmark not in states:
            have = ", ".join(states)
            raise SettingsError(f"no results for benchmark {benchmark!r} (have: {have})")
        try:
            fitted = fit_batch(settings, [benchmark], states, True)
            return [_retrained(settings, r, publish, n_anchors is not None) for r in fitted]
        finally:
            forget_loaded()  # the matrices and models this run read


def _retrained(
    settings: Settings, r: BenchmarkResult, publish: bool, one_off: bool
) -> BenchmarkResult:
    """One retrained budget, published through the gate when asked; a failed one raises."""
    if r.error:
        raise RuntimeError(f"{r.label}: {r.error}")
    if r.fit is None:  # too few models yet
        raise NotEnoughModels(f"{r.label}: {r.outcome}")
    if publish:
        r = assess_and_publish(settings, r, "retrain requested", one_off)
    line = f"{r.label}: test MAE {r.fit.test_metrics['mae']:.3f}; {r.outcome}"
    if one_off and r.published_version is not None:
        line += (" (a budget for this run only: readers load it by default only where the"
                 " benchmark had no default set;"
                 f" `--budget {r.fit.n_anchors}` loads it)")  # fmt: skip
    print(line)
    return r


@flow(name="evaluate-published", log_prints=True, flow_run_name="evaluate-{benchmark}")
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
    settings = resolve_settings(home)
    paths = settings.paths
    live = tasks.live_set(paths, benchmark)
    if live is None:
        raise AnchorSetError(
            f"nothing published for {benchmark!r} under {settings.paths.published_dir}"
        )
    if models is None:
        since_live = replace(live, created=since, last_run=None) if since else live
        models = tasks.fresh_models(paths, benchmark, since_live)
    states = tasks.store_state(paths)
    matrix = tasks.build_matrix(paths, settings.matrix, benchmark, states[benchmark])
    scores = tasks.evaluate_published(paths, matrix, models, version)
    rows = [{"benchmark": benchmark, "version": version, **scores}]
    create_table_artifact(rows, key="sparseeval-evaluation", description="published set on models")
    shown = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                      for k, v in scores.items() if k != "n")  # fmt: skip
    get_run_logger().info("%s %s on %d models: %s", benchmark, version, scores.get("n", 0), shown)
    return scores


__all__ = [
    "evaluate_published",
    "ingest_only",
    "retrain_benchmark",
]
