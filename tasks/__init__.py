"""Thin Prefect tasks over the `sparseeval` library: no algorithm code lives here.

Expensive tasks cache on content: the cache key is the fingerprint of their inputs
(store content signature or matrix fingerprint) plus the settings that matter plus the
code version; results are persisted to the Prefect result storage
(`PREFECT_RESULTS_LOCAL_STORAGE_PATH`), and big data stays in `artifacts/{kind}/{key}`.
Tasks take and return small typed records (`sparseeval.pipeline.records`).
"""

from __future__ import annotations

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext
from prefect.transactions import Transaction, get_transaction

from sparseeval.consume import hub as hub_mirror
from sparseeval.pipeline import drift, recipe, release, sources, suite_recipe, versions
from sparseeval.pipeline.artifacts import fit_key, matrix_key
from sparseeval.pipeline.records import (
    Candidate,
    DriftDecision,
    FitInfo,
    GateResult,
    IngestSummary,
    LiveSet,
    MatrixInfo,
    RunSummary,
)
from sparseeval.pipeline.reports import run_report as runreport
from sparseeval.pipeline.settings import Settings


def settings_from(d: dict[str, Any]) -> Settings:
    """Rebuild the settings object from the JSON-ready dict that tasks are given."""
    return Settings.load(path=None, env={}, **d)


def _matrix_cache_key(ctx: TaskRunContext, p: dict[str, Any]) -> str:
    return matrix_key(p["benchmark"], p["store_state"], settings_from(p["settings"]))


def _fit_cache_key(ctx: TaskRunContext, p: dict[str, Any]) -> str:
    return fit_key(p["matrix"].fingerprint, settings_from(p["settings"]))


_NETWORK_MODULES = {"huggingface_hub", "httpx", "httpcore", "requests", "urllib3"}


def _transient(task, task_run, state) -> bool:
    """Retry network and lock trouble; a bad file or setting fails at once."""
    exc = state.result(raise_on_failure=False)
    from sparseeval.pipeline.store import SourceError, StoreLockedError

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
def ingest(
    store_path: str, specs: list[str], fill_if_empty: bool = True, hub_max_repos: int = 200
) -> IngestSummary:
    """Ingest new results; each source's failure is a row of the summary, not an error.

    Hub calls retry 429 / 5xx themselves (honouring Retry-After); a locked store retries here.
    """
    out = sources.ingest_sources(store_path, specs, fill_if_empty, hub_max_repos)
    log = get_run_logger()
    if out.filled_with_synthetic:
        log.info("empty store: filled it from the built-in synthetic leaderboard")
    log.info("ingest: %s in %.1fs", out.line(), out.seconds)
    return out


@task(name="store-state", cache_policy=NO_CACHE)
def store_state(store_path: str) -> dict[str, str]:
    """A content signature per benchmark (changes whenever its results change)."""
    return recipe.benchmark_states(store_path)


@task(
    name="build-matrix",
    cache_key_fn=_matrix_cache_key,
    persist_result=True,
    task_run_name="build-matrix-{benchmark}",
)
def build_matrix(
    store_path: str, benchmark: str, store_state: str, artifacts_dir: str, settings: dict
) -> MatrixInfo:
    """The benchmark's ±1 matrix as `artifacts/matrix/{fingerprint}.npz`."""
    out = recipe.matrix_step(store_path, benchmark, artifacts_dir, settings_from(settings))
    get_run_logger().info("matrix %s", out.summary)
    return out


@task(
    name="fit-benchmark",
    cache_key_fn=_fit_cache_key,
    persist_result=True,
    task_run_name="fit-{benchmark}-k{budget}",
)
def fit_benchmark(
    benchmark: str, budget: int, matrix: MatrixInfo, settings: dict, artifacts_dir: str,
    force: bool = False,
) -> FitInfo:  # fmt: skip
    """Split -> adaptive init -> AIS/CIS refinement -> final predictor -> test metrics.

    settings["n_anchors"] is the budget; `force` retrains even when the artifact exists.
    """
    log = get_run_logger()
    say = lambda m: log.info("%s k%d: %s", benchmark, budget, m)  # noqa: E731
    out = recipe.fit_step(matrix, settings_from(settings), artifacts_dir, say, force)
    log.info(fit_line(out))
    return out


def fit_line(fit: FitInfo) -> str:
    """`arc: nnridge 100 anchors, test MAE 1.234 points, Kendall tau 0.912 (trained in 12s)`."""
    test = fit.test_metrics
    how = "trained" if fit.trained else "reused artifact"
    return (
        f"{fit.benchmark}: {fit.predictor} {fit.n_anchors} anchors, test MAE {test['mae']:.3f}"
        f" points, Kendall tau {test['kendall_tau']:.3f} ({how} in {fit.seconds:.0f}s)"
    )


@task(name="live-set", cache_policy=NO_CACHE, task_run_name="live-set-{benchmark}")
def live_set(
    published_dir: str, benchmark: str, artifacts_dir: str, budget: int | None = None
) -> LiveSet | None:
    """The live published version (and what it was built from), or None."""
    return release.live_set(published_dir, benchmark, artifacts_dir, budget)


@task(name="fresh-models", cache_policy=NO_CACHE, task_run_name="fresh-models-{benchmark}")
def fresh_models(store_path: str, benchmark: str, live: LiveSet) -> list[str]:
    """Models that arrived after the live set's data was read (they have full results)."""
    return drift.fresh_models(store_path, benchmark, live)


