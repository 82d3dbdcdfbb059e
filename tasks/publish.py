"""Tasks of the publish step: candidates (rolled back with their reason), mirror, promote.

The refresh flow runs them as the steps of the publish unit (`publish.publish_unit`) inside
one Prefect transaction (`flows/publish.py`); the unit puts the candidate in the
transaction and says, before each step, why it would be rolled back. A failing step rolls
the transaction back, and `discard_candidate` (`publish.roll_back_held`) writes that reason
into the candidate's tombstone and a refusal into the set's ledger.
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.transactions import Transaction
from sparseeval.tasks.policies import transient

from sparseeval.pipeline import publish, suite_publish
from sparseeval.pipeline.progress import PROGRESS, saying
from sparseeval.pipeline.records import Candidate, FitInfo, GateResult, MatrixInfo
from sparseeval.pipeline.settings import PathsSection, Settings, SourcesSection


@task(
    name="write-candidate", cache_policy=NO_CACHE, task_run_name="write-candidate-{fit.benchmark}"
)
def write_candidate(settings: Settings, fit: FitInfo, budget: int | None = None) -> Candidate:
    """Write the new version's folder (not live yet); rolled back if the unit of work fails.

    `settings`: where the set goes (`paths`) and every setting, for its manifest."""
    out = publish.write_candidate(settings, fit, budget)
    get_run_logger().info("%s: wrote candidate v%s at %s", fit.benchmark, out.version, out.path)
    return out


@task(name="write-suite-candidate", cache_policy=NO_CACHE)
def write_suite_candidate(
    settings: Settings, matrices: dict[str, MatrixInfo]
) -> tuple[Candidate, GateResult]:
    """Fit the suite over every benchmark and write it as a candidate; its gate."""
    log = get_run_logger()

    def emit(line: str) -> None:  # the run's log and the console (`sparseeval.progress`)
        log.info("suite: %s", line)
        PROGRESS.info("suite: %s", line)

    with saying(emit, "fitting the suite") as say:  # a long refit is said again every 15 s
        cand, gate = suite_publish.suite_candidate(matrices, settings, say)
    log.info("suite: wrote candidate v%s; gate: %s", cand.version, gate.reason)
    return cand, gate


@task(name="suite-status", cache_policy=NO_CACHE)
def suite_status(settings: Settings, matrices: dict[str, MatrixInfo]) -> str | None:
    """Why the suite needs no fit tonight (up to date, or refused before), or None."""
    return suite_publish.suite_status(matrices, settings)


@write_candidate.on_rollback
@write_suite_candidate.on_rollback
def discard_candidate(txn: Transaction) -> None:
    """Remove the candidate with the reason the unit set on the transaction (`reason`).

    A refusal by the gate (`refusal`: the gate's reason) also goes into the set's ledger.
    """
    publish.roll_back_held(txn)


@task(
    name="mirror-to-hub",
    retries=2,
    retry_delay_seconds=[10, 60],
    retry_condition_fn=transient,
    cache_policy=NO_CACHE,
    task_run_name="mirror-to-hub-{candidate.benchmark}",
)
def mirror_to_hub(sources: SourcesSection, candidate: Candidate) -> str:
    """Mirror the candidate to the `hub_repo` dataset repo in one commit; the commit sha."""
    sha = publish.mirror(candidate, sources.hub_repo)
    get_run_logger().info("%s: mirrored v%s to %s at %s", candidate.benchmark, candidate.version,
                          sources.hub_repo, sha)  # fmt: skip
    return sha


@task(name="promote", cache_policy=NO_CACHE, task_run_name="promote-{candidate.benchmark}")
def promote(candidate: Candidate) -> None:
    """Swap the `latest` pointer to the new version (atomically)."""
    publish.promote(candidate)
    get_run_logger().info("%s: v%s is now live", candidate.name, candidate.version)


@task(name="point-default", cache_policy=NO_CACHE, task_run_name="point-default-{benchmark}")
def point_default(paths: PathsSection, benchmark: str, budget: int, replace: bool = True) -> None:
    """Point the benchmark's `default` at the set this run maintains (`versions.point_default`)."""
    from sparseeval.pipeline.versions import point_default as point

    point(paths.published_dir, benchmark, budget, replace)


__all__ = [
    "discard_candidate",
    "mirror_to_hub",
    "point_default",
    "promote",
    "suite_status",
    "write_candidate",
    "write_suite_candidate",
]
