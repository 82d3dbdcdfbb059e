"""Hub mirror: one atomic create_commit, loading by repo id via snapshot_download (fake client)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError
from sparseeval.pipeline.mirror import push_to_hub
from sparseeval.pipeline.versions import set_latest
from tests.helpers import FakeMirrorHub, publish_fit, tiny_fit

REPO = "acme/anchor-sets"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def fitted():
    return tiny_fit(seed=1, n_test=60, n_valid=80)


@pytest.fixture
def pushed(tmp_path, fitted):
    root = tmp_path / "published"
    for _ in range(2):
        publish_fit(root, "arc", fitted)
    set_latest(root, "arc", 2)
    hub = FakeMirrorHub(tmp_path / "hub")
    push_to_hub(root, "arc", 1, REPO, hub, update_latest=False)
    push_to_hub(root, "arc", "latest", REPO, hub)
    return root, hub


def test_push_is_one_commit_per_version_with_every_file(pushed):
    root, hub = pushed
    assert len(hub.commits) == 2
    first, second = hub.commits
    assert first["repo_type"] == "dataset" and first["repo_id"] == REPO
    paths = {op.path_in_repo for op in second["ops"]}
    manifest = json.loads((root / "arc" / "k8" / "v2" / "manifest.json").read_text())
    files = {f"arc/k8/v2/{rel}" for rel in manifest["files"]} | {"arc/k8/v2/manifest.json"}
    assert files <= paths and "arc/k8/latest" in paths
    assert "arc/k8/latest" not in {op.path_in_repo for op in first["ops"]}
    assert "v2" in second["message"]


def test_load_from_repo_id(pushed, fitted):
    _root, hub = pushed
    m, sp, est = fitted
    aset = load_anchor_set(REPO, "arc", hub_client=hub)
    assert aset.version == 2 and aset.source == f"hf://datasets/{REPO}"
    assert hub.downloads[0]["patterns"] == ["arc/latest", "arc/default", "arc/k*/latest"]
    assert hub.downloads[1]["patterns"] == ["arc/k8/v2/*"]
    assert all(d["type"] == "dataset" for d in hub.downloads)
    X = m.values[sp.test]
    np.testing.assert_allclose(aset.predict_matrix(X, m.item_ids), est.predict(X), atol=1e-6)
    assert load_anchor_set(f"hf://datasets/{REPO}", "arc", 1, hub_client=hub).version == 1


def test_tampered_mirror_and_missing_repo_are_refused(pushed):
    _root, hub = pushed
    weights = hub.root / REPO / "arc" / "k8" / "v2" / "predictor" / "weights.npz"
    weights.write_bytes(weights.read_bytes()[:-10])
    with pytest.raises(AnchorSetError, match="checksum mismatch"):
        load_anchor_set(REPO, "arc", hub_client=hub)
    with pytest.raises(AnchorSetError, match=r"could not download.*acme/other"):
        load_anchor_set("acme/other", "arc", hub_client=hub)
    with pytest.raises(AnchorSetError, match="no published 'gsm8k'"):
        load_anchor_set(REPO, "gsm8k", hub_client=hub)
    with pytest.raises(AnchorSetError, match="no arc v9"):
        load_anchor_set(REPO, "arc", version=9, hub_client=hub)
