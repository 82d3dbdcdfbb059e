"""The nightly refresh: ingest -> per benchmark (fanned out) matrix -> fit -> drift -> publish.

Run once now:  `sparseeval refresh`  (or `python -m flows.refresh`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.events import emit_event
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.transactions import transaction

import tasks
from sparseeval import runreport
from sparseeval.drift import same_data
from sparseeval.recipe import PipelineError
from sparseeval.records import BenchmarkResult, FitInfo, GateResult, RunSummary
from sparseeval.settings import Settings


class GateRefused(Exception):
    """The candidate is worse than the live set: roll the unit of work back."""

    def __init__(self, gate: GateResult) -> None:
        super().__init__(gate.reason)
        self.gate = gate


def resolve_settings(
    home: str | None = None,
    n_anchors: int | None = None,
    settings_overrides: dict[str, Any] | None = None,
) -> Settings:
    """Defaults < sparseeval.toml < SPARSEEVAL_* env < flow parameters."""
    overrides = dict(settings_overrides or {})
    if home is not None:
        overrides["home"] = home
    if n_anchors is not None:
        overrides["n_anchors"] = n_anchors
    return Settings.load(**overrides)


def task_runner_for(settings: Settings, dask_processes: bool = True):
    """The task runner named by `settings.task_runner`: threads here, or a Dask cluster."""
    if settings.task_runner == "thread":
        return ThreadPoolTaskRunner(max_workers=max(1, settings.workers))
    if settings.task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as exc:  # the `dask` extra
            raise RuntimeError(
                "task_runner = 'dask' needs prefect-dask: pip install 'sparseeval[dask]'"
            ) from exc
        if settings.dask_address:
            return DaskTaskRunner(address=settings.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": settings.workers,
                "threads_per_worker": 1,
                "processes": dask_processes,
                "dashboard_address": None,
            }
        )
    raise ValueError(f"task_runner must be 'thread' or 'dask', got {settings.task_runner!r}")


def _error(state) -> str:
    exc = state.result(raise_on_failure=False)
    return f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(state.message)


@flow(name="fit-benchmarks")
def fit_benchmarks(
    store_path: str,
    benchmarks: list[str],
    store_states: dict[str, str],
    settings: dict[str, Any],
    artifacts_dir: str,
) -> dict[str, BenchmarkResult]:
    """Fan out: build each benchmark's matrix and fit it, concurrently (threads or Dask)."""
    mats = {
        b: tasks.build_matrix.submit(store_path, b, store_states[b], artifacts_dir, settings)
        for b in benchmarks
    }
    fits = {b: tasks.fit_benchmark.submit(b, mats[b], settings, artifacts_dir) for b in benchmarks}
    out: dict[str, BenchmarkResult] = {}
    for b in benchmarks:
        fits[b].wait()
        ms, fs = mats[b].state, fits[b].state
        if not ms.is_completed():
            out[b] = BenchmarkResult(b, error=f"matrix: {_error(ms)}")
        elif not fs.is_completed():
            out[b] = BenchmarkResult(b, ms.result(), error=f"fit: {_error(fs)}")
        else:
            fit: FitInfo = fs.result()
            cached = fs.name == "Cached" or not fit.trained
            r = BenchmarkResult(b, ms.result(), fit, ms.name == "Cached", cached, fs.name)
            out[b] = r if _files_exist(r) else _rebuild(r, store_path, store_states[b], settings,
                                                          artifacts_dir)  # fmt: skip
    return out


def _files_exist(r: BenchmarkResult) -> bool:
    from pathlib import Path

    return Path(r.matrix.path).is_file() and Path(r.fit.model_dir).is_dir()


def _rebuild(r: BenchmarkResult, store_path, state, settings, artifacts_dir) -> BenchmarkResult:
    """A cached result whose files were deleted: build them again."""
    get_run_logger().warning("%s: cached artifacts are missing; rebuilding them", r.benchmark)
    matrix = tasks.build_matrix.with_options(refresh_cache=True)(
        store_path, r.benchmark, state, artifacts_dir, settings
    )
    fit = tasks.fit_benchmark.with_options(refresh_cache=True)(
        r.benchmark, matrix, settings, artifacts_dir
    )
    return replace(r, matrix=matrix, fit=fit, matrix_cached=False, fit_cached=False)


