"""Thin Prefect tasks over `sparseeval.pipeline`: no algorithm code lives here.

Expensive tasks cache on content: the cache key is the fingerprint of their inputs
(store content signature or matrix fingerprint) plus the settings that matter plus the
code version; results are persisted to the Prefect result storage
(`PREFECT_RESULTS_LOCAL_STORAGE_PATH`), and big data stays in `artifacts/{kind}/{key}`.
"""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext
from prefect.transactions import Transaction, get_transaction

from sparseeval import pipeline
from sparseeval.settings import Settings


def settings_from(d: dict[str, Any]) -> Settings:
    """Rebuild the settings object from the JSON-ready dict that tasks are given."""
    return Settings.load(path=None, env={}, **d)


def _matrix_cache_key(ctx: TaskRunContext, p: dict[str, Any]) -> str:
    return pipeline.matrix_key(p["benchmark"], p["store_state"], settings_from(p["settings"]))


def _fit_cache_key(ctx: TaskRunContext, p: dict[str, Any]) -> str:
    return pipeline.fit_key(p["matrix"]["fingerprint"], settings_from(p["settings"]))


_NETWORK_MODULES = {"huggingface_hub", "httpx", "httpcore", "requests", "urllib3"}


def _transient(task, task_run, state) -> bool:
    """Retry network and lock trouble; a bad file or setting fails at once."""
    exc = state.result(raise_on_failure=False)
    from sparseeval.store import SourceError, StoreLockedError

    if isinstance(exc, StoreLockedError):
        return True
    if any(c.__module__.split(".")[0] in _NETWORK_MODULES for c in type(exc).__mro__):
        return True
    return isinstance(exc, OSError | ConnectionError | TimeoutError) and not isinstance(
        exc, SourceError | FileNotFoundError
    )


@task(
    name="ingest",
    retries=3,
    retry_delay_seconds=[10, 60, 300],
    retry_jitter_factor=0.2,
    retry_condition_fn=_transient,
    cache_policy=NO_CACHE,
)
def ingest(store_path: str, sources: list[str], fill_if_empty: bool = True) -> dict[str, Any]:
    """Ingest new results (network-bound for Hub sources: retried with backoff)."""
    out = pipeline.ingest_sources(store_path, sources, fill_if_empty=fill_if_empty)
    log = get_run_logger()
    if out["filled_with_synthetic"]:
        log.info("empty store: filled it from the built-in synthetic leaderboard")
    log.info(
        "ingest: %d unit(s), %d already ingested, %s new results, %d quarantined in %.1fs",
        out["units"], out["skipped"], f"{out['new']:,}", out["quarantined"], out["seconds"],
    )  # fmt: skip
    return out


@task(name="store-state", cache_policy=NO_CACHE)
def store_state(store_path: str) -> dict[str, str]:
    """A content signature per benchmark (changes whenever its results change)."""
    return pipeline.benchmark_states(store_path)


@task(
    name="build-matrix",
    cache_key_fn=_matrix_cache_key,
    persist_result=True,
    task_run_name="build-matrix-{benchmark}",
)
def build_matrix(
    store_path: str, benchmark: str, store_state: str, artifacts_dir: str, settings: dict
) -> dict[str, Any]:
    """The benchmark's ±1 matrix as `artifacts/matrix/{fingerprint}.npz`."""
    out = pipeline.build_matrix_artifact(
        store_path, benchmark, artifacts_dir, settings_from(settings)
    )
    get_run_logger().info("matrix %s", out["summary"])
    return out


@task(
    name="fit-benchmark",
    cache_key_fn=_fit_cache_key,
    persist_result=True,
    task_run_name="fit-{benchmark}",
)
def fit_benchmark(
    benchmark: str, matrix: dict[str, Any], settings: dict, artifacts_dir: str
) -> dict[str, Any]:
    """Split -> adaptive init -> AIS/CIS refinement -> final predictor -> test metrics."""
    log = get_run_logger()
    out = pipeline.fit_benchmark(
        matrix,
        settings_from(settings),
        artifacts_dir,
        progress=lambda m: log.info("%s: %s", benchmark, m),
    )
    test = out["test_metrics"]
    log.info(
        "%s: %s %d anchors, test MAE %.3f points, Kendall tau %.3f (%s in %.0fs)",
        benchmark, out["predictor"], out["n_anchors"], test["mae"], test["kendall_tau"],
        "trained" if out["trained"] else "reused artifact", out["seconds"],
    )  # fmt: skip
    return out


