"""Open LLM Leaderboard details via an injected fake Hub client (never the network)."""

from __future__ import annotations

import json
import logging
import traceback
from pathlib import Path
from types import SimpleNamespace

import httpx2
import polars as pl
import pytest
from huggingface_hub.errors import HfHubHTTPError

from sparseeval.pipeline.store import (
    OpenLLMLeaderboard,
    build_matrix,
    default_hub_client,
    ingest,
)
from sparseeval.pipeline.store import hub as hub_module
from sparseeval.pipeline.store import retries as retries_module
from sparseeval.pipeline.store.hub import model_for, redact, repo_for
from sparseeval.pipeline.store.hub_details import card_latest
from sparseeval.pipeline.store.retries import HubError, retry_wait, with_retries
from tests.hub_standin import card_for, parquet_bytes, v1_card, v1_files

TS1, TS2 = "2023-08-19T16-36-54.384542", "2023-10-01T09-00-00.000001"


class FakeDetailsHub:
    """Stands in for the HfApi calls that read leaderboard details repos: serves files written
    by the test in the Hub's repo layout; records downloads. Holds `token` as HfApi does; a
    download of a file in `echo_token_on` fails with an error echoing it (a broken backend)."""

    def __init__(self, root: Path, token: str | None = None) -> None:
        self.root, self.token = root, token
        self.echo_token_on: set[str] = set()
        self.head: dict[str, str] = {}
        self.trees: dict[tuple[str, str], dict[str, Path]] = {}
        self.downloads: list[str] = []
        self.listings: list = []

    def commit(self, repo: str, sha: str, files: dict[str, bytes | str]) -> None:
        """A new revision: the previous files plus `files`."""
        tree = dict(self.trees.get((repo, self.head.get(repo, "")), {}))
        for name, content in files.items():
            local = self.root / sha / repo / name
            local.parent.mkdir(parents=True, exist_ok=True)
            (local.write_bytes if isinstance(content, bytes) else local.write_text)(content)
            tree[name] = local
        self.trees[(repo, sha)] = tree
        self.head[repo] = sha

    def dataset_info(self, repo_id: str, *, revision: str | None = None):
        return SimpleNamespace(id=repo_id, sha=revision or self.head[repo_id])

    def list_repo_files(self, repo_id, *, revision=None, repo_type=None) -> list[str]:
        assert repo_type == "dataset"
        return sorted(self.trees[(repo_id, revision or self.head[repo_id])])

    def hf_hub_download(self, repo_id, filename, *, repo_type=None, revision=None) -> str:
        assert repo_type == "dataset"
        self.downloads.append(filename)
        if filename in self.echo_token_on:
            raise OSError(
                f"500 for {filename} (request headers: Authorization: Bearer {self.token})"
            )
        return str(self.trees[(repo_id, revision or self.head[repo_id])][filename])

    def list_datasets(self, *, author=None, search=None, expand=None):
        self.listings.append(expand)
        return [
            SimpleNamespace(id=r, sha=self.head[r] if expand and "sha" in expand else None)
            for r in self.head
            if r.startswith(author) and search in r
        ]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_v1_ingest_then_only_new_revisions_and_files(store, tmp_path):
    hub = FakeDetailsHub(tmp_path / "hub")
    repo = "open-llm-leaderboard/details_org__model"
    files = v1_files(TS1, [1.0, 0.0, 1.0, 1.0])
    all_ts1 = dict.fromkeys(
        ["harness_arc_challenge_25", "harness_hendrycksTest_anatomy_5", "harness_truthfulqa_mc_0"],
        TS1,
    )
    hub.commit(repo, "a" * 40, files | {"README.md": card_for(all_ts1)})
    source = OpenLLMLeaderboard(hub, ["org/model"], "v1")

    (r,) = ingest(store, source)
    assert r.status == "ok" and (r.n_new, r.n_quarantined) == (4 + 3 + 2, 0)
    assert build_matrix(store, "arc")[0].values.tolist() == [[1, -1, 1, 1]]  # acc_norm, not acc
    assert build_matrix(store, "mmlu")[0].item_ids.tolist() == [
        "anatomy:0",
        "anatomy:1",
        "anatomy:2",
    ]
    assert build_matrix(store, "truthfulqa")[0].values.tolist() == [[1, -1]]
    # the three details files and the results file
    assert store.hub_revision(repo) == "a" * 40 and len(store.hub_files(repo)) == 4

    hub.downloads.clear()
    (again,) = ingest(store, source)
    assert again.status == "skipped" and hub.downloads == []  # same revision: nothing fetched

    newer = v1_files(TS2, [0.0, 0.0, 1.0, 1.0])
    arc2 = next(k for k in newer if "arc" in k)
    ts_now = all_ts1 | {"harness_arc_challenge_25": TS2}
    hub.commit(repo, "b" * 40, {arc2: newer[arc2], "README.md": card_for(ts_now)})
    (third,) = ingest(store, source)
    assert hub.downloads == ["README.md", arc2]  # only the new file
    assert (third.n_updated, third.n_unchanged, third.n_new) == (1, 3, 0)
    hist = store.history("org/model", "arc", "0")
    assert hist["correct"].to_list() == [False, True] and hist["current"].to_list() == [True, False]
    assert "b" * 40 in hist["source_ref"][0]


