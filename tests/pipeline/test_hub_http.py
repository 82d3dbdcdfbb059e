"""The real `huggingface_hub.HfApi` over HTTP against the stand-in Hub (tests/hub_standin.py).

No fake client: discovery, retries, tokens and the mirror as the nightly job runs them.
"""

from __future__ import annotations

import logging
import traceback

import numpy as np
import pytest

from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.pipeline.mirror import MirrorConflictError, head_revision, push_to_hub
from sparseeval.pipeline.store import Store, build_matrix, default_hub_client, ingest
from sparseeval.pipeline.store import hub as hub_module
from sparseeval.pipeline.store import retries as retries_module
from sparseeval.pipeline.store.hub import HubError, OpenLLMLeaderboard, repo_for
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit, tiny_fit
from tests.hub_standin import V1_TAGS, card_for, serve_hub, v1_files, v1_repo

ORG = "open-llm-leaderboard"
TS1, TS2 = "2023-08-19T16-36-54.384542", "2023-10-01T09-00-00.000001"
TOKEN = "hf_SeCrEtT0kenValueForTests0123456789"


@pytest.fixture
def hub(monkeypatch, tmp_path):
    monkeypatch.setattr(
        retries_module, "RETRY_BASE_S", 0.01
    )  # tiny backoff; Retry-After still holds
    with serve_hub(monkeypatch, tmp_path) as h:
        yield h


def details(model: str) -> str:
    return repo_for(model, "v1", ORG)


def add_models(hub, models, ts=TS1) -> None:
    for i, model in enumerate(models):
        hub.commit(details(model), v1_repo(ts, [1.0, 0.0, float(i % 2), 1.0]))


def night(store, spec="v1:*", max_repos=200, keep_going=True):
    source = OpenLLMLeaderboard.from_spec(spec, default_hub_client(), max_repos=max_repos)
    return ingest(store, source, keep_going=keep_going)


def by_repo(reports) -> dict[str, str]:
    return {r.source.split("@")[0]: r.status for r in reports if r.source.startswith(f"{ORG}/")}


def test_first_pull_spreads_over_nights_then_costs_one_listing(hub, store):
    models = ["org/m3", "org/m1", "org/m5", "org/m2", "org/m4"]  # listed in creation order
    add_models(hub, models)
    hub.commit(f"{ORG}/contents", {"data.parquet": b"x"})  # not a details repo
    hub.commit("someone/details_org__m9", v1_repo(TS1, [1.0]))  # another org's

    ingested, summaries = [], []
    for expected in (2, 2, 1):
        reports = night(store, max_repos=2)
        assert [r.status for r in reports] == ["ok"] * expected + ["skipped"]
        ingested += [r.source.split("@")[0] for r in reports[:-1]]
        summaries.append(reports[-1].message)
    assert ingested == sorted(details(m) for m in models)  # stable order, resumed each night
    assert "3 left for the next run (hub_max_repos=2)" in summaries[0]
    assert "2 unchanged" in summaries[1] and "1 left" in summaries[1]
    assert "4 unchanged" in summaries[2] and "0 left" in summaries[2]
    assert build_matrix(store, "arc")[0].values.shape == (5, 4)
    assert len(build_matrix(store, "mmlu")[0].model_ids) == 5

    hub.clear()
    (nothing,) = night(store, max_repos=2)
    assert nothing.status == "skipped" and "5 unchanged, 0 new or changed" in nothing.message
    assert hub.downloads() == []
    listing = hub.requests  # three pages of two, each repo with its sha: nothing else asked
    assert [r.path for r in listing] == ["/api/datasets"] * 3
    assert all(r.query["expand"] == ["sha"] for r in listing)


