"""The nightly refresh: ingest -> per benchmark (fanned out) matrix -> fit -> drift -> publish.

Run once now:  `sparseeval refresh`  (or `python -m flows.refresh`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.events import emit_event
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.transactions import transaction

from sparseeval import tasks
from sparseeval.pipeline import release
from sparseeval.pipeline.drift import same_data
from sparseeval.pipeline.recipe import NotEnoughModels, PipelineError
from sparseeval.pipeline.records import BenchmarkResult, FitInfo, GateResult, RunSummary
from sparseeval.pipeline.reports import run_report as runreport
from sparseeval.pipeline.settings import Settings

PROGRESS = logging.getLogger("sparseeval.progress")  # the CLI prints these lines


def say(message: str, level: int = logging.INFO) -> None:
    """One line for a person: to the run's log (the Prefect UI) and to the console."""
    get_run_logger().log(level, message)
    PROGRESS.log(level, message)


class GateRefused(Exception):
    """The candidate is worse than the live set: roll the unit of work back."""

    def __init__(self, gate: GateResult) -> None:
        super().__init__(gate.reason)
        self.gate = gate


class MirrorFailed(Exception):
    """The Hub mirror refused or failed: roll back, the live set stays live everywhere."""


def resolve_settings(
    home: str | None = None,
    n_anchors: int | list[int] | None = None,
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


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fit_run_name() -> str:
    return "fit " + ", ".join(flow_run.parameters.get("benchmarks") or [])


@flow(name="fit-benchmarks", flow_run_name=_fit_run_name)
def fit_benchmarks(
    store_path: str,
    benchmarks: list[str],
    store_states: dict[str, str],
    settings: dict[str, Any],
    artifacts_dir: str,
    force: bool = False,
) -> list[BenchmarkResult]:
    """Fan out: build each benchmark's matrix and fit each budget, concurrently.

    One result per benchmark and budget; `force` retrains even when a fit is cached.
    """
    budgets = Settings.load(path=None, env={}, **settings).budgets
    fit_task = (
        tasks.fit_benchmark.with_options(refresh_cache=True) if force else tasks.fit_benchmark
    )
    mats = {
        b: tasks.build_matrix.submit(store_path, b, store_states[b], artifacts_dir, settings)
        for b in benchmarks
    }
    fits = {
        (b, k): fit_task.submit(b, k, mats[b], settings | {"n_anchors": k}, artifacts_dir, force)
        for b in benchmarks
        for k in budgets
    }
    out = []
    for i, ((b, k), fit) in enumerate(fits.items(), 1):
        fit.wait()
        r = _collect(b, mats[b].state, fit.state, None if len(budgets) == 1 else k)
        say(f"[{i}/{len(fits)}] {r.label}: " + (r.error or (_fit_said(r) if r.fit else r.outcome)))
        if (
            r.error is None and r.fit is not None and not _files_exist(r)
        ):  # a cached result whose files are gone
            r = _rebuild(r, store_path, store_states[b], settings | {"n_anchors": k}, artifacts_dir)
        out.append(r)
    return out


def _fit_said(r: BenchmarkResult) -> str:
    test, fit = r.fit.test_metrics, r.fit
    how = "cached" if r.fit_cached else f"trained in {fit.seconds:.0f}s"
    return (
        f"{r.matrix.n_models:,} models x {r.matrix.n_items:,} items, {fit.n_anchors} anchors,"
        f" test MAE {test['mae']:.2f} points ({how})"
    )


def _collect(benchmark: str, matrix_state, fit_state, budget: int | None) -> BenchmarkResult:
    r = BenchmarkResult(benchmark, budget=budget)
    if not matrix_state.is_completed():
        return replace(r, error=f"matrix: {_error(matrix_state)}")
    r = replace(r, matrix=matrix_state.result(), matrix_cached=matrix_state.name == "Cached")
    if not fit_state.is_completed():
        exc = fit_state.result(raise_on_failure=False)
        if isinstance(exc, NotEnoughModels):  # a benchmark still filling up: wait, not fail
            return replace(r, fit_state="waiting", outcome=f"waiting for more models ({exc})")
        return replace(r, error=f"fit: {_error(fit_state)}")
    fit: FitInfo = fit_state.result()
    cached = fit_state.name == "Cached" or not fit.trained
    return replace(r, fit=fit, fit_cached=cached, fit_state=fit_state.name)


def _files_exist(r: BenchmarkResult) -> bool:
    return Path(r.matrix.path).is_file() and Path(r.fit.model_dir).is_dir()


def _rebuild(r: BenchmarkResult, store_path, state, settings, artifacts_dir) -> BenchmarkResult:
    """A cached result whose files were deleted: build them again."""
    get_run_logger().warning("%s: cached artifacts are missing; rebuilding them", r.label)
    matrix = tasks.build_matrix.with_options(refresh_cache=True)(
        store_path, r.benchmark, state, artifacts_dir, settings
    )
    fit = tasks.fit_benchmark.with_options(refresh_cache=True)(
        r.benchmark, settings["n_anchors"], matrix, settings, artifacts_dir
    )
    return replace(r, matrix=matrix, fit=fit, matrix_cached=False, fit_cached=False)


def _event(name: str, r: BenchmarkResult, payload: dict[str, Any]) -> None:
    emit_event(
        event=f"sparseeval.{name}",
        resource={"prefect.resource.id": f"sparseeval.benchmark.{r.benchmark}",
                  "prefect.resource.name": r.benchmark},
        payload={"budget": r.budget, **payload},
    )  # fmt: skip


def publish_unit(published_dir: str, r: BenchmarkResult, settings: dict) -> BenchmarkResult:
    """Write candidate -> quality gate -> mirror to the Hub -> swap `latest`, as one transaction.

    A refused gate, a failed mirror or any crash rolls back: the candidate folder is
    discarded (its tombstone keeps the reason) and the live version stays as it was.
    Refusals are outcomes; a crash propagates.
    """
    b, gate, hub_repo = r.benchmark, r.gate, settings.get("hub_repo")
    try:
        with transaction():
            cand = tasks.write_candidate(published_dir, b, r.fit, settings, r.budget)
            if not gate.accept:
                tasks.if_rolled_back(cand, f"refused by the quality gate: {gate.reason}")
                raise GateRefused(gate)
            sha = _mirror(cand, hub_repo, b) if hub_repo else None
            hub = f"; {hub_repo} already has v{cand.version} as latest ({sha})" if sha else ""
            tasks.if_rolled_back(cand, f"rolled back: promoting v{cand.version} failed{hub}")
            tasks.promote(published_dir, b, cand.version, r.budget)
    except GateRefused:
        name = release.set_name(b, r.budget)
        release.note_refusal(settings["artifacts_dir"], name, r.fit.key, gate.reason)
        _event("publish.refused", r, {"reason": gate.reason, **gate.figures})
        return replace(r, outcome=f"not published: candidate refused ({gate.reason})")
    except MirrorFailed as exc:
        return replace(r, outcome=f"not published: {exc}")
    where = f" and {hub_repo}@{sha[:12]}" if sha else ""
    _event("anchors.published", r, {
        "version": cand.version, "path": cand.path, "hub_commit": sha,
        "test_mae": r.fit.test_metrics["mae"], "gate": gate.to_dict(),
    })  # fmt: skip
    return replace(r, published_version=cand.version, published_path=cand.path, hub_commit=sha,
                   outcome=f"published v{cand.version} (local{where})")  # fmt: skip


def _mirror(cand, hub_repo: str, benchmark: str) -> str:
    """The Hub commit of the candidate; a failure rolls the unit back as `MirrorFailed`."""
    tasks.if_rolled_back(cand, f"rolled back: mirror to {hub_repo} failed")
    try:
        return tasks.mirror_to_hub(cand, hub_repo, benchmark)
    except Exception as exc:
        why = f"mirror to {hub_repo} failed ({type(exc).__name__}: {exc}); live set unchanged"
        raise MirrorFailed(why) from exc


def check_and_publish(
    store_path: str, published_dir: str, r: BenchmarkResult, settings: dict[str, Any],
    requested: str | None = None,
) -> BenchmarkResult:  # fmt: skip
    """Drift check of the live set on fresh models, then the publish unit when needed."""
    b = r.benchmark
    live = tasks.live_set(published_dir, b, settings["artifacts_dir"], r.budget)
    fresh = tasks.fresh_models(store_path, b, live) if live else []
    decision, gate = tasks.assess(published_dir, b, r.matrix, r.fit, live, fresh, settings,
                                  requested, r.budget)  # fmt: skip
    r = replace(r, live=live, decision=decision, gate=gate, n_fresh=len(fresh))
    if decision.drift:
        _event("drift.detected", r, {"reason": decision.reason, **decision.figures,
                                     "live_version": live and live.version})  # fmt: skip
    if not decision.publish:
        return replace(r, outcome=f"not published ({decision.reason})")
    if why := same_data(live, r.fit):
        return replace(r, outcome=f"not published ({why})")
    name = release.set_name(b, r.budget)
    if before := release.refused_before(settings["artifacts_dir"], name, r.fit.key):
        return replace(r, outcome=f"not published (this candidate was already refused: {before})")
    return publish_unit(published_dir, r, settings)


@flow(name="refresh", log_prints=True, flow_run_name=lambda: f"refresh {_stamp()}")
def refresh(
    sources: list[str] | None = None,
    benchmarks: list[str] | None = None,
    n_anchors: int | list[int] | None = None,
    settings_overrides: dict[str, Any] | None = None,
    home: str | None = None,
    fill_if_empty: bool = True,
    dask_processes: bool = True,
) -> RunSummary:
    """Refresh every benchmark (or the ones named) and publish where drift calls for it.

    sources: specs such as `results.parquet`, `wide:arc=arc.csv`, `inbox:DIR`,
    `lm-eval:GLOB`, `hub:v1:*` or `synthetic`; none -> the `sources` setting (the watched
    sources); none there and an empty store -> the built-in synthetic leaderboard.
    n_anchors: a budget or a list of budgets. settings_overrides: any `Settings` field.
    """
    started = datetime.now(UTC)
    settings = resolve_settings(home, n_anchors, settings_overrides)
    sd = settings.to_dict()
    store, arts = str(settings.store_path), str(settings.artifacts_dir)

    specs = list(sources or settings.sources)
    say(f"ingest: reading {len(specs)} source(s)" if specs else "ingest: no sources given")
    ingested = tasks.ingest(store, specs, fill_if_empty, settings.hub_max_repos)
    say(f"ingest: {ingested.line()} in {ingested.seconds:.1f}s")
    states = tasks.store_state(store)
    names = _benchmarks(benchmarks, states)
    sets = [*names, "suite"] if settings.suite else names  # a crashed suite step leaves one too
    if cleaned := tasks.clean_leftovers(str(settings.published_dir), sets):
        say(f"cleaned up {len(cleaned)} leftover(s) of interrupted runs", logging.WARNING)
    say(f"fit: {len(names)} benchmark(s) ({', '.join(names)}), {settings.workers} at a time")

    runner = task_runner_for(settings, dask_processes)
    fitted = fit_benchmarks.with_options(task_runner=runner)(
        store, names, {b: states[b] for b in names}, sd, arts
    )
    fitted = with_sibling_budgets(fitted)
    results = [_publish_step(store, str(settings.published_dir), r, sd) for r in fitted]
    suite = ""
    if settings.suite and set(names) != set(states):  # the suite reads every benchmark
        suite = f"suite: not refitted (this run covered {', '.join(names)}, not all benchmarks)"
        say(suite)
    elif settings.suite:
        suite = _suite_step(str(settings.published_dir), results, sd)
    run = RunSummary(started.isoformat(timespec="seconds"), type(runner).__name__, sd, ingested,
                     results, suite=suite)  # fmt: skip
    return finish(run, str(settings.reports_dir))


def _suite_step(published_dir: str, results: list[BenchmarkResult], sd: dict) -> str:
    """The suite over every benchmark that has a fit this run (at least two), or why not."""
    matrices = {r.benchmark: r.matrix for r in results if r.fit is not None and not r.error}
    if len(matrices) < 2:
        return ""
    say(f"suite: {', '.join(matrices)} read together")
    state = tasks.refresh_suite(published_dir, matrices, sd, return_state=True)
    line = state.result() if state.is_completed() else f"suite: failed ({_error(state)})"
    say(line, logging.INFO if state.is_completed() else logging.WARNING)
    return line


def with_sibling_budgets(results: list[BenchmarkResult]) -> list[BenchmarkResult]:
    """Each fit's budget table also shows SparseEval at the run's other budgets."""
    own = {(r.benchmark, r.budget): [row for row in r.fit.budget_rows
                                     if row["method"] == "sparseeval"]
           for r in results if r.fit and r.budget is not None}  # fmt: skip
    out = []
    for r in results:
        extra = [row for (b, k), rows in own.items() if b == r.benchmark and k != r.budget
                 for row in rows]  # fmt: skip
        if extra:
            r = replace(r, fit=replace(r.fit, budget_rows=[*r.fit.budget_rows, *extra]))
        out.append(r)
    return out


def _benchmarks(wanted: list[str] | None, states: dict[str, str]) -> list[str]:
    names = list(wanted or states)
    unknown = [b for b in names if b not in states]
    if unknown:
        raise ValueError(
            f"no results in the store for benchmark(s) {', '.join(unknown)}"
            f" (have: {', '.join(states) or 'none'})"
        )
    return names


def _publish_step(store: str, published_dir: str, r: BenchmarkResult, sd: dict) -> BenchmarkResult:
    """Log what the fit step did (so it shows in this run's logs), then drift and publish."""
    log = get_run_logger()
    if r.error:
        return replace(r, outcome=f"failed ({r.error})")
    if r.fit is None:
        return r
    log.info("matrix %s%s", r.matrix.summary, " (cached)" if r.matrix_cached else "")
    log.info(tasks.fit_line(r.fit) + (" (cached)" if r.fit_cached else ""))
    r = check_and_publish(store, published_dir, r, sd)
    say(f"{r.label}: {r.outcome}")
    return r


def finish(run: RunSummary, reports_dir: str) -> RunSummary:
    """Write the report and the run's Prefect artifacts, log the summary, fail on errors."""
    run = replace(run, report_path=tasks.write_report(reports_dir, run))
    publish_artifacts(run)
    get_run_logger().info(runreport.summary_line(run))
    if run.failed:
        raise PipelineError(
            f"refresh failed for {', '.join(run.failed)}; report at {run.report_path}"
        )
    return run


def publish_artifacts(run: RunSummary) -> None:
    """The run's Prefect artifacts: the Markdown report, a metrics table, published paths."""
    markdown = runreport.render_report(run)
    create_markdown_artifact(markdown, key="sparseeval-refresh-report", description="refresh")
    create_markdown_artifact(
        run.ingest.markdown(), key="sparseeval-ingest", description="what arrived, per source"
    )
    create_table_artifact(
        runreport.metrics_rows(run), key="sparseeval-metrics", description="test metrics"
    )
    published = [r for r in run.results if r.published_path]
    if published:
        create_markdown_artifact(
            "\n".join(f"- {r.label} v{r.published_version}: `{r.published_path}`"
                      for r in published),
            key="sparseeval-published", description="published anchor sets",
        )  # fmt: skip


if __name__ == "__main__":
    refresh()
