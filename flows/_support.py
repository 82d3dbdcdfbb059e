"""What the flows need besides the diagram: settings, task runners, logging, result records."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from prefect import get_run_logger
from prefect.events import emit_event
from prefect.runtime import deployment, flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from sparseeval.pipeline.lease import HomeLease
from sparseeval.pipeline.records import (
    BenchmarkResult,
    FitInfo,
    IngestSummary,
    MatrixInfo,
    Waiting,
)
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.store.watched import SETTLE_SECONDS

PROGRESS = logging.getLogger("sparseeval.progress")  # the CLI prints these lines


def say(message: str, level: int = logging.INFO) -> None:
    """One line for a person: to the run's log (the Prefect UI) and to the console."""
    get_run_logger().log(level, message)
    PROGRESS.log(level, message)


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


def error_of(state) -> str:
    """A failed state's exception as one line."""
    exc = state.result(raise_on_failure=False)
    return f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(state.message)


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def benchmarks_to_run(wanted: list[str] | None, states: dict[str, str]) -> list[str]:
    """The benchmarks named (all in the store when none); an unknown name is an error."""
    names = list(wanted or states)
    unknown = [b for b in names if b not in states]
    if unknown:
        raise ValueError(
            f"no results in the store for benchmark(s) {', '.join(unknown)}"
            f" (have: {', '.join(states) or 'none'})"
        )
    return names


def collect(benchmark: str, matrix_state, fit_state, budget: int | None) -> BenchmarkResult:
    """One benchmark's (and budget's) result from its matrix and fit task states."""
    r = BenchmarkResult(benchmark, budget=budget)
    if not matrix_state.is_completed():
        return replace(r, error=f"matrix: {error_of(matrix_state)}")
    matrix: MatrixInfo = matrix_state.result()
    r = replace(r, matrix=matrix, matrix_cached=matrix_state.name == "Cached" or not matrix.built)
    if not fit_state.is_completed():
        return replace(r, error=f"fit: {error_of(fit_state)}")
    fit: FitInfo | Waiting = fit_state.result()
    if isinstance(fit, Waiting):  # a benchmark still filling up: wait, not fail
        return replace(r, fit_state="waiting", outcome=f"waiting for more models ({fit.reason})")
    cached = fit_state.name == "Cached" or not fit.trained  # reused from artifacts on disk
    return replace(r, fit=fit, fit_cached=cached, fit_state="Cached" if cached else fit_state.name)


def fit_said(r: BenchmarkResult, budget: int | None = None) -> str:
    """What a fit came to, for the progress line; it says when `budget` (the anchors asked
    for) did not fit the items, and why `auto` left models out or fell back to items."""
    if r.error or r.fit is None:
        return r.error or r.outcome
    test, fit = r.fit.test_metrics, r.fit
    how = "cached" if r.fit_cached else f"trained in {fit.seconds:.0f}s"
    asked = budget and budget != fit.n_anchors
    capped = f" (of {budget} asked: one item at least stays out)" if asked else ""
    note = (r.matrix.target or {}).get("note")
    return (
        f"{r.matrix.n_models:,} models x {r.matrix.n_items:,} items, {fit.n_anchors}"
        f" anchors{capped}, test MAE {test['mae']:.2f} points ({how})"
        + (f"; target {note}" if note else "")
    )


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


def event(name: str, r: BenchmarkResult, payload: dict[str, Any]) -> None:
    """A Prefect event about one benchmark (`sparseeval.{name}`)."""
    emit_event(
        event=f"sparseeval.{name}",
        resource={"prefect.resource.id": f"sparseeval.benchmark.{r.benchmark}",
                  "prefect.resource.name": r.benchmark},
        payload={"budget": r.budget, **payload},
    )  # fmt: skip


NO_HOME = (
    "a deployed run needs SPARSEEVAL_HOME (set it, and SPARSEEVAL_CONFIG, in the shell that"
    " runs `prefect deploy`, or as the deployment's job variables): the worker's working"
    " directory never decides where state lives"
)
NO_SOURCES = (
    "nothing to refresh: no sources and an empty store; set `sources` in the settings file"
    " (SPARSEEVAL_CONFIG, or {home}/sparseeval.toml) or SPARSEEVAL_SOURCES, or pass sources"
)


def deployed(home: str | None) -> bool:
    """Whether this run belongs to a deployment (it then never fills the synthetic demo);
    such a run needs an explicit home, never the worker's working directory."""
    if deployment.get_id() is None:
        return False
    if not (home or os.environ.get("SPARSEEVAL_HOME", "").strip()):
        raise ValueError(NO_HOME)
    return True


def nothing_yet(states: dict[str, str], ingested: IngestSummary, specs: list[str]) -> str:
    """Why there is nothing to fit yet, when that is no failure ("" otherwise): the store is
    empty and its sources' files are still being written, or brought nothing yet (a
    Completed run that says so). An empty store after a failed unit is that unit's failure."""
    if states or ingested.failed:
        return ""
    if waiting := [u for row in ingested.sources for u in row.get("waiting", [])]:
        more = f" and {len(waiting) - 1} more" if len(waiting) > 1 else ""
        return (f"waiting: {waiting[0]}{more} still being written (read once unchanged for"
                f" {SETTLE_SECONDS:g}s); nothing to fit yet")  # fmt: skip
    if specs:
        return f"waiting: no results yet from {', '.join(specs)}; nothing to fit yet"
    return ""


def check_not_empty(ingested: IngestSummary, settings: Settings) -> None:
    """An empty store after ingest (no sources, no demo fill) is a failed run, in one line;
    one where a unit failed fails as that unit's failure (the flow says it)."""
    if not ingested.failed:
        raise ValueError(NO_SOURCES.format(home=settings.home))


@contextlib.contextmanager
def hold_home(settings: Settings) -> Iterator[None]:
    """One run per home: hold its lease (`pipeline.lease`) while the run works."""
    holder = f"{flow_run.get_name() or 'refresh'} (flow run {flow_run.get_id()})"
    lease = HomeLease(settings.home, holder, wait=settings.lease_wait_seconds)
    try:
        lease.acquire()
    except (FileExistsError, NotADirectoryError) as exc:
        raise ValueError(f"home {settings.home} is not a folder ({exc.strerror})") from None
    if lease.took_over is not None:
        say(f"took over the lease of a crashed run: {lease.took_over.get('holder')}",
            logging.WARNING)  # fmt: skip
    try:
        yield
    finally:
        lease.release()