def test_v1_missing_metric_fails_the_repo_not_the_store(store, tmp_path):
    hub = FakeDetailsHub(tmp_path / "hub")
    repo = "open-llm-leaderboard/details_org__bad"
    name = f"{TS1}/details_harness|arc:challenge|25_{TS1}.parquet"
    card = v1_card(
        {
            "harness_arc_challenge_25": [
                ("latest", f"**/details_harness|arc:challenge|25_{TS1}.parquet")
            ]
        }
    )
    hub.commit(
        repo,
        "c" * 40,
        {name: parquet_bytes(pl.DataFrame({"acc": [1.0]})), "README.md": card},
    )
    (r,) = ingest(store, OpenLLMLeaderboard(hub, ["org/bad"]), keep_going=True)
    assert r.status == "failed" and "no column acc_norm" in r.message
    assert store.hub_revision(repo) is None  # retried next time


def test_v2_latest_samples_per_task_and_listing(store, tmp_path):
    hub = FakeDetailsHub(tmp_path / "hub")
    repo = "open-llm-leaderboard/org__m2-details"
    old = "org__m2/samples_leaderboard_bbh_navigate_2024-06-01T00-00-00.000000.jsonl"
    new = "org__m2/samples_leaderboard_bbh_navigate_2024-07-01T00-00-00.000000.jsonl"
    ife = "org__m2/samples_leaderboard_ifeval_2024-07-01T00-00-00.000000.jsonl"

    def rows(vals: list[float]) -> str:
        return "\n".join(json.dumps({"doc_id": i, "acc_norm": v}) for i, v in enumerate(vals))

    ife_rows = "\n".join(
        json.dumps({"doc_id": i, "prompt_level_strict_acc": v}) for i, v in enumerate([True, False])
    )
    hub.commit(repo, "d" * 40, {old: rows([0.0, 0.0]), new: rows([1.0, 0.0, 1.0]), ife: ife_rows})
    hub.commit("open-llm-leaderboard/contents", "e" * 40, {"x.parquet": b""})
    (r,) = ingest(store, OpenLLMLeaderboard(hub, None, "v2"))
    assert r.status == "ok" and r.n_new == 5 and old not in hub.downloads
    assert "acc_norm" in r.message and "prompt_level_strict_acc" in r.message  # metric read
    assert build_matrix(store, "bbh")[0].item_ids.tolist() == [
        "navigate:0",
        "navigate:1",
        "navigate:2",
    ]
    assert build_matrix(store, "ifeval")[0].values.tolist() == [[1, -1]]
    assert store.models()["model"].to_list() == ["org/m2"]


def test_repo_names_round_trip():
    assert (
        repo_for("org/model", "v1", "open-llm-leaderboard")
        == "open-llm-leaderboard/details_org__model"
    )
    assert model_for("open-llm-leaderboard/details_org__model", "v1") == "org/model"
    assert model_for("open-llm-leaderboard/org__model-details", "v2") == "org/model"
    assert model_for("open-llm-leaderboard/contents", "v2") is None


def test_card_latest_reads_string_or_list_paths(tmp_path):
    card = tmp_path / "README.md"
    card.write_text(
        v1_card({"a": [("latest", "x.parquet")]}).replace('[\n    "x.parquet"\n   ]', '"x.parquet"')
    )
    assert card_latest(card) == {"a": ["x.parquet"]}


def test_token_comes_from_env_and_is_never_logged_stored_or_raised(
    store, tmp_path, monkeypatch, caplog
):
    secret = "hf_secret_value"
    monkeypatch.setenv("HF_TOKEN", secret)
    hub = FakeDetailsHub(tmp_path / "hub", token=default_hub_client().token)
    assert hub.token == secret  # the client holds the token, as HfApi(token=...) does
    samples = "org__m/samples_leaderboard_ifeval_2024-07-01T00-00-00.000000.jsonl"
    hub.commit("open-llm-leaderboard/org__m-details", "f" * 40, {samples: ""})
    hub.echo_token_on.add(samples)
    source = OpenLLMLeaderboard(hub, ["org/m"], "v2")
    with caplog.at_level(logging.DEBUG):
        (report,) = ingest(store, source, keep_going=True)
        with pytest.raises(HubError) as raised:
            ingest(store, source)
    assert hub.downloads == [samples, samples]  # the failing call was made, twice
    assert report.status == "failed"
    assert "Authorization: Bearer ***" in report.message  # the echo arrived, redacted
    runs = str(store.runs().to_dicts())
    raised_text = "".join(traceback.format_exception(raised.value))
    for where, text in [("log", caplog.text), ("report", report.message), ("runs", runs),
                        ("exception", raised_text)]:  # fmt: skip
        assert "secret_value" not in text, where
    assert "download open-llm-leaderboard/org__m-details" in caplog.text


