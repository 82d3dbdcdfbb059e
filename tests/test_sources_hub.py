"""Open LLM Leaderboard details via an injected fake Hub client (never the network)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from sparseeval.store import OpenLLMLeaderboard, Store, build_matrix, default_hub_client, ingest
from sparseeval.store.hub import card_latest, model_for, repo_for

TS1, TS2 = "2023-08-19T16-36-54.384542", "2023-10-01T09-00-00.000001"


class FakeHub:
    """Serves files written by the test in the Hub's repo layout; records downloads."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.head: dict[str, str] = {}
        self.trees: dict[tuple[str, str], dict[str, Path]] = {}
        self.downloads: list[str] = []

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
        return str(self.trees[(repo_id, revision or self.head[repo_id])][filename])

    def list_datasets(self, *, author=None, search=None):
        return [SimpleNamespace(id=r) for r in self.head if r.startswith(author) and search in r]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def parquet_bytes(tmp_path: Path, frame: pl.DataFrame) -> bytes:
    path = tmp_path / "tmp.parquet"
    frame.write_parquet(path)
    return path.read_bytes()


def v1_card(configs: dict[str, list[tuple[str, str]]]) -> str:
    """A dataset card whose YAML lists each config's splits (timestamped and `latest`)."""
    meta = {"configs": [
        {"config_name": name, "data_files": [{"split": s, "path": [p]} for s, p in splits]}
        for name, splits in configs.items()
    ]}  # fmt: skip
    return "---\n" + json.dumps(meta, indent=1) + "\n---\n# details\n"


def v1_files(tmp_path: Path, ts: str, arc: list[float]) -> dict[str, bytes | str]:
    """arc with a plain `acc_norm` column, MMLU anatomy with a `metrics` struct,
    TruthfulQA with a flattened `metrics.mc1` column, and the aggregated results config."""
    arc_name = f"{ts}/details_harness|arc:challenge|25_{ts}.parquet"
    anat_name = f"{ts}/details_harness|hendrycksTest-anatomy|5_{ts}.parquet"
    tqa_name = f"{ts}/details_harness|truthfulqa:mc|0_{ts}.parquet"
    return {
        arc_name: parquet_bytes(
            tmp_path,
            pl.DataFrame({"example": ["q"] * len(arc), "acc_norm": arc, "acc": [0.0] * len(arc)}),
        ),
        anat_name: parquet_bytes(
            tmp_path, pl.DataFrame({"metrics": [{"acc": 1.0}, {"acc": 0.0}, {"acc": 1.0}]})
        ),
        tqa_name: parquet_bytes(
            tmp_path, pl.DataFrame({"metrics.mc1": [True, False], "metrics.mc2": [0.7, 0.2]})
        ),
        "results_x.json": "{}",
    }


def card_for(files: dict, ts_of: dict[str, str]) -> str:
    patterns = {
        "harness_arc_challenge_25": "arc:challenge|25",
        "harness_hendrycksTest_anatomy_5": "hendrycksTest-anatomy|5",
        "harness_truthfulqa_mc_0": "truthfulqa:mc|0",
    }
    return v1_card({
        cfg: [(ts_of[cfg].replace("-", "_"), f"**/details_harness|{tag}_{ts_of[cfg]}.parquet"),
              ("latest", f"**/details_harness|{tag}_{ts_of[cfg]}.parquet")]
        for cfg, tag in patterns.items()
    } | {"results": [("latest", "**/results_*.json")]})  # fmt: skip


def test_v1_ingest_then_only_new_revisions_and_files(store, tmp_path):
    hub = FakeHub(tmp_path / "hub")
    repo = "open-llm-leaderboard/details_org__model"
    files = v1_files(tmp_path, TS1, [1.0, 0.0, 1.0, 1.0])
    all_ts1 = dict.fromkeys(
        ["harness_arc_challenge_25", "harness_hendrycksTest_anatomy_5", "harness_truthfulqa_mc_0"],
        TS1,
    )
    hub.commit(repo, "a" * 40, files | {"README.md": card_for(files, all_ts1)})
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
    assert store.hub_revision(repo) == "a" * 40 and len(store.hub_files(repo)) == 3

    hub.downloads.clear()
    (again,) = ingest(store, source)
    assert again.status == "skipped" and hub.downloads == []  # same revision: nothing fetched

    newer = v1_files(tmp_path, TS2, [0.0, 0.0, 1.0, 1.0])
    arc2 = next(k for k in newer if "arc" in k)
    ts_now = all_ts1 | {"harness_arc_challenge_25": TS2}
    hub.commit(repo, "b" * 40, {arc2: newer[arc2], "README.md": card_for(newer, ts_now)})
    (third,) = ingest(store, source)
    assert hub.downloads == ["README.md", arc2]  # only the new file
    assert (third.n_updated, third.n_unchanged, third.n_new) == (1, 3, 0)
    hist = store.history("org/model", "arc", "0")
    assert hist["correct"].to_list() == [False, True] and hist["current"].to_list() == [True, False]
    assert "b" * 40 in hist["source_ref"][0]


def test_v1_missing_metric_fails_the_repo_not_the_store(store, tmp_path):
    hub = FakeHub(tmp_path / "hub")
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
        {name: parquet_bytes(tmp_path, pl.DataFrame({"acc": [1.0]})), "README.md": card},
    )
    (r,) = ingest(store, OpenLLMLeaderboard(hub, ["org/bad"]), keep_going=True)
    assert r.status == "failed" and "no column acc_norm" in r.message
    assert store.hub_revision(repo) is None  # retried next time


def test_v2_latest_samples_per_task_and_listing(store, tmp_path):
    hub = FakeHub(tmp_path / "hub")
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


def test_token_comes_from_env_and_is_never_logged(store, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    assert default_hub_client().token == "hf_secret_value"
    hub = FakeHub(tmp_path / "hub")
    hub.commit("open-llm-leaderboard/org__m-details", "f" * 40, {})
    with caplog.at_level(logging.DEBUG):
        ingest(store, OpenLLMLeaderboard(hub, ["org/m"], "v2"))
    assert "hf_secret_value" not in caplog.text