def publish_unit(published_dir: str, r: BenchmarkResult, settings: dict) -> BenchmarkResult:
    """Write candidate -> quality gate -> swap `latest`, as one Prefect transaction.

    A refused gate or any crash rolls back: the candidate folder is discarded and the
    live version stays as it was. A refusal is an outcome; a crash propagates.
    """
    b, gate = r.benchmark, r.gate
    try:
        with transaction():
            cand = tasks.write_candidate(published_dir, b, r.fit, settings)
            if not gate.accept:
                raise GateRefused(gate)
            tasks.promote(published_dir, b, cand.version)
    except GateRefused:
        return replace(r, outcome=f"not published ({gate.reason})")
    emit_event(
        event="sparseeval.anchors.published",
        resource={"prefect.resource.id": f"sparseeval.benchmark.{b}",
                  "prefect.resource.name": b},
        payload={"version": cand.version, "path": cand.path,
                 "test_mae": r.fit.test_metrics["mae"], "gate": gate.to_dict()},
    )  # fmt: skip
    return replace(r, published_version=cand.version, published_path=cand.path,
                   outcome=f"published v{cand.version}")  # fmt: skip


def check_and_publish(
    store_path: str, published_dir: str, r: BenchmarkResult, settings: dict[str, Any],
    requested: str | None = None,
) -> BenchmarkResult:  # fmt: skip
    """Drift check of the live set on fresh models, then the publish unit when needed."""
    b = r.benchmark
    live = tasks.live_set(published_dir, b, settings["artifacts_dir"])
    fresh = tasks.fresh_models(store_path, b, live) if live else []
    decision, gate = tasks.assess(published_dir, b, r.matrix, r.fit, live, fresh, settings,
                                  requested)  # fmt: skip
    r = replace(r, live=live, decision=decision, gate=gate, n_fresh=len(fresh))
    if decision.drift:
        emit_event(
            event="sparseeval.drift.detected",
            resource={"prefect.resource.id": f"sparseeval.benchmark.{b}",
                      "prefect.resource.name": b},
            payload={"reason": decision.reason, **decision.figures,
                     "live_version": live and live.version},
        )  # fmt: skip
    if not decision.publish:
        return replace(r, outcome="not published (no drift)")
    if why := same_data(live, r.fit):
        return replace(r, outcome=f"not published ({why})")
    return publish_unit(published_dir, r, settings)


@flow(name="refresh", log_prints=True)
def refresh(
    sources: list[str] | None = None,
    benchmarks: list[str] | None = None,
    n_anchors: int | None = None,
    settings_overrides: dict[str, Any] | None = None,
    home: str | None = None,
    fill_if_empty: bool = True,
    dask_processes: bool = True,
) -> RunSummary:
    """Refresh every benchmark (or the ones named) and publish where drift calls for it.

    sources: specs such as `results.parquet`, `wide:arc=arc.csv`, an lm-eval folder,
    `hub:org/model` or `synthetic`; none and an empty store -> the built-in synthetic
    leaderboard. settings_overrides: any `Settings` field (e.g. {"n_test": 100}).
    """
    log = get_run_logger()
    started = datetime.now(UTC)
    settings = resolve_settings(home, n_anchors, settings_overrides)
    sd = settings.to_dict()
    store, arts = str(settings.store_path), str(settings.artifacts_dir)

    ingested = tasks.ingest(store, list(sources or []), fill_if_empty)
    states = tasks.store_state(store)
    names = list(benchmarks or states)
    unknown = [b for b in names if b not in states]
    if unknown:
        raise ValueError(
            f"no results in the store for benchmark(s) {', '.join(unknown)}"
            f" (have: {', '.join(states) or 'none'})"
        )
    log.info("refreshing %d benchmark(s): %s", len(names), ", ".join(names))

    runner = task_runner_for(settings, dask_processes)
    fitted = fit_benchmarks.with_options(task_runner=runner)(
        store, names, {b: states[b] for b in names}, sd, arts
    )
    results = []
    for b in names:
        r = fitted[b]
        if r.error:
            log.error("%s: %s", b, r.error)
            results.append(replace(r, outcome=f"failed ({r.error})"))
        else:
            results.append(check_and_publish(store, str(settings.published_dir), r, sd))
    run = RunSummary(started.isoformat(timespec="seconds"), type(runner).__name__, sd, ingested,
                     results)  # fmt: skip
    run = replace(run, report_path=tasks.write_report(str(settings.reports_dir), run))
    publish_artifacts(run)
    log.info(runreport.summary_line(run))
    if run.failed:
        raise PipelineError(
            f"refresh failed for {', '.join(run.failed)}; report at {run.report_path}"
        )
    return run


def publish_artifacts(run: RunSummary) -> None:
    """The run's Prefect artifacts: the Markdown report, a metrics table, published paths."""
    markdown = runreport.render_report(run)
    create_markdown_artifact(markdown, key="sparseeval-refresh-report", description="refresh")
    create_table_artifact(
        runreport.metrics_rows(run), key="sparseeval-metrics", description="test metrics"
    )
    published = [r for r in run.results if r.published_path]
    if published:
        create_markdown_artifact(
            "\n".join(f"- {r.benchmark} v{r.published_version}: `{r.published_path}`"
                      for r in published),
            key="sparseeval-published", description="published anchor sets",
        )  # fmt: skip


if __name__ == "__main__":
    refresh()