def test_rate_limits_honour_retry_after(hub, store):
    add_models(hub, ["org/m1", "org/m2"])
    hub.fail("/api/datasets", 429, headers={"Retry-After": "1"})
    reports = night(store, spec="v1:org/m1*")  # a glob: the listing
    assert by_repo(reports) == {details("org/m1"): "ok"}
    first, again, *_ = hub.matching("/api/datasets")
    assert (first.status, again.status) == (429, 200) and again.at - first.at >= 1.0

    # dataset_info (named models) is retried by our wrapper, waiting Retry-After too
    hub.fail(f"/api/datasets/{details('org/m2')}", 429, headers={"Retry-After": "1"})
    (r,) = night(store, spec="org/m2")
    assert r.status == "ok"
    first, again = hub.matching(f"/api/datasets/{details('org/m2')}")
    assert (first.status, again.status) == (429, 200) and again.at - first.at >= 1.0


def test_server_errors_are_retried_and_a_broken_repo_fails_alone(hub, store):
    add_models(hub, ["org/flaky", "org/broken", "org/fine"])
    flaky = f"/datasets/{details('org/flaky')}/resolve/*arc:challenge*"
    hub.fail(flaky, 500, times=2, method="GET")
    hub.fail(f"/datasets/{details('org/broken')}/resolve/*", 503, times=None, method="GET")

    reports = night(store)
    assert by_repo(reports) == {
        details("org/broken"): "failed", details("org/fine"): "ok", details("org/flaky"): "ok",
    }  # fmt: skip
    assert [r.status for r in hub.matching(flaky, "GET")] == [500, 500, 200]
    failed = next(r for r in reports if r.status == "failed")
    assert "after 5 attempts" in failed.message and "503" in failed.message
    runs = store.runs()
    assert "after 5 attempts" in runs.filter(runs["status"] == "failed")["message"][0]
    assert store.hub_revision(details("org/broken")) is None  # tried again next night
    assert build_matrix(store, "arc")[0].model_ids.tolist() == ["org/fine", "org/flaky"]

    hub.faults.clear()  # the Hub recovers: the broken repo lands, the others cost nothing
    hub.clear()
    reports = night(store)
    assert by_repo(reports) == {details("org/broken"): "ok"}
    assert all("details_org__broken" in r.path for r in hub.requests[3:])
    assert [r.path for r in hub.requests[:3]] == ["/api/datasets"] * 2 + [
        f"/api/datasets/{details('org/broken')}/tree/{hub.head(details('org/broken'))}"
    ]


def test_when_the_hub_is_down_the_rest_waits_for_the_next_run(hub, store, monkeypatch):
    monkeypatch.setattr(hub_module, "BREAKER_FAILURES", 2)
    add_models(hub, ["org/a", "org/b", "org/c", "org/d"])
    hub.fail("/datasets/*", 503, times=None, method="GET")
    reports = night(store)
    assert [r.status for r in reports] == ["failed", "failed", "skipped"]
    assert "2 left for the next run (stopped: 2 repos in a row failed)" in reports[-1].message
    assert not [r for r in hub.requests if "details_org__c" in r.path]
    hub.faults.clear()
    assert by_repo(night(store)) == dict.fromkeys(
        map(details, ["org/a", "org/b", "org/c", "org/d"]), "ok"
    )


def test_changed_revision_reads_only_new_files_and_new_repos_are_found(hub, store):
    add_models(hub, ["org/a", "org/b"])
    assert set(by_repo(night(store)).values()) == {"ok"}

    newer = v1_files(TS2, [0.0, 0.0, 0.0, 0.0])
    arc2 = next(p for p in newer if "arc" in p)
    ts_now = dict.fromkeys(V1_TAGS, TS1) | {"harness_arc_challenge_25": TS2}
    new_sha = hub.commit(details("org/a"), {arc2: newer[arc2], "README.md": card_for(ts_now)})
    add_models(hub, ["org/c"])
    hub.clear()

    reports = night(store)
    assert by_repo(reports) == {details("org/a"): "ok", details("org/c"): "ok"}
    assert "1 unchanged" in reports[-1].message
    assert hub.downloads(details("org/a")) == ["README.md", arc2]  # only the new file
    assert len(hub.downloads(details("org/c"))) == 5  # card + three configs + results file
    assert not [r for r in hub.requests if "details_org__b" in r.path]
    assert store.hub_revision(details("org/a")) == new_sha
    hist = store.history("org/a", "arc", "0")
    assert hist["correct"].to_list() == [False, True] and new_sha in hist["source_ref"][0]


