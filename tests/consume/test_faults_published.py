"""Damaged published files (issue 21, item 8): each refused in one line, never a traceback.

A damage the seal would catch is made consistent here (files re-hashed, manifest resealed,
`latest` re-pinned), as a writer with a bug or a hand edit would leave it, so that what is
tested is the reader's own check of the content.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from sparseeval.consume.hashing import file_sha256
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError, seal
from sparseeval.consume.sets.suite_set import load_suite
from sparseeval.pipeline.versions import set_latest
from tests.consume.test_faults_consumer import B, predict
from tests.helpers import anchor_answers, answers_csv


@pytest.fixture
def set_and_file(arc_set, fitted, tmp_path):
    """The published ARC set and one test model's answers file."""
    return arc_set, answers_csv(tmp_path / "a.csv", anchor_answers(fitted))


def reseal(version_dir, change=lambda m: None) -> None:
    """Apply `change` to the manifest, re-hash every listed file, reseal and re-pin `latest`."""
    path = version_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    for rel in manifest.get("files", {}):
        if (version_dir / rel).is_file():
            manifest["files"][rel] = file_sha256(version_dir / rel)
    manifest = seal(manifest)
    path.write_text(json.dumps(manifest))
    pointer = version_dir.parent / "latest"
    live = json.loads(pointer.read_text())
    live["manifest_sha256"] = manifest["manifest_sha256"]
    live["promoted"] = {str(manifest.get("version")): manifest["manifest_sha256"]}
    pointer.write_text(json.dumps(live))


def refused_in_one_line(root, answers, capsys, *match: str) -> str:
    rc, out, err = predict(root, [answers], capsys)
    assert rc == 2 and out == "", (rc, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert all(m in err for m in match), err
    with pytest.raises(AnchorSetError):
        load_anchor_set(root, B)
    return err


@pytest.mark.parametrize(
    "name, text",
    [("manifest.json", "[" * 100_000), ("manifest.json", '{"a": ' * 50_000),
     ("../latest", "[" * 100_000), ("../latest", '{"version": 1e999}'),
     ("../latest", '{"version": -1}'), ("../latest", '{"version": "1"}'),
     ("../latest", '{"version": true}'), ("../latest", '{"version": 1.5}'),
     ("../latest", "[1]"), ("../latest", '{"version": 1, "promoted": {"x": "y"}}'),
     ("../latest", '{"version": ' + "9" * 5000 + "}")],
)  # fmt: skip
def test_damaged_manifest_or_latest_text(set_and_file, capsys, name, text):
    root, answers = set_and_file
    (root / B / "k8" / "v1" / name).write_text(text)
    refused_in_one_line(root, answers, capsys)


def _set(key, value):
    return lambda m: m.__setitem__(key, value)


@pytest.mark.parametrize(
    "change, match",
    [(lambda m: m.pop("items"), "no list of items"),
     (lambda m: m.pop("interval"), "no interval"),
     (_set("interval", "wide"), "no interval"),
     (lambda m: m["interval"].pop("level"), "level"),
     (lambda m: m["interval"].update(halfwidth=float("nan")), "halfwidth"),
     (lambda m: m["interval"].update(diff_halfwidth=-0.1), "diff_halfwidth"),
     (lambda m: m["interval"].update(halfwidth="0.1"), "halfwidth"),
     (lambda m: m["interval"].update(n_calibration=1e9), "n_calibration"),
     (_set("interval", {"level": 0.9, "halfwidth": 0.1, "adaptive": {"spread": {}}}),
      "adaptive widths are damaged"),
     (_set("interval", {"level": 0.9, "halfwidth": 0.1, "adaptive": {
         "spread": {"coef": [0.1], "floor": 0.01, "low": 0, "high": 1},
         "edges": [0.5], "quantiles": [1.0, float("nan")]}}), "adaptive widths are damaged"),
     (_set("interval", {"level": 0.9, "halfwidth": 0.1, "adaptive": {
         "spread": {"coef": [0.1], "floor": 0.01, "low": 0, "high": 1},
         "edges": [0.5], "quantiles": [1.0]}}), "adaptive widths are damaged"),
     (lambda m: m.pop("predictor"), "predictor folder"),
     (lambda m: m["predictor"].update(folder="/etc"), "predictor folder"),
     (lambda m: m["predictor"].update(folder="../../x/v1/predictor"), "predictor folder")],
)  # fmt: skip
def test_manifest_missing_or_damaged_parts(set_and_file, capsys, change, match):
    root, answers = set_and_file
    reseal(root / B / "k8" / "v1", change)
    refused_in_one_line(root, answers, capsys, match)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_weights_are_refused_not_printed_as_nan(set_and_file, capsys, bad):
    root, answers = set_and_file
    folder = root / B / "k8" / "v1"
    weights = folder / "predictor" / "weights.npz"
    with np.load(weights) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    name = next(iter(arrays))
    arrays[name].flat[0] = bad
    np.savez(weights, **arrays)
    reseal(folder)
    err = refused_in_one_line(root, answers, capsys, "not finite")
    assert "nan%" not in err


def test_an_intact_set_still_gives_valid_json(set_and_file, capsys):
    root, answers = set_and_file
    rc, out, _ = predict(root, [answers], capsys)
    assert rc == 0
    est = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
    assert 0 <= est["low"] <= est["value"] <= est["high"] <= 1


# -- suite members are held to the top-level predictor folder's rules ---------------------


@pytest.fixture(scope="module")
def suite_master(tmp_path_factory):
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite

    root = tmp_path_factory.mktemp("suite")
    settings = Settings.of(home=root, n_anchors=4, n_test=40, n_valid=40, n_calib=40,
                        refine_steps=0, epochs=20, patience=5, ensemble=1)  # fmt: skip
    lb = make_leaderboard(240, {"arc": 30, "gsm8k": 25}, seed=4)
    write_suite(root, fit_suite(lb, settings), settings)
    set_latest(root, "suite", 1)
    return root


@pytest.mark.parametrize(
    "folder", ["../../arc/v1/predictor", "/tmp", "members/arc/../../predictor", "", None]
)
def test_suite_member_folder_must_be_inside_the_version(suite_master, tmp_path, folder):
    root = tmp_path / "pub"
    shutil.copytree(suite_master, root)
    load_suite(root)  # the intact copy loads

    def point_elsewhere(m):
        m["suite"]["members"]["arc"]["own"]["folder"] = folder

    reseal(root / "suite" / "v1", point_elsewhere)
    with pytest.raises(AnchorSetError, match=r"arc reader folder|members\.arc\.own\.folder"):
        load_suite(root)


def test_suite_member_interval_nan_is_refused(suite_master, tmp_path):
    root = tmp_path / "pub"
    shutil.copytree(suite_master, root)

    def nan_level(m):
        m["suite"]["members"]["gsm8k"]["joint"]["interval"]["level"] = float("nan")

    reseal(root / "suite" / "v1", nan_level)
    level = r"gsm8k reader.*level|members\.gsm8k\.joint\.interval\.level"
    with pytest.raises(AnchorSetError, match=level):
        load_suite(root)