@task(name="published-info", cache_policy=NO_CACHE)
def published_info(
    published_dir: str, benchmark: str, artifacts_dir: str | None = None
) -> dict[str, Any] | None:
    return pipeline.published_info(published_dir, benchmark, artifacts_dir)


@task(name="fresh-models", cache_policy=NO_CACHE)
def fresh_models(store_path: str, benchmark: str, live: dict[str, Any]) -> list[str]:
    """Models that arrived after the live set's data was read (they have full results)."""
    return pipeline.fresh_models(store_path, benchmark, live)


@task(name="check-drift", cache_policy=NO_CACHE, task_run_name="check-drift-{benchmark}")
def check_drift(
    published_dir: str,
    benchmark: str,
    matrix: dict[str, Any],
    published: dict[str, Any] | None,
    fresh: list[str],
    settings: dict,
) -> dict[str, Any]:
    """Score the live set on models that arrived since it was published; decide."""
    figures = {}
    if published is not None and fresh:
        figures = pipeline.drift_figures(published_dir, benchmark, matrix["path"], fresh)
        pipeline.record_drift(settings["artifacts_dir"], benchmark, published, figures)
    decision = pipeline.drift_decision(benchmark, published, figures, settings_from(settings))
    get_run_logger().info("%s: %s", benchmark, decision.reason)
    return decision.to_dict()


@task(name="write-candidate", cache_policy=NO_CACHE, task_run_name="write-candidate-{benchmark}")
def write_candidate(
    published_dir: str, benchmark: str, fit: dict[str, Any], settings: dict
) -> dict[str, Any]:
    """Write the new version's folder (not live yet); rolled back if the unit of work fails."""
    out = pipeline.write_candidate(published_dir, benchmark, fit, settings_from(settings))
    get_transaction().set("candidate", out)
    get_run_logger().info("%s: wrote candidate v%s at %s", benchmark, out["version"], out["path"])
    return out


@write_candidate.on_rollback
def _discard_candidate(txn: Transaction) -> None:
    cand = txn.get("candidate", None)
    if cand:
        pipeline.discard(cand["published_dir"], cand["benchmark"], cand["version"])


@task(name="quality-gate", cache_policy=NO_CACHE, task_run_name="quality-gate-{benchmark}")
def quality_gate(
    published_dir: str, benchmark: str, fit: dict[str, Any], fresh: list[str]
) -> dict[str, Any]:
    """Live set vs candidate on the same held-out models; never publish a worse set."""
    out = pipeline.compare_candidate(published_dir, benchmark, fit, fresh)
    get_run_logger().info("%s: gate %s", benchmark, out["reason"])
    return out


@task(name="promote", cache_policy=NO_CACHE, task_run_name="promote-{benchmark}")
def promote(published_dir: str, benchmark: str, version: int) -> None:
    """Swap the `latest` pointer to the new version (atomically)."""
    pipeline.promote(published_dir, benchmark, version)
    get_run_logger().info("%s: v%s is now the live anchor set", benchmark, version)


@task(name="evaluate-published", cache_policy=NO_CACHE)
def evaluate_published(
    published_dir: str, benchmark: str, matrix: dict[str, Any], model_ids: list[str] | None,
    version: str | int = "latest",
) -> dict[str, Any]:  # fmt: skip
    return pipeline.evaluate_published_set(
        published_dir, benchmark, matrix["path"], model_ids, version
    )


@task(name="write-report", cache_policy=NO_CACHE)
def write_report(reports_dir: str, run: dict[str, Any]) -> str:
    return str(pipeline.write_report(reports_dir, pipeline.render_report(run)))


__all__ = [
    "build_matrix",
    "check_drift",
    "evaluate_published",
    "fit_benchmark",
    "fresh_models",
    "ingest",
    "promote",
    "published_info",
    "quality_gate",
    "settings_from",
    "store_state",
    "write_candidate",
    "write_report",
]