def test_token_is_sent_but_never_logged_stored_or_raised(hub, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    add_models(hub, ["org/ok", "org/echo"])
    # a broken backend that echoes the request's Authorization header in its error message
    hub.fail(
        f"/datasets/{details('org/echo')}/resolve/*", 500, times=None, method="GET", echo_auth=True
    )
    path = tmp_path / "secret-test.duckdb"
    with (
        caplog.at_level(logging.DEBUG),
        caplog.at_level(logging.DEBUG, logger="huggingface_hub"),
        Store.open(path) as store,
    ):
        reports = night(store)
        with pytest.raises(HubError) as raised:
            night(store, spec="org/echo", keep_going=False)
        tables = {
            t: str(store.con.sql(f"SELECT * FROM {t}").fetchall())
            for t in ("ingest_runs", "quarantine", "source_refs", "hub_repos", "hub_files")
        }
    assert {r.headers.get("authorization") for r in hub.requests} == {f"Bearer {TOKEN}"}
    failed = next(r for r in reports if r.status == "failed")
    assert "Authorization: Bearer ***" in failed.message  # the echo arrived, redacted
    assert by_repo(reports)[details("org/ok")] == "ok"
    raised_text = "".join(traceback.format_exception(raised.value))
    for where, text in [("log", caplog.text), ("report", failed.message), *tables.items(),
                        ("exception", raised_text)]:  # fmt: skip
        assert TOKEN not in text, where
        assert TOKEN[3:] not in text, where
    assert TOKEN.encode() not in path.read_bytes()


def test_mirror_refuses_a_stale_parent_and_serves_pinned_revisions(hub, tmp_path):
    m, sp, est = fitted = tiny_fit(seed=1, n_test=60, n_valid=80)
    root = tmp_path / "published"
    for _ in range(2):
        publish_fit(root, "arc", fitted)
    repo = "acme/anchor-sets"
    head0 = hub.create_repo(repo)

    set_latest(root, "arc", 1)
    one = push_to_hub(root, "arc", "latest", repo, parent_commit=head_revision(repo))
    assert one.oid == hub.head(repo) != head0
    set_latest(root, "arc", 2)
    with pytest.raises(MirrorConflictError, match="moved past parent commit"):
        push_to_hub(root, "arc", "latest", repo, parent_commit=head0)  # someone pushed since
    assert hub.head(repo) == one.oid
    assert not [p for p in hub.files(repo) if p.startswith("arc/k8/v2/")]
    two = push_to_hub(root, "arc", "latest", repo, parent_commit=one.oid)
    assert [r.status for r in hub.matching(f"/api/datasets/{repo}/commit/*")] == [200, 412, 200]

    X = m.values[sp.test]
    pinned = load_anchor_set(repo, "arc", revision=one.oid)
    newest = load_anchor_set(repo, "arc", revision=two.oid)
    assert hub.matching(f"/datasets/{repo}/resolve/{two.oid}/*")  # the first load downloads
    assert (pinned.version, newest.version) == (1, 2)
    assert newest.source == f"hf://datasets/{repo}"
    local = load_anchor_set(root, "arc", 2)
    np.testing.assert_allclose(
        newest.predict_matrix(X, m.item_ids), local.predict_matrix(X, m.item_ids), atol=1e-9
    )
    np.testing.assert_allclose(newest.predict_matrix(X, m.item_ids), est.predict(X), atol=1e-6)
    before = len(hub.requests)
    assert load_anchor_set(repo, "arc", revision=two.oid).version == 2  # from the local cache
    assert hub.requests[before:] == []  # a pinned revision already downloaded asks nothing
