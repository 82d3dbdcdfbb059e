"""The published manifest is a typed value, checked once as the set loads (issue [1/5] item 2):
readers use attributes; a bad field fails the load in one line that names it."""

from __future__ import annotations

import json

import pytest

from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.fields import Manifest, PredictorEntry, Target
from sparseeval.consume.sets.layout import MANIFEST, AnchorSetError, seal
from tests.helpers import publish_fit, tiny_fit


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    root = tmp_path_factory.mktemp("typed") / "published"
    from sparseeval.pipeline.versions import set_latest

    folder = publish_fit(root, "arc", tiny_fit())
    set_latest(root, "arc", 1, budget=8)
    return root, folder


def test_a_loaded_set_has_a_typed_manifest(published):
    root, folder = published
    m = load_anchor_set(root, "arc").manifest
    raw = json.loads((folder / MANIFEST).read_text())
    assert isinstance(m, Manifest) and m.to_dict() == raw and m == raw
    assert (m.benchmark, m.version, m.item_scale) == ("arc", 1, "binary")
    assert m.items == tuple(raw["items"]) and len(m.items) == 8
    assert isinstance(m.predictor, PredictorEntry) and m.predictor.folder == "predictor"
    assert isinstance(m.target, Target) and m.interval["level"] == raw["interval"]["level"]
    assert m["metrics"] == raw["metrics"] and "metrics" in m and m.get("nothing", 3) == 3


def test_a_bad_field_fails_the_load_naming_it(published, tmp_path):
    import shutil

    from sparseeval.pipeline.versions import set_latest

    root, _ = published
    copy = tmp_path / "published"
    shutil.copytree(root, copy)
    path = copy / "arc" / "k8" / "v1" / MANIFEST
    raw = json.loads(path.read_text())
    raw["item_scale"] = "fuzzy"
    path.write_text(json.dumps(seal(raw)))
    set_latest(copy, "arc", 1, budget=8)  # promoted as it is now: only the field is wrong
    with pytest.raises(AnchorSetError, match="manifest field item_scale must be text"):
        load_anchor_set(copy, "arc")
