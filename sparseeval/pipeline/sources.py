"""Source specs, parsed in one place for the CLI and the flows, and the ingest of many sources.

The spec forms are the source kinds of `sparseeval.pipeline.store.kinds.SOURCE_KINDS`
(prefix -> source), plus plain paths:

synthetic | synthetic:n_models=1000,seed=0,items=ollm,models=0-800,benchmarks=arc+gsm8k
results.parquet | results.csv              a long table (model, benchmark, item, correct)
wide:BENCHMARK=file.csv                    a wide table (model + one column per item)
runs/lm-eval-output/ | results_*.json      lm-eval --log_samples output
hub:org/model[,org/model...]               Open LLM Leaderboard v1 details of those models
hub:v1:GLOB[,GLOB][@ORG] | hub:v2:GLOB     every v1 / v2 details repo whose `org/model`
                                           matches (`*`: all), from one paginated listing;
                                           at most `hub_max_repos` new repos per run

Watched sources, for the `sources` setting that the nightly job reads every night:

lm-eval:GLOB        every lm-eval output folder matching GLOB (`lm-eval:runs/*/*`; `**`
                    works); a run folder (one holding results_*.json) is read only when
                    complete: its results JSON is there and no file in it changed within
                    `sparseeval.pipeline.store.watched.SETTLE_SECONDS` (60 s)
inbox:DIR           a drop folder: long tables `DIR/*.csv`, `DIR/*.parquet`, and wide tables
                    `DIR/{benchmark}/*.csv`; a file changed within the settle time is left
                    for a later night; a file that fails is moved to `DIR/failed/` with
                    its reason (`NAME.reason.txt`): it fails one night, not every night

In both, content ingested before is skipped (it costs its hashing), a file still being
written is a skipped unit saying so, and a bad file is one failed unit: the others land.
Relative paths are relative to the working directory of the process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparseeval.consume.errors import first_line
from sparseeval.pipeline.records import IngestSummary
from sparseeval.pipeline.stopping import reraise_stop
from sparseeval.pipeline.store.kinds import FORMATS, source_from_spec
from sparseeval.pipeline.store.synthetic import (
    DEFAULT_SYNTHETIC_ITEMS,
    DEFAULT_SYNTHETIC_MODELS,
    SyntheticLeaderboard,
)
from sparseeval.pipeline.store.unit import SpecOptions

log = logging.getLogger(__name__)


def parse_source(spec: str, fmt: str = "auto", benchmark: str | None = None,
                 model: str | None = None, hub_max_repos: int = 200):  # fmt: skip
    """A store source from a spec string (see the module docstring).

    fmt: `auto` (by prefix, suffix and CSV header), `long`, `wide` or `lm-eval`;
    benchmark: the benchmark of a wide table; model: the model of an lm-eval folder;
    hub_max_repos: new Hub repos read per run.
    """
    return source_from_spec(spec, SpecOptions(fmt, benchmark, model, hub_max_repos))


def ingest_sources(
    store_path: str | Path,
    sources: Sequence[Any],
    fill_if_empty: bool = True,
    hub_max_repos: int = 200,
    new_benchmarks: Sequence[str] = (),
) -> IngestSummary:
    """Ingest each source (a spec string or a source object) into the store.

    Returns the totals and one row per source (see `IngestSummary`). A source that fails
    as a whole (a bad spec, a missing folder) is a row with failed=1 and its message; the
    other sources still run. With no sources and a store that holds nothing but (part of)
    the built-in synthetic leaderboard, that leaderboard fills it: what an interrupted
    first fill left out is added, what is there is skipped.
    """
    from sparseeval.pipeline.store import Store

    items = list(sources)
    filled = False
    t0 = time.perf_counter()
    rows, reports = [], []
    with Store.open(store_path) as store:
        if not items and fill_if_empty and store.holds_only_synthetic():
            items, filled = [SyntheticLeaderboard()], True
        before = store.last_run_id()
        for name, source, done in ingest_each(
            store, items, hub_max_repos=hub_max_repos, new_benchmarks=new_benchmarks
        ):
            rows.append(_summary_row(store, name, source, done, before))
            before = store.last_run_id()
            reports.extend(done)
    filled = filled and any(r["new"] for r in rows)  # said only when it added results
    shown = [r for r in reports if r.status != "skipped"] + [
        r for r in reports if r.status == "skipped"
    ]
    return IngestSummary.from_sources(
        rows, [r.line() for r in shown[:50]], filled, round(time.perf_counter() - t0, 3)
    )


@dataclass(frozen=True)
class Unreadable:
    """A path given to ingest that is not a source (a pipe, a folder without results): it
    fails alone, in its turn, with the error its parse raised."""

    path: Path
    error: BaseException


def ingest_each(
    store, items: Sequence[Any], force: bool = False, hub_max_repos: int = 200,
    contain: tuple[type[BaseException], ...] = (Exception,), new_benchmarks: Sequence[str] = (),
) -> Iterator[tuple[str, Any, list]]:  # fmt: skip
    """Ingest each source in turn (a spec string, a source object or an `Unreadable`), for
    the CLI and the flow alike: yields (name, source or None, its unit reports). A source
    that fails as a whole with one of `contain` (a bad spec, a missing folder, one that
    cannot list its units) is one failed report; the next still runs."""
    from sparseeval.pipeline.store import StoreLockedError, ingest
    from sparseeval.pipeline.store.ingestion import IngestReport, source_label

    for item in items:
        name = _name_of(item, source_label)
        source = None
        try:
            if isinstance(item, Unreadable):
                raise item.error
            source = (
                parse_source(item, hub_max_repos=hub_max_repos) if isinstance(item, str) else item
            )
            reports = ingest(store, source, force=force, keep_going=True,
                             new_benchmarks=new_benchmarks)  # fmt: skip
        except StoreLockedError:
            raise
        except contain as exc:
            reraise_stop(exc)  # a stop signal fails no source
            log.warning("source %s failed: %s", name, exc)
            reports = [IngestReport(-1, "source", str(name), "failed", message=first_line(exc))]
        yield name, source, reports


def _name_of(item: Any, label) -> str:
    if isinstance(item, Unreadable):
        return str(item.path)
    return item if isinstance(item, str) else label(item)


def _summary_row(store, name: str, source: Any, reports: list, before) -> dict[str, Any]:
    """The summary row of one ingested source (see `IngestSummary`)."""
    from sparseeval.pipeline.store.ingestion import QUARANTINED

    new = sum(r.n_new for r in reports)
    failures = [r for r in reports if r.status == "failed"]
    _set_aside(source, [r for r in reports if r.status in ("failed", QUARANTINED)])
    row = {
        "source": str(name),
        "units": sum(r.status != "failed" or r.kind != "source" for r in reports),
        "new_models": len(store.models_first_seen_after(run_id=before)) if new else 0,
        "new": new,
        "updated": sum(r.n_updated for r in reports),
        "skipped": sum(
            r.status == "skipped" and not (_pending(r) or _failed_before(r)) for r in reports
        ),
        "failed_before": sum(_failed_before(r) for r in reports),
        "pending": sum(_pending(r) for r in reports),
        "quarantined": sum(r.n_quarantined for r in reports),
        "scores": sum(r.scores.n_new + r.scores.n_updated for r in reports),
        "targets_quarantined": sum(r.scores.n_quarantined for r in reports),
        "failed": len(failures),
        "message": failures[0].message[:500] if failures else "",
        # every failed unit: the file (or folder, repo) and why, for `--json` and alerts
        "failures": [{"unit": r.source, "reason": r.message[:500]} for r in failures[:100]],
        "waiting": [r.source for r in reports if _pending(r)][:100],  # still being written
        # files set aside on an earlier night and put back unchanged: skipped, with the reason
        "set_aside": [f"{r.source}: {r.message}" for r in reports if _failed_before(r)][:100],
        # every unit that quarantined rows: the file, how many and why (said the night it
        # was read; a file all of whose rows were quarantined is then set aside like a failed one)
        "quarantine": [
            {"unit": r.source, "count": r.n_quarantined, "reason": r.why_quarantined()[2:-1]}
            for r in reports
            if r.n_quarantined
        ][:100],
    }
    return row


def _set_aside(source: Any, failures: list) -> None:
    """A watched source that moves failed files aside (`Inbox`) does so, and files all of
    whose rows were quarantined; each report's message then says where the file went."""
    aside = getattr(source, "set_aside", None)
    if aside is None:
        return
    for report in failures:
        if report.kind != "source" and (where := aside(report.source, report.message)):
            report.message = f"{report.message}; {where}"


def _failed_before(report) -> bool:
    """A unit skipped because the same bytes failed before (`Inbox`: a copy lies in failed/)."""
    from sparseeval.pipeline.store.watched import FAILED_BEFORE

    return report.status == "skipped" and report.message.startswith(FAILED_BEFORE)


def _pending(report) -> bool:
    """A unit skipped because it is still being written (read on a later run)."""
    from sparseeval.pipeline.store.watched import PENDING

    return report.status == "skipped" and report.message.startswith(PENDING)


__all__ = [
    "DEFAULT_SYNTHETIC_ITEMS",
    "DEFAULT_SYNTHETIC_MODELS",
    "FORMATS",
    "SyntheticLeaderboard",
    "Unreadable",
    "ingest_each",
    "ingest_sources",
    "parse_source",
]
