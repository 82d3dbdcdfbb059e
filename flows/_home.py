"""Where a run's state lives: a deployed run's explicit home, a store that is not empty,
and one run per home (its lease)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

from prefect.runtime import deployment, flow_run
from sparseeval.flows._run import guarded, say

from sparseeval.consume.errors import SparseEvalError
from sparseeval.pipeline.artifacts import check_writable
from sparseeval.pipeline.lease import HomeLease, LeaseHeld
from sparseeval.pipeline.records import IngestSummary
from sparseeval.pipeline.settings import Settings, SettingsError
from sparseeval.pipeline.store.watched import SETTLE_SECONDS

NO_HOME = (
    "a deployed run needs SPARSEEVAL_HOME (set it, and SPARSEEVAL_CONFIG, in the shell that"
    " runs `prefect deploy`, or as the deployment's job variables): the worker's working"
    " directory never decides where state lives"
)
NO_DEMO = (
    "a deployment does not read the built-in synthetic demo (`synthetic` in sources): its"
    " benchmarks would be published as real ones; set `allow_demo = true` for a demo home"
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
        raise SettingsError(NO_HOME)
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
        raise SettingsError(NO_SOURCES.format(home=settings.paths.home))


def check_no_demo(specs: list[str], settings: Settings) -> None:
    """A deployment reads the built-in synthetic demo only with `allow_demo = true`."""
    if (
        any(s.split(":", 1)[0].strip() == "synthetic" for s in specs)
        and not settings.sources.allow_demo
    ):
        raise SettingsError(NO_DEMO)


@contextlib.contextmanager
def hold_home(settings: Settings, skip_if_held: bool = False) -> Iterator[str]:
    """One run per home: hold its lease (`pipeline.lease`) while the run works. With
    `skip_if_held`, a home another run holds (after `lease_wait_seconds`) yields the line
    that says this run is skipped, instead of failing; else it yields ""."""
    holder = f"{flow_run.get_name() or 'refresh'} (flow run {flow_run.get_id()})"
    lease = HomeLease(settings.paths.home, holder, wait=settings.runner.lease_wait_seconds, say=say)
    try:
        lease.acquire()
    except (FileExistsError, NotADirectoryError) as exc:
        raise SettingsError(
            f"home {settings.paths.home} is not a folder ({exc.strerror})"
        ) from None
    except LeaseHeld as exc:
        if not skip_if_held:
            raise
        yield f"skipped: {exc} (another run holds this home; one schedule per home)"
        return
    try:
        check_writable(settings.paths.artifacts_dir)  # a read-only cache: one line, before any work
    except SparseEvalError:
        lease.release()
        raise
    if lease.took_over is not None:
        say(f"took over the lease of a crashed run: {lease.took_over.get('holder')}",
            logging.WARNING)  # fmt: skip
    with guarded(lease):  # a SIGKILL (a stopped worker's) gives the lease back all the same
        try:
            yield ""
        finally:
            lease.release()
