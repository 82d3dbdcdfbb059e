"""Hub mirror: one atomic create_commit, loading by repo id via snapshot_download (fake client)."""

from __future__ import annotations

import fnmatch
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import publish_fit, tiny_fit
from huggingface_hub import CommitOperationAdd

from sparseeval.consume.anchorset import load_anchor_set
from sparseeval.consume.layout import AnchorSetError
from sparseeval.pipeline.mirror import push_to_hub
from sparseeval.pipeline.versions import set_latest

REPO = "acme/anchor-sets"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


class FakeHub:
    """Stands in for HfApi: commits land in a folder; downloads copy matching files."""

    def __init__(self, root: Path) -> None:
        self.root, self.commits, self.downloads = root, [], []

    def create_commit(self, repo_id, operations, *, commit_message, repo_type=None, **kw):
        ops = list(operations)
        self.commits.append(
            {"repo_id": repo_id, "ops": ops, "message": commit_message, "repo_type": repo_type}
        )
        staged = {}
        for op in ops:  # stage everything first: all or nothing
            assert isinstance(op, CommitOperationAdd)
            src = op.path_or_fileobj
            if isinstance(src, bytes):
                data = src
            elif isinstance(src, io.IOBase):
                data = src.read()
            else:
                data = Path(src).read_bytes()
            staged[op.path_in_repo] = data
        for rel, data in staged.items():
            dest = self.root / repo_id / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return {"commit": len(self.commits)}

    def snapshot_download(self, repo_id, *, repo_type=None, allow_patterns=None, **kw):
        self.downloads.append({"repo_id": repo_id, "patterns": allow_patterns, "type": repo_type})
        src = self.root / repo_id
        if not src.is_dir():
            raise FileNotFoundError(f"404 repository {repo_id} not found")
        dest = self.root.parent / "cache" / f"snap{len(self.downloads)}"
        for p in src.rglob("*"):
            rel = p.relative_to(src).as_posix()
            if p.is_file() and any(fnmatch.fnmatch(rel, pat) for pat in allow_patterns or ["*"]):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, dest / rel)
        dest.mkdir(parents=True, exist_ok=True)
        return str(dest)


@pytest.fixture(scope="module")
def fitted():
    return tiny_fit(seed=1, n_test=60, n_valid=80)


@pytest.fixture
def pushed(tmp_path, fitted):
    root = tmp_path / "published"
    for _ in range(2):
        publish_fit(root, "arc", fitted)
    set_latest(root, "arc", 2)
    hub = FakeHub(tmp_path / "hub")
    push_to_hub(root, "arc", 1, REPO, hub, update_latest=False)
    push_to_hub(root, "arc", "latest", REPO, hub)
    return root, hub


def test_push_is_one_commit_per_version_with_every_file(pushed):
    root, hub = pushed
    assert len(hub.commits) == 2
    first, second = hub.commits
    assert first["repo_type"] == "dataset" and first["repo_id"] == REPO
    paths = {op.path_in_repo for op in second["ops"]}
    manifest = json.loads((root / "arc" / "v2" / "manifest.json").read_text())
    assert {f"arc/v2/{rel}" for rel in manifest["files"]} | {"arc/v2/manifest.json"} <= paths
    assert "arc/latest" in paths
    assert "arc/latest" not in {op.path_in_repo for op in first["ops"]}
    assert "v2" in second["message"]


def test_load_from_repo_id(pushed, fitted):
    _root, hub = pushed
    m, sp, est = fitted
    aset = load_anchor_set(REPO, "arc", hub_client=hub)
    assert aset.version == 2 and aset.source == f"hf://datasets/{REPO}"
    assert hub.downloads[0]["patterns"] == ["arc/latest"]
    assert hub.downloads[1]["patterns"] == ["arc/v2/*"]
    assert all(d["type"] == "dataset" for d in hub.downloads)
    X = m.values[sp.test]
    np.testing.assert_allclose(aset.predict_matrix(X, m.item_ids), est.predict(X), atol=1e-6)
    assert load_anchor_set(f"hf://datasets/{REPO}", "arc", 1, hub_client=hub).version == 1


def test_tampered_mirror_and_missing_repo_are_refused(pushed):
    _root, hub = pushed
    weights = hub.root / REPO / "arc" / "v2" / "predictor" / "weights.npz"
    weights.write_bytes(weights.read_bytes()[:-10])
    with pytest.raises(AnchorSetError, match="checksum mismatch"):
        load_anchor_set(REPO, "arc", hub_client=hub)
    with pytest.raises(AnchorSetError, match=r"could not download.*acme/other"):
        load_anchor_set("acme/other", "arc", hub_client=hub)
    with pytest.raises(AnchorSetError, match="no published 'gsm8k'"):
        load_anchor_set(REPO, "gsm8k", hub_client=hub)
    with pytest.raises(AnchorSetError, match="no arc v9"):
        load_anchor_set(REPO, "arc", version=9, hub_client=hub)
