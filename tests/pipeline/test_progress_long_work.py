"""Long work shows progress: a step that runs past `progress.EVERY` seconds says what it is
doing every so often (ingest of a big unit, the Hub listing); a quick one says nothing."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

import pytest

from sparseeval.pipeline import progress
from sparseeval.pipeline.store import OpenLLMLeaderboard, ingest
from sparseeval.pipeline.store import ingestion as ingestion_module
from tests.helpers import release

EVERY = 0.05


@pytest.fixture
def lines(monkeypatch, caplog):
    """The progress lines logged while the test runs, with a line every EVERY seconds."""
    monkeypatch.setattr(progress, "EVERY", EVERY)
    caplog.set_level(logging.INFO, logger="sparseeval.progress")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "sparseeval.progress"]


def test_a_slow_block_says_so_every_so_often_and_a_quick_one_says_nothing(lines):
    with progress.still_working("quick"):
        pass
    count = iter(range(100))
    with progress.still_working(lambda: f"slow, step {next(count)}"):
        time.sleep(8 * EVERY)
    said = lines()
    assert not any(s.startswith("quick") for s in said)
    slow = [s for s in said if s.startswith("slow")]
    assert len(slow) >= 2 and slow[0].startswith("slow, step 0 (") and "s so far)" in slow[0]


def test_ingest_names_the_unit_it_is_still_reading(store, tmp_path, lines, monkeypatch):
    real = ingestion_module.ingest_unit

    def slow_unit(*args, **kw):  # a big file: reading it takes a while
        time.sleep(6 * EVERY)
        return real(*args, **kw)

    monkeypatch.setattr(ingestion_module, "ingest_unit", slow_unit)
    from sparseeval.pipeline.sources import parse_source

    path = release(tmp_path, 0, 120)
    (report,) = ingest(store, parse_source(path))
    assert report.status == "ok"
    reading = [s for s in lines() if s.startswith("ingest: reading ")]
    assert reading and path.rsplit("/", 1)[-1] in reading[0], lines()


def test_the_hub_listing_counts_the_repos_listed_so_far(lines):
    class SlowListing:
        def list_datasets(self, *, author=None, search=None, expand=None):
            for i in range(8):
                time.sleep(EVERY)
                yield SimpleNamespace(id=f"{author}/details_org__m{i}", sha=f"{i:040d}")

    source = OpenLLMLeaderboard(SlowListing(), None, "v1")
    assert len(source._list_repos()) == 8
    listing = [s for s in lines() if s.startswith("hub: listing open-llm-leaderboard's")]
    assert listing and " so far (" in listing[0], lines()


def test_a_line_is_said_again_only_once_it_has_stood_for_a_while(monkeypatch):
    """`saying`: a new line resets the wait, and `so far` counts from that line (a demo run
    printed a 'still ... (15 s so far)' 4 s after its line)."""
    monkeypatch.setattr(progress, "EVERY", 0.5)
    said: list[str] = []
    with progress.saying(said.append, "a") as say:
        time.sleep(0.3)
        say("b")
        time.sleep(0.3)  # 0.6 s since the start, 0.3 s since "b": nothing is repeated yet
        assert said == ["b"]
        time.sleep(1.0)
    assert said[1].startswith("still b (") and said[1].endswith(" s so far)"), said
    assert not any(s.startswith("still a") for s in said)
