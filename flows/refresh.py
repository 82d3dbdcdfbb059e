"""The nightly refresh: ingest -> per benchmark matrix -> fit -> assess -> publish -> suite
-> report.

Run once now:  `sparseeval refresh`  (or `python -m sparseeval.flows.refresh`).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Completed, State
from sparseeval.flows._home import (
    check_no_demo,
    check_not_empty,
    deployed,
    hold_home,
    nothing_yet,
)
from sparseeval.flows._results import (
    benchmarks_to_run,
    collect,
    event,
    fit_said,
    with_sibling_budgets,
)
from sparseeval.flows._run import (
    alert_on_failure,
    counting_dropped_events,
    crashed_run_parameters,
    resolve_settings,
    run_name,
    say,
    task_runner_for,
)
from sparseeval.flows.publish import (
    alert_persistent_drift,
    point_default,
    publish_benchmark,
    publish_suite,
)

from sparseeval import tasks
from sparseeval.pipeline.artifacts import artifact_path, forget_loaded
from sparseeval.pipeline.lease import guarding_stops
from sparseeval.pipeline.recipe import NothingRan, PipelineError
from sparseeval.pipeline.records import BenchmarkResult, RunSummary
from sparseeval.pipeline.settings import Settings


def _batch(batch: str) -> tuple[list[str], dict[str, str]]:
    """The names and store states of a batch file (`fit_batch`)."""
    data = json.loads(Path(batch).read_text())
    return data["names"], data["states"]


def _batch_name(batch: object) -> str:
    try:
        names = _batch(str(batch))[0]
    except (OSError, ValueError, KeyError):  # a run shown after its batch was removed
        names = []
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return "fit " + ", ".join(names[:3]) + more


@flow(name="fit-benchmarks",
      flow_run_name=lambda: _batch_name(flow_run.parameters.get("batch")))  # fmt: skip
def fit_benchmarks(settings: Settings, batch: str, force: bool = False) -> list[BenchmarkResult]:
    """Fan out: build each benchmark's matrix and fit each budget, concurrently (the
    benchmarks and their store states: the batch file, see `fit_batch`)."""
    with guarding_stops():  # a SIGTERM ends the run in seconds, not once the fits end
        return _fit_each(settings, batch, force)


def _fit_each(settings: Settings, batch: str, force: bool) -> list[BenchmarkResult]:
    benchmarks, store_states = _batch(batch)
    mats = {b: tasks.build_matrix.submit(settings.paths, settings.matrix, b, store_states[b])
            for b in benchmarks}  # fmt: skip
    fits = {(b, k): tasks.fit_benchmark.submit(settings, mats[b], k, force)
            for b in benchmarks for k in settings.selection.budgets}  # fmt: skip
    out = []
    for i, ((b, k), state) in enumerate(fits.items(), 1):
        state.wait()  # the final states with their data (nothing is in result storage)
        mats[b].wait()
        r = collect(
            b, mats[b].state, state.state, None if len(settings.selection.budgets) == 1 else k
        )
        say(f"[{i}/{len(fits)}] {r.label}: {fit_said(r, k, settings.selection.max_anchor_share)}")
        out.append(r)
    return out


def fit_batch(
    settings: Settings,
    names: list[str],
    states: dict[str, str],
    force: bool = False,
    runner: Any = None,
) -> list[BenchmarkResult]:
    """`fit_benchmarks` of `names`, passed by reference: a batch file under
    `artifacts/batches/` (Prefect refuses flow parameters over 512 KiB, which thousands of
    benchmarks with their store states passed by value would pass), removed afterwards."""
    path = artifact_path(settings.paths.artifacts_dir, "batches", f"{uuid.uuid4().hex}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"names": list(names), "states": {b: states[b] for b in names}}))
    run = fit_benchmarks.with_options(task_runner=runner) if runner is not None else fit_benchmarks
    try:
        return run(settings, str(path), force)
    finally:
        path.unlink(missing_ok=True)


def assess_and_publish(
    settings: Settings, r: BenchmarkResult, requested: str | None = None, one_off: bool = False
) -> BenchmarkResult:
    """Drift of the live set on fresh models, then the publish unit when it calls for one.
    `one_off`: a budget given for this run only, which never moves an existing default."""
    live = tasks.live_set(settings.paths, r.benchmark, r.budget)
    fresh = tasks.fresh_models(settings.paths, r.benchmark, live)
    decision, gate = tasks.assess(settings, r.matrix, r.fit, live, fresh, requested, r.budget)
    r = replace(r, live=live, decision=decision, gate=gate, n_fresh=len(fresh))
    if decision.drift:
        event("drift.detected", r, {"reason": decision.reason, **decision.figures,
                                    "live_version": live and live.version})  # fmt: skip
    if gate is None:
        r = replace(r, outcome=f"not published ({decision.reason})")
    else:
        r = publish_benchmark(settings, r)
    point_default(settings, r, replace=not one_off)
    alert_persistent_drift(settings, r)
    return r


@flow(name="refresh", log_prints=True, flow_run_name=lambda: run_name("refresh"))
def refresh(
    sources: list[str] | None = None,
    benchmarks: list[str] | None = None,
    n_anchors: int | list[int] | None = None,
    settings_overrides: dict[str, Any] | None = None,
    home: str | None = None,
    fill_if_empty: bool = True,
    dask_processes: bool = True,
    rerun_of: str | None = None,
) -> RunSummary:
    """Refresh every benchmark (or the ones named) and publish where drift calls for it.

    sources: specs such as `results.parquet`, `wide:arc=arc.csv`, `inbox:DIR`,
    `lm-eval:GLOB`, `hub:v1:*` or `synthetic`; none -> the `sources` setting (the watched
    sources); none there and an empty store -> the built-in synthetic leaderboard (never
    in a deployment: there an empty store fails the run, saying how to set sources).
    One run per home at a time (a lease; the second waits `lease_wait_seconds`, then
    refuses naming the holder).
    n_anchors: a budget or a list of budgets. settings_overrides: any `Settings` field.
    rerun_of: set by the rerun automation (the crashed run's id); such a run does the crashed
    run's work, with its parameters, and is never rerun.
    """
    if rerun_of:
        own = {"sources": sources, "benchmarks": benchmarks, "n_anchors": n_anchors,
               "settings_overrides": settings_overrides, "home": home,
               "fill_if_empty": fill_if_empty, "dask_processes": dask_processes}  # fmt: skip
        return refresh.fn(**own | crashed_run_parameters(rerun_of, tuple(own)))
    settings = resolve_settings(home, n_anchors, settings_overrides)
    in_deployment = deployed(home)
    with alert_on_failure(settings, in_deployment):
        return night(settings, sources, benchmarks, in_deployment, fill_if_empty, dask_processes)


def night(
    settings: Settings, sources: list[str] | None, benchmarks: list[str] | None,
    in_deployment: bool, fill_if_empty: bool, dask_processes: bool,
) -> RunSummary | State:  # fmt: skip
    """The refresh's work on its home; a deployed run that finds the home held by another
    run is a skipped (Completed) run: one schedule per home, and the loser never pages."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    fill = not in_deployment and fill_if_empty  # a deployment never fills the demo
    specs = list(sources or settings.sources.sources)
    if in_deployment:
        check_no_demo(specs, settings)
    with (
        hold_home(settings, skip_if_held=in_deployment) as skipped,
        counting_dropped_events() as dropped,
    ):
        if skipped:
            say(skipped, logging.WARNING)
            return Completed(message=skipped)
        none = "ingest: no --source given and no `sources` setting"
        say(f"ingest: reading {len(specs)} source(s)" if specs else none)
        paths = settings.paths
        ingested = tasks.ingest(paths, settings.sources, specs, fill)
        say(f"ingest: {ingested.line()} in {ingested.seconds:.1f}s")
        states = tasks.store_state(paths)
        results, suite, runner = [], "", ""
        if waiting := nothing_yet(states, ingested, specs):
            say(waiting)
        elif names := benchmarks_to_run(benchmarks, states):
            results, suite, runner = fit_and_publish(settings, names, states, dask_processes)
        else:
            check_not_empty(ingested, settings)
        run = RunSummary(started, runner, settings.to_dict(), ingested, results, suite=suite,
                         waiting=waiting, dropped_events=dropped.settled())  # fmt: skip
        if run.dropped_events:
            say(run.dropped_line(), logging.WARNING)
        run = tasks.report(paths, run)
    if run.failed:
        raise failed_run(run)
    return run


def failed_run(run: RunSummary) -> PipelineError:
    """The error of a run where something failed: what failed first, why, how many more, the
    report; it carries the run (`.run`) so that `--json` still prints the summary."""
    error = NothingRan if run.status == "failed" else PipelineError
    exc = error(f"refresh failed for {', '.join(run.failed)}: {run.failure_line()};"
                f" report at {run.report_path}")  # fmt: skip
    exc.run = run  # type: ignore[attr-defined]
    return exc


def fit_and_publish(
    settings: Settings, names: list[str], states: dict[str, str], dask_processes: bool
) -> tuple[list[BenchmarkResult], str, str]:
    """Clean leftovers, fit the benchmarks, assess and publish each, then the suite."""
    sets = (
        [*names, "suite"] if settings.drift.suite else names
    )  # a crashed suite step leaves one too
    if cleaned := tasks.clean_leftovers(settings.paths, sets):
        say(f"cleaned up {len(cleaned)} leftover(s) of interrupted runs", logging.WARNING)
    say(f"fit: {len(names)} benchmark(s) ({', '.join(names)}), {settings.runner.workers} at a time")
    runner = task_runner_for(settings, dask_processes)
    try:
        fitted = fit_batch(settings, names, states, runner=runner)
        results = [publish_step(settings, r) for r in with_sibling_budgets(fitted)]
        suite = suite_step(settings, results, left_out=sorted(set(states) - set(names)))
    finally:
        forget_loaded()  # the matrices and models this run read
    return results, suite, type(runner).__name__


def publish_step(settings: Settings, r: BenchmarkResult) -> BenchmarkResult:
    """A fitted benchmark through assess and publish (a failed or waiting one as it is)."""
    if r.error:
        return replace(r, outcome=f"failed ({r.error})")
    if r.fit is None:
        return r
    r = assess_and_publish(settings, r)
    say(f"{r.label}: {r.outcome}")
    return r


def suite_step(settings: Settings, results: list[BenchmarkResult], left_out: list[str]) -> str:
    """The suite over every benchmark fitted this run (at least two), or why not."""
    if not settings.drift.suite:
        return ""
    if left_out:  # the suite reads every benchmark
        ran = ", ".join(dict.fromkeys(r.benchmark for r in results))
        say(line := f"suite: not refitted (this run covered {ran}, not all benchmarks)")
        return line
    matrices = {r.benchmark: r.matrix for r in results if r.fit is not None and not r.error}
    if len(matrices) < 2:
        return ""
    try:
        line = publish_suite(settings, matrices)
    except Exception as exc:
        line = f"suite: failed ({type(exc).__name__}: {exc})"
        say(line, logging.WARNING)
        return line
    say(line)
    return line


if __name__ == "__main__":
    refresh()


__all__ = [
    "assess_and_publish",
    "failed_run",
    "fit_and_publish",
    "fit_batch",
    "fit_benchmarks",
    "night",
    "publish_step",
    "refresh",
    "suite_step",
]