def test_spec_syntax():
    hub = FakeDetailsHub(Path("."))
    named = OpenLLMLeaderboard.from_spec("org/a, org/b", hub)
    assert (named.models, named.version, named.org, named.globs) == (
        ["org/a", "org/b"], "v1", "open-llm-leaderboard", None,
    )  # fmt: skip
    assert named.max_repos == hub_module.DEFAULT_MAX_REPOS == 200
    every = OpenLLMLeaderboard.from_spec("v2:*", hub, max_repos=5)
    assert (every.models, every.version, every.globs, every.max_repos) == (None, "v2", None, 5)
    some = OpenLLMLeaderboard.from_spec("v1:meta-llama/*,*-7b@my-mirror", hub)
    assert (some.globs, some.org, some.version) == (["meta-llama/*", "*-7b"], "my-mirror", "v1")
    assert OpenLLMLeaderboard.from_spec("org/a@mirror", hub).org == "mirror"
    for bad in ["", "v1:", "meta-llama/*", "justamodel", "v3:*", "v1:*@bad/org"]:
        with pytest.raises(ValueError, match=r"v1 or v2|hub source"):
            OpenLLMLeaderboard.from_spec(bad, hub)


def test_listing_carries_shas_globs_filter_and_cap_spreads_over_runs(store, tmp_path):
    hub = FakeDetailsHub(tmp_path / "hub")
    for i, name in enumerate(["zeta__m", "acme__b", "acme__a", "other__x"]):
        repo = f"open-llm-leaderboard/{name}-details"
        hub.commit(repo, f"{i}" * 40, {"org/samples_leaderboard_ifeval_2024.jsonl": ""})
    source = OpenLLMLeaderboard.from_spec("v2:acme/*,zeta/*", hub, max_repos=2)
    first = ingest(store, source)
    assert hub.listings == [["sha"]]  # one listing, asked for shas: no per-repo info call
    assert [r.source.split("@")[0] for r in first[:2]] == [
        "open-llm-leaderboard/acme__a-details", "open-llm-leaderboard/acme__b-details",
    ]  # fmt: skip
    assert first[2].status == "skipped" and "1 left for the next run" in first[2].message
    second = ingest(store, source)
    assert [r.source.split("@")[0] for r in second[:1]] == ["open-llm-leaderboard/zeta__m-details"]
    assert "2 unchanged" in second[1].message and "0 left" in second[1].message
    (third,) = ingest(store, source)
    assert third.status == "skipped" and "3 unchanged" in third.message
    assert store.hub_revision("open-llm-leaderboard/other__x-details") is None  # not matched


def http_error(status: int, headers: dict | None = None) -> HfHubHTTPError:
    request = httpx2.Request("GET", "http://127.0.0.1/x")
    response = httpx2.Response(status, headers=headers or {}, request=request)
    return HfHubHTTPError(f"{status} error (Authorization: Bearer hf_x1)", response=response)


def test_retries_backoff_retry_after_and_give_up(monkeypatch):
    monkeypatch.setattr(retries_module, "RETRY_BASE_S", 0.5)
    monkeypatch.setattr(retries_module, "RETRY_MAX_WAIT_S", 3.0)
    assert [retry_wait(http_error(500), a) for a in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert retry_wait(http_error(429, {"Retry-After": "2"}), 1) == 2.0  # honoured when longer
    assert retry_wait(http_error(429, {"Retry-After": "999"}), 1) == 3.0  # capped
    slept: list[float] = []
    monkeypatch.setattr(retries_module.time, "sleep", slept.append)
    calls = iter([http_error(429, {"Retry-After": "1"}), http_error(503), "ok"])

    def flaky():
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert with_retries("flaky", flaky) == "ok" and slept == [1.0, 1.0]
    slept.clear()
    with pytest.raises(HubError, match="always failed after 5 attempts") as info:
        with_retries("always", lambda: (_ for _ in ()).throw(http_error(500)))
    assert len(slept) == 4 and "hf_x1" not in str(info.value) and info.value.__cause__ is None
    with pytest.raises(HubError, match="missing failed: HfHubHTTPError: 404"):
        with_retries("missing", lambda: (_ for _ in ()).throw(http_error(404)))
    assert len(slept) == 4  # a 404 is not retried


def test_redact_scrubs_token_values_bearer_and_hf_words(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "some-opaque-token-value")
    text = redact(
        "a some-opaque-token-value b; Authorization: Bearer abc.def c; hf_AbCdEf0123456789xyz;"
        " password=other-secret; hf_hub_download",
        "other-secret",
    )
    assert text == ("a *** b; Authorization: Bearer *** c; hf_***; password=***; hf_hub_download")
