"""The nightly refresh: ingest -> per benchmark (fanned out) matrix -> fit -> drift -> publish.

Run once now:  `sparseeval refresh`  (or `python -m flows.refresh`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.events import emit_event
from prefect.futures import PrefectFuture
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.transactions import transaction

import tasks
from sparseeval import pipeline
from sparseeval.settings import Settings


class GateRefused(Exception):
    """The candidate is worse than the live set: roll the unit of work back."""

    def __init__(self, gate: dict[str, Any]) -> None:
        super().__init__(gate.get("reason", "refused"))
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
) -> dict[str, dict[str, Any]]:
    """Fan out: build each benchmark's matrix and fit it, concurrently (threads or Dask)."""
    mats: dict[str, PrefectFuture] = {
        b: tasks.build_matrix.submit(store_path, b, store_states[b], artifacts_dir, settings)
        for b in benchmarks
    }
    fits = {b: tasks.fit_benchmark.submit(b, mats[b], settings, artifacts_dir) for b in benchmarks}
    out: dict[str, dict[str, Any]] = {}
    for b in benchmarks:
        fits[b].wait()
        ms, fs = mats[b].state, fits[b].state
        r: dict[str, Any] = {"benchmark": b}
        if not ms.is_completed():
            r["error"] = f"matrix: {_error(ms)}"
        else:
            r["matrix"] = ms.result()
            r["matrix_cached"] = ms.name == "Cached"
            r["fit_state"] = fs.name
            if fs.is_completed():
                r["fit"] = fs.result()
                r["fit_cached"] = fs.name == "Cached" or not r["fit"].get("trained", True)
                if not _files_exist(r):  # a cached result whose files were deleted
                    r |= _rebuild(store_path, b, store_states[b], settings, artifacts_dir)
            else:
                r["error"] = f"fit: {_error(fs)}"
        out[b] = r
    return out


def _files_exist(r: dict[str, Any]) -> bool:
    return Path(r["matrix"]["path"]).is_file() and Path(r["fit"]["model_dir"]).is_dir()


def _rebuild(store_path, b, state, settings, artifacts_dir) -> dict[str, Any]:
    get_run_logger().warning("%s: cached artifacts are missing; rebuilding them", b)
    matrix = tasks.build_matrix.with_options(refresh_cache=True)(
        store_path, b, state, artifacts_dir, settings
    )
    fit = tasks.fit_benchmark.with_options(refresh_cache=True)(b, matrix, settings, artifacts_dir)
    return {"matrix": matrix, "fit": fit, "matrix_cached": False, "fit_cached": False}


def publish_unit(
    published_dir: str,
    benchmark: str,
    fit: dict[str, Any],
    fresh: list[str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """Write candidate -> quality gate -> swap `latest`, as one Prefect transaction.

    A refused gate or any crash rolls back: the candidate folder is discarded and the
    live version stays as it was. A refusal is an outcome; a crash propagates.
    """
    try:
        with transaction():
            cand = tasks.write_candidate(published_dir, benchmark, fit, settings)
            gate = tasks.quality_gate(published_dir, benchmark, fit, fresh)
            if not gate["accept"]:
                raise GateRefused(gate)
            tasks.promote(published_dir, benchmark, cand["version"])
    except GateRefused as refused:
        return {"gate": refused.gate, "outcome": f"not published ({refused.gate['reason']})"}
    emit_event(
        event="sparseeval.anchors.published",
        resource={"prefect.resource.id": f"sparseeval.benchmark.{benchmark}",
                  "prefect.resource.name": benchmark},
        payload={"version": cand["version"], "path": cand["path"],
                 "test_mae": fit["test_metrics"]["mae"], "gate": gate},
    )  # fmt: skip
    return {
        "gate": gate,
        "published_version": cand["version"],
        "published_path": cand["path"],
        "outcome": f"published v{cand['version']}",
    }


def check_and_publish(
    store_path: str, published_dir: str, r: dict[str, Any], settings: dict[str, Any]
) -> dict[str, Any]:
    """Drift check of the live set on fresh models, then the publish unit when needed."""
    b, fit = r["benchmark"], r["fit"]
    live = tasks.published_info(published_dir, b, settings["artifacts_dir"])
    fresh = tasks.fresh_models(store_path, b, live) if live else []
    decision = tasks.check_drift(published_dir, b, r["matrix"], live, fresh, settings)
    r = r | {"live": live, "decision": decision, "n_fresh": len(fresh)}
    if decision["drift"]:
        emit_event(
            event="sparseeval.drift.detected",
            resource={"prefect.resource.id": f"sparseeval.benchmark.{b}",
                      "prefect.resource.name": b},
            payload={"reason": decision["reason"], **decision["figures"],
                     "live_version": live and live["version"]},
        )  # fmt: skip
    if not decision["publish"]:
        return r | {"outcome": "not published (no drift)"}
    if live and live.get("data_fingerprint") == fit["matrix_fingerprint"]:
        return r | {"outcome": f"not published (live v{live['version']} was fit on this data)"}
    return r | publish_unit(published_dir, b, fit, fresh, settings)


@flow(name="refresh", log_prints=True)
def refresh(
    sources: list[str] | None = None,
    benchmarks: list[str] | None = None,
    n_anchors: int | None = None,
    settings_overrides: dict[str, Any] | None = None,
    home: str | None = None,
    fill_if_empty: bool = True,
    dask_processes: bool = True,
) -> dict[str, Any]:
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
    pub, reports = str(settings.published_dir), str(settings.reports_dir)

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
        if "error" in r:
            log.error("%s: %s", b, r["error"])
            results.append(r | {"outcome": f"failed ({r['error']})"})
            continue
        results.append(check_and_publish(store, pub, r, sd))

    run = {
        "started": started.isoformat(timespec="seconds"),
        "task_runner": type(runner).__name__,
        "settings": sd,
        "ingest": ingested,
        "results": results,
        "n_trained": sum(1 for r in results if r.get("fit") and not r.get("fit_cached")),
        "n_cached": sum(1 for r in results if r.get("fit_cached")),
        "n_published": sum(1 for r in results if r.get("published_version")),
        "failed": [r["benchmark"] for r in results if "error" in r],
    }
    run["report_path"] = tasks.write_report(reports, run)
    markdown = pipeline.render_report(run)
    create_markdown_artifact(markdown, key="sparseeval-refresh-report", description="refresh")
    create_table_artifact(
        pipeline.metrics_rows(results), key="sparseeval-metrics", description="test metrics"
    )
    published = [r for r in results if r.get("published_path")]
    if published:
        create_markdown_artifact(
            "\n".join(f"- {r['benchmark']} v{r['published_version']}: `{r['published_path']}`"
                      for r in published),
            key="sparseeval-published", description="published anchor sets",
        )  # fmt: skip
    log.info(summary_line(run))
    if run["failed"]:
        raise pipeline.PipelineError(
            f"refresh failed for {', '.join(run['failed'])}; report at {run['report_path']}"
        )
    return run


def summary_line(run: dict[str, Any]) -> str:
    n = len(run["results"])
    if run["n_trained"] == 0 and run["n_published"] == 0:
        head = f"everything was cached ({n} benchmarks): nothing trained, nothing published"
    else:
        head = (
            f"{n} benchmarks: trained {run['n_trained']}, cached {run['n_cached']},"
            f" published {run['n_published']}"
        )
    return f"{head}; report: {run['report_path']}"


if __name__ == "__main__":
    refresh()