@task(name="assess", cache_policy=NO_CACHE, task_run_name="assess-{benchmark}")
def assess(
    published_dir: str,
    benchmark: str,
    matrix: MatrixInfo,
    fit: FitInfo,
    live: LiveSet | None,
    fresh: list[str],
    settings: dict,
    requested: str | None = None,
    budget: int | None = None,
) -> tuple[DriftDecision, GateResult | None]:
    """Drift of the live set on new models; the candidate's gate when it may be published."""
    decision, gate = drift.assess(
        published_dir, matrix, fit, live, fresh, settings_from(settings), requested, budget
    )
    log = get_run_logger()
    log.info("%s: %s", benchmark, decision.reason)
    if gate is not None:
        log.info("%s: gate %s", benchmark, gate.reason)
    return decision, gate


@task(name="write-candidate", cache_policy=NO_CACHE, task_run_name="write-candidate-{benchmark}")
def write_candidate(
    published_dir: str, benchmark: str, fit: FitInfo, settings: dict, budget: int | None = None
) -> Candidate:
    """Write the new version's folder (not live yet); rolled back if the unit of work fails."""
    s = settings_from(settings)
    history = drift.drift_history(s.artifacts_dir, release.set_name(benchmark, budget))
    out = release.write_candidate(published_dir, fit, s, history, budget)
    get_transaction().set("candidate", out)
    get_run_logger().info("%s: wrote candidate v%s at %s", benchmark, out.version, out.path)
    return out


# Why a candidate would be rolled back, by its path: the flow says it before each step
# (a failing task rolls the transaction back before control returns to the flow).
ROLLBACK_REASONS: dict[str, str] = {}


def if_rolled_back(candidate: Candidate, reason: str) -> None:
    """The reason the candidate's tombstone gives if the unit of work is rolled back now."""
    ROLLBACK_REASONS[candidate.path] = reason


@write_candidate.on_rollback
def _discard_candidate(txn: Transaction) -> None:
    """Remove the candidate; its tombstone keeps the reason (`if_rolled_back`)."""
    cand = txn.get("candidate", None)
    if cand:
        reason = ROLLBACK_REASONS.pop(cand.path, "rolled back")
        versions.discard_version(cand.published_dir, cand.benchmark, cand.version, reason,
                                 cand.budget)  # fmt: skip


@task(
    name="mirror-to-hub",
    retries=2,
    retry_delay_seconds=[10, 60],
    retry_condition_fn=_transient,
    cache_policy=NO_CACHE,
    task_run_name="mirror-to-hub-{benchmark}",
)
def mirror_to_hub(candidate: Candidate, repo_id: str, benchmark: str) -> str:
    """Mirror the candidate to the Hub dataset repo in one commit; returns the commit sha."""
    sha = hub_mirror.mirror_version(candidate.published_dir, benchmark, candidate.version,
                                    repo_id, budget=candidate.budget)  # fmt: skip
    get_run_logger().info("%s: mirrored v%s to %s at %s", benchmark, candidate.version, repo_id,
                          sha)  # fmt: skip
    return sha


@task(name="clean-leftovers", cache_policy=NO_CACHE)
def clean_leftovers(published_dir: str, benchmarks: list[str]) -> list[str]:
    """Remove what interrupted runs left (temp folders, never-promoted candidates)."""
    clean = versions.clean_leftovers
    done = [x for b in benchmarks for x in clean(published_dir, b, all_unpromoted=True)]
    for line in done:
        get_run_logger().warning("cleaned up: %s", line)
    return done


@task(name="promote", cache_policy=NO_CACHE, task_run_name="promote-{benchmark}")
def promote(published_dir: str, benchmark: str, version: int, budget: int | None = None) -> None:
    """Swap the `latest` pointer to the new version (atomically)."""
    versions.set_latest(published_dir, benchmark, version, budget)
    get_run_logger().info("%s: v%s is now the live anchor set", benchmark, version)


@task(name="refresh-suite", cache_policy=NO_CACHE)
def refresh_suite(published_dir: str, matrices: dict[str, MatrixInfo], settings: dict) -> str:
    """Refit and publish the suite (every benchmark read jointly) when its matrices changed."""
    log = get_run_logger()
    files = {b: m.path for b, m in matrices.items()}
    say = lambda m: log.info("suite: %s", m)  # noqa: E731
    s = settings_from(settings)
    mirror = None
    if s.hub_repo:  # the suite is mirrored like every published set, before it goes live
        mirror = lambda v: hub_mirror.mirror_version(published_dir, "suite", v, s.hub_repo)  # noqa: E731
    line = suite_recipe.refresh_suite(files, published_dir, s, say, mirror)
    log.info(line)
    return line


@task(name="evaluate-published", cache_policy=NO_CACHE)
def evaluate_published(
    published_dir: str, benchmark: str, matrix: MatrixInfo, model_ids: list[str] | None,
    version: str | int = "latest",
) -> dict[str, Any]:  # fmt: skip
    return drift.evaluate_published(published_dir, benchmark, matrix.path, model_ids, version)


@task(name="write-report", cache_policy=NO_CACHE)
def write_report(reports_dir: str, run: RunSummary) -> str:
    return str(runreport.write_report(reports_dir, runreport.render_report(run)))
