"""Tasks of the ingest step: new results into the store, and what the store holds now."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from sparseeval.tasks.policies import transient

from sparseeval.pipeline import recipe, sources, versions
from sparseeval.pipeline.records import IngestSummary
from sparseeval.pipeline.settings import Settings


@task(
    name="ingest",
    retries=3,
    retry_delay_seconds=[10, 60, 300],
    retry_jitter_factor=0.2,
    retry_condition_fn=transient,
    cache_policy=NO_CACHE,
)
def ingest(settings: Settings, specs: list[str], fill_if_empty: bool = True) -> IngestSummary:
    """Ingest new results; each source's failure is a row of the summary, not an error.

    Hub calls retry 429 / 5xx themselves (honouring Retry-After); a locked store retries here.
    """
    out = sources.ingest_sources(
        str(settings.store_path), specs, fill_if_empty, settings.hub_max_repos
    )
    log = get_run_logger()
    if out.filled_with_synthetic:
        log.info("empty store: filled it from the built-in synthetic leaderboard")
    return out  # the flow says the ingest line (once)


@task(name="store-state", cache_policy=NO_CACHE)
def store_state(settings: Settings) -> dict[str, str]:
    """A content signature per benchmark (changes whenever its results change)."""
    return recipe.benchmark_states(settings.store_path)


@task(name="clean-leftovers", cache_policy=NO_CACHE)
def clean_leftovers(settings: Settings, sets: list[str]) -> list[str]:
    """Remove what interrupted runs left in these sets (temp folders, unpromoted candidates)."""
    clean = versions.clean_leftovers
    done = [x for b in sets for x in clean(settings.published_dir, b, all_unpromoted=True)]
    for line in done:
        get_run_logger().warning("cleaned up: %s", line)
    return done
