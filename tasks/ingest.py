"""Tasks of the ingest step: new results into the store, and what the store holds now."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from sparseeval.tasks.policies import transient

from sparseeval.pipeline import recipe, versions
from sparseeval.pipeline.records import IngestSummary
from sparseeval.pipeline.settings import PathsSection, SourcesSection
from sparseeval.pipeline.sources import ingest_sources


@task(
    name="ingest",
    retries=3,
    retry_delay_seconds=[10, 60, 300],
    retry_jitter_factor=0.2,
    retry_condition_fn=transient,
    cache_policy=NO_CACHE,
)
def ingest(
    paths: PathsSection, sources: SourcesSection, specs: list[str], fill_if_empty: bool = True
) -> IngestSummary:
    """Ingest new results; each source's failure is a row of the summary, not an error.

    Hub calls retry 429 / 5xx themselves (honouring Retry-After); a locked store retries here.
    """
    out = ingest_sources(str(paths.store_path), specs, fill_if_empty, sources.hub_max_repos,
                         sources.new_benchmarks)  # fmt: skip
    log = get_run_logger()
    if out.filled_with_synthetic:
        log.info("empty store: filled it from the built-in synthetic leaderboard")
    return out  # the flow says the ingest line (once)


@task(name="store-state", cache_policy=NO_CACHE)
def store_state(paths: PathsSection) -> dict[str, str]:
    """A content signature per benchmark (changes whenever its results change)."""
    return recipe.benchmark_states(paths.store_path)


@task(name="clean-leftovers", cache_policy=NO_CACHE)
def clean_leftovers(paths: PathsSection, sets: list[str]) -> list[str]:
    """Remove what interrupted runs left in these sets (temp folders, unpromoted candidates)."""
    clean = versions.clean_leftovers
    done = [x for b in sets for x in clean(paths.published_dir, b, all_unpromoted=True)]
    for line in done:
        get_run_logger().warning("cleaned up: %s", line)
    return done


__all__ = [
    "clean_leftovers",
    "ingest",
    "store_state",
]
