"""The nightly job as operators meet it: watched sources, budgets, refusals, retrain, Hub mirror."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest

from sparseeval.consume.sets import anchorset, layout
from tests.flows.test_flows import WORSE
from tests.helpers import maintained, release, run

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture
def events(monkeypatch):
    module = importlib.import_module("sparseeval.flows._results")  # where events are emitted
    seen = []
    real = module.emit_event
    monkeypatch.setattr(module, "emit_event", lambda **kw: seen.append(kw) or real(**kw))
    return seen


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_refresh_reads_the_watched_sources_and_says_what_arrived(tmp_path, monkeypatch):
    home, inbox = tmp_path / "home", tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(release(tmp_path, 0, 200), inbox / "night1.parquet")
    watched = {"sources": [f"inbox:{inbox}"]}
    from sparseeval.pipeline.store import watched as store_sources

    monkeypatch.setattr(store_sources, "SETTLE_SECONDS", 0)  # the files are complete
    first = run(home, None, **watched)
    (row,) = first.ingest.sources
    assert row["new_models"] == 200 and first.n_published == 2
    shutil.copy(release(tmp_path, 200, 230, ["arc"]), inbox / "night2.parquet")
    second = run(home, None, **watched)
    (row,) = second.ingest.sources
    assert (row["new_models"], row["skipped"], row["new"]) == (30, 1, 30 * 60)
    report = Path(second.report_path).read_text()
    assert "## What arrived" in report and f"inbox:{inbox}" in report


def test_a_benchmark_with_too_few_models_waits_without_failing_the_night(tmp_path):
    home = tmp_path / "home"
    out = run(home, [release(tmp_path, 0, 200, ["arc"]), release(tmp_path, 0, 20, ["gsm8k"])])
    res = {r.benchmark: r for r in out.results}
    assert res["arc"].published_version == 1 and res["gsm8k"].fit is None
    assert res["gsm8k"].outcome.startswith("waiting for more models")
    from sparseeval.pipeline.reports.run_report import summary_line

    assert "gsm8k: waiting for more models" in summary_line(out)


def test_several_budgets_are_published_as_sets_of_their_own(tmp_path):
    home = tmp_path / "home"
    out = run(home, [release(tmp_path, 0, 200, ["arc"])], n_anchors=[4, 8])
    assert sorted((r.label, r.published_version) for r in out.results) == [
        ("arc k4", 1), ("arc k8", 1)
    ]  # fmt: skip
    root = home / "published"
    assert layout.list_budgets(root, "arc") == [4, 8]
    assert len(anchorset.load_anchor_set(root, "arc").items) == 8  # the largest by default
    assert len(anchorset.load_anchor_set(root, "arc", budget=4).items) == 4
    report = (root / "arc" / "k4" / "v1" / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith("| sparseeval |")]
    assert {line.split("|")[2].strip() for line in rows} == {"4", "8"}  # every budget shown


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_readers_load_the_set_the_nightly_maintains_after_budgets_change(tmp_path):
    """One budget, then `--anchors 4,8`: the k4 and k8 sets are published and readers load
    k8 (the benchmark's `default`), not the one-budget set left behind, which the nightly no
    longer checks (issue [1/5], bug 2); back to one budget, its set is the default again.
    One layout whatever the number of budgets: the one-budget set is `arc/k6/`."""
    home, root = tmp_path / "home", tmp_path / "home" / "published"
    run(home, [release(tmp_path, 0, 200, ["arc"])], n_anchors=6)
    assert layout.list_budgets(root, "arc") == [6] and layout.default_budget(root, "arc") == (6,)
    assert not (root / "arc" / "v1").exists() and not (root / "arc" / "latest").exists()
    assert len(anchorset.load_anchor_set(root, "arc").items) == 6
    run(home, None, n_anchors=[4, 8])
    assert layout.list_budgets(root, "arc") == [4, 6, 8]
    assert layout.default_budget(root, "arc") == (8,)
    assert len(anchorset.load_anchor_set(root, "arc").items) == 8
    run(home, None, n_anchors=6)
    assert layout.default_budget(root, "arc") == (6,)
    assert len(anchorset.load_anchor_set(root, "arc").items) == 6


def test_a_new_budget_is_published_on_the_same_data(tmp_path):
    """`--anchors 4` after a 6-anchor set, no new models: it used to say "not published (no
    new models in its matrix since publishing)"; a new budget is published, ungated, as the
    first version of its own set (`arc/k4/`), which readers then load."""
    home, root = tmp_path / "home", tmp_path / "home" / "published"
    run(home, [release(tmp_path, 0, 200, ["arc"])], n_anchors=6)
    out = run(home, None, n_anchors=4)
    (r,) = out.results
    assert r.published_version == 1 and r.published_path == str(root / "arc" / "k4" / "v1")
    assert r.decision.reason == "a new budget: 4 anchors (live v1 reads 6)"
    assert len(anchorset.load_anchor_set(root, "arc").items) == 4


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_a_refused_candidate_is_visible_everywhere(tmp_path, events):
    home = tmp_path / "home"
    run(home, [release(tmp_path, 0, 200, ["arc"])])
    events.clear()
    out = run(home, [release(tmp_path, 200, 260, ["arc"])], drift_mae_points=0.01, **WORSE)
    (r,) = out.results
    assert r.decision.drift and not r.gate.accept and out.n_published == 0
    names = [e["event"] for e in events]
    assert names == ["sparseeval.drift.detected", "sparseeval.publish.refused"]
    refused = events[1]["payload"]
    assert "refused" in refused["reason"]
    assert refused["candidate_mae_heldout"] > refused["live_mae_heldout"]
    tomb = json.loads(
        (layout.set_dir(*maintained(home / "published", "arc")) / ".discarded-v2").read_text()
    )
    assert tomb["reason"].startswith("refused by the quality gate")
    from sparseeval.pipeline.reports.run_report import summary_line

    line = summary_line(out)
    assert "arc: drift (MAE" in line and "candidate refused (" in line
    assert "everything was cached" not in line
    events.clear()
    again = run(home, None, drift_mae_points=0.01, **WORSE)  # nothing new: not gated again
    (r,) = again.results
    assert "already refused" in r.outcome and "sparseeval.publish.refused" not in [
        e["event"] for e in events
    ]


def test_retrain_one_retrains_but_never_republishes_the_live_sets_data(tmp_path):
    from sparseeval.flows.manual import retrain_benchmark

    home = tmp_path / "home"
    run(home, [release(tmp_path, 0, 200, ["arc"])])
    from tests.helpers import TINY

    (r,) = retrain_benchmark("arc", home=str(home), settings_overrides=TINY)
    assert r.fit.trained and not r.fit_cached  # really retrained, not a cache hit
    assert r.published_version is None and "was fit on this data" in r.outcome
    assert layout.list_versions(*maintained(home / "published", "arc")) == [1]


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_publish_mirrors_to_the_hub_and_a_race_leaves_both_live_sets(tmp_path, monkeypatch):
    from sparseeval.pipeline import mirror as hub_mirror
    from tests.hub_standin import serve_hub

    home, repo = tmp_path / "home", "acme/anchor-sets"
    with serve_hub(monkeypatch, tmp_path) as hub:
        hub.create_repo(repo)
        weak = {"n_anchors": 2, "refine_steps": 0}  # so that the second fit passes the gate
        first = run(home, [release(tmp_path, 0, 200, ["arc"])], hub_repo=repo, **weak)
        (r,) = first.results
        assert r.published_version == 1 and r.hub_commit == hub.head(repo)
        assert f"{repo}@" in r.outcome
        pinned = anchorset.load_anchor_set(repo, "arc", revision=r.hub_commit)
        assert pinned.items == anchorset.load_anchor_set(home / "published", "arc").items
        head = hub.head(repo)
        monkeypatch.setattr(hub_mirror, "head_revision", lambda *a, **k: "0" * 40)  # stale
        second = run(home, [release(tmp_path, 200, 260, ["arc"])], hub_repo=repo,
                     drift_mae_points=0.01, **weak)  # fmt: skip
        (r,) = second.results
        assert r.published_version is None and "mirror to acme/anchor-sets failed" in r.outcome
        assert hub.head(repo) == head  # nothing landed on the Hub
    assert layout.latest_version(*maintained(home / "published", "arc")) == 1  # nor locally
    tomb = json.loads(
        (layout.set_dir(*maintained(home / "published", "arc")) / ".discarded-v2").read_text()
    )
    assert "mirror" in tomb["reason"]


def test_a_new_benchmark_the_operator_allows_is_published_the_first_night(tmp_path):
    """A source brings `arc_easy2`, a name the store does not know: quarantined by default
    (until `ingest --new-benchmark`); with `new_benchmarks = ["arc_*"]` it is registered as
    it is read and published that night (issue [3/5] item 2)."""
    import polars as pl

    frame = pl.read_parquet(release(tmp_path, 0, 200, ["arc"]))
    path = tmp_path / "new.parquet"
    frame.with_columns(benchmark=pl.lit("arc_easy2")).write_parquet(path)
    refused = run(tmp_path / "default", [str(path)])
    assert refused.n_published == 0 and refused.ingest.quarantined == len(frame)
    home = tmp_path / "home"
    out = run(home, [str(path)], new_benchmarks=["arc_*"])
    (r,) = out.results
    assert r.benchmark == "arc_easy2" and r.published_version == 1, r.outcome
    assert anchorset.load_anchor_set(home / "published", "arc_easy2").manifest["benchmark"] == (
        "arc_easy2"
    )


def test_a_signing_key_signs_every_published_set_and_its_pointers(tmp_path, monkeypatch):
    from sparseeval.consume.sets.suite_set import load_suite
    from tests.helpers import signing_keys
    from tests.hub_standin import serve_hub

    pem, public = signing_keys()
    key = tmp_path / "publisher.pem"
    key.write_bytes(pem)
    home, repo = tmp_path / "home", "acme/anchor-sets"
    with serve_hub(monkeypatch, tmp_path) as hub:
        hub.create_repo(repo)
        out = run(home, [release(tmp_path, 0, 200)], hub_repo=repo, signing_key=str(key))
        assert out.n_published == 2 and out.suite.startswith("suite: published v1")
        published = home / "published"
        for benchmark in ("arc", "gsm8k"):
            assert anchorset.load_anchor_set(published, benchmark, public_key=public).version == 1
            on_hub = anchorset.load_anchor_set(repo, benchmark, public_key=public)
            assert on_hub.items == anchorset.load_anchor_set(published, benchmark).items
        assert load_suite(published, public_key=public).version == 1
        pointer = json.loads((layout.set_dir(published, "arc", 8) / "latest").read_text())
        assert isinstance(pointer["signature"], str)
        with pytest.raises(anchorset.AnchorSetError, match="does not verify"):
            anchorset.load_anchor_set(published, "arc", public_key=signing_keys()[1])
