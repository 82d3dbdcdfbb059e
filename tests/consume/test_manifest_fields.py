"""Every manifest field has a shape check, in one place (`consume.sets.fields`): damaged newer
fields (pool check, adaptive bands, item sources, coverage check) are one line naming the
field, and a field the writer adds without a check fails the schema walk below."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

import pytest

from sparseeval.consume.scoring.flags import KEY
from sparseeval.consume.sets import fields
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError, resolve_version_dir
from sparseeval.consume.sets.suite_set import load_suite
from sparseeval.method.pool import estimator_pool_check
from sparseeval.pipeline.versions import set_latest
from tests.consume.test_faults_published import reseal, suite_master  # noqa: F401
from tests.helpers import publish_fit, tiny_fit

B = "arc"


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    """A set with every optional field the writer adds: pool check, sources, target, ..."""
    root = tmp_path_factory.mktemp("fields")
    fitted = tiny_fit(seed=5)
    m, sp, est = fitted
    pool = estimator_pool_check(est, m.values[sp.train], m.values[sp.valid])
    items = [str(i) for i in est.anchor_ids_]
    sources = {i: {"task": "arc_challenge", "doc_id": n, "hash": "h", "id_kind": "lm-eval doc id"}
               for n, i in enumerate(items)}  # fmt: skip
    extra = {KEY: pool.to_dict(), "target": {"kind": "items", "definition": "mean", "note": ""},
             "provenance": {"synthetic": True}}  # fmt: skip
    publish_fit(root, B, fitted, extra=extra, item_sources=sources)
    set_latest(root, B, 1)
    return root


def _walk(schema, value, path=()):
    """Every field path of `value` the schema does not know (a map by id counts as known)."""
    unknown = []
    if not isinstance(schema, fields.Table) or not isinstance(value, dict):
        return unknown
    if not schema.fields and schema.each is None:
        return unknown  # taken as it is (settings, provenance)
    for key, sub in value.items():
        check = schema.fields.get(key, schema.each)
        if check is None:
            unknown.append(".".join((*path, key)))
        else:
            unknown += _walk(check, sub, (*path, key))
    return unknown


def _manifest(root, bench):
    return json.loads((resolve_version_dir(root, bench, 1) / "manifest.json").read_text())


def test_every_field_of_a_written_set_has_a_check(master):
    manifest = _manifest(master, B)
    assert {"pool_check", "item_sources", "target", "provenance"} <= set(manifest)
    assert "coverage_check" in manifest["interval"] and "adaptive" in manifest["interval"]
    assert _walk(fields.MANIFEST_TABLE, manifest) == []


def test_every_field_of_a_written_suite_has_a_check(suite_master):  # noqa: F811
    manifest = _manifest(suite_master, "suite")
    assert _walk(fields.MANIFEST_TABLE, manifest) == []
    member = manifest["suite"]["members"]["arc"]["own"]
    assert _walk(fields.MEMBER_READER, member | {"items": []}) == []


def test_the_walk_finds_a_field_without_a_check(master):
    manifest = _manifest(master, B)
    manifest["interval"]["new_width"] = 1.0
    manifest["shiny"] = {}
    assert _walk(fields.MANIFEST_TABLE, manifest) == ["interval.new_width", "shiny"]


def _edges(m):
    m["interval"]["adaptive"]["edges"] = [0.6, 0.3]
    m["interval"]["adaptive"]["quantiles"] = [1.0, 1.0, 1.0]


def _edge(**change):
    top = {"start": 0.7, "down": 0.0, "up": 0.1, "near": 0.03, "full": 0.75} | change
    return {"top": {k: v for k, v in top.items() if v is not None}}


def _set(path, value):
    def change(m):
        *parents, last = path.split(".")
        cur = m
        for p in parents:
            cur = cur[p]
        cur[last] = value

    return change


DAMAGES = {
    "pool threshold NaN": (_set("pool_check.threshold", math.nan), "pool_check.threshold"),
    "pool widen 0": (_set("pool_check.widen", 0.0), "pool_check.widen"),
    "pool widen -3": (_set("pool_check.widen", -3), "pool_check.widen"),
    "pool widen text": (_set("pool_check.widen", "2"), "pool_check.widen"),
    "pool low above high": (_set("pool_check.low", 2.0), "pool_check"),
    "pool rate 0": (_set("pool_check.rate", 0), "pool_check.rate"),
    "edge near above up": (_set("pool_check.edges", _edge(near=0.2)), "pool_check.edges.top"),
    "edge ramp half given": (_set("pool_check.edges", _edge(full=None)), "pool_check.edges.top"),
    "reversed band edges": (_edges, "interval.adaptive.edges"),
    "negative spread floor": (_set("interval.adaptive.spread.floor", -0.5), "spread.floor"),
    "spread low above high": (_set("interval.adaptive.spread.low", 5.0), "spread"),
    "item_sources a list": (_set("item_sources", ["a", "b"]), "item_sources"),
    "item_sources a string": (_set("item_sources", "arc_challenge"), "item_sources"),
    "item source doc_id text": (
        lambda m: m["item_sources"][m["items"][0]].update(doc_id="x"),
        "item_sources",
    ),
    "item source not an anchor": (lambda m: m["item_sources"].update(ghost={}), "item_sources"),
    "coverage_check NaN": (
        _set("interval.coverage_check.coverage_before", math.nan),
        "coverage_check.coverage_before",
    ),
    "coverage_check a string": (_set("interval.coverage_check", "ok"), "coverage_check"),
    "coverage_check action": (_set("interval.coverage_check.action", "ignored"), "action"),
    "test_coverage 3": (_set("interval.test_coverage", 3.0), "interval.test_coverage"),
    "n_anchors wrong": (_set("n_anchors", 99), "n_anchors"),
    "metrics text": (_set("metrics.test.mae", "low"), "metrics.test.mae"),
    "anchor means short": (_set("predictor.anchor_means", [0.0]), "anchor_means"),
    "split sizes negative": (_set("split_sizes.train", -1), "split_sizes.train"),
}


@pytest.mark.parametrize("name", list(DAMAGES))
def test_a_damaged_field_is_one_line_naming_it(master, tmp_path, name):
    change, field = DAMAGES[name]
    root = tmp_path / "pub"
    shutil.copytree(master, root)
    load_anchor_set(root, B)  # the intact copy loads
    reseal(resolve_version_dir(root, B, 1), change)
    with pytest.raises(AnchorSetError, match="manifest field") as info:
        load_anchor_set(root, B)
    assert field in str(info.value) and "\n" not in str(info.value)


def test_a_suite_members_pool_check_is_checked(suite_master, tmp_path):  # noqa: F811
    root = tmp_path / "pub"
    shutil.copytree(suite_master, root)

    def zero_widen(m):
        for member in m["suite"]["members"].values():
            if member["own"].get(KEY):
                member["own"][KEY]["widen"] = 0
            member["own"]["interval"]["coverage_check"] = "fine"

    reseal(root / "suite" / "v1", zero_widen)
    with pytest.raises(AnchorSetError, match=r"coverage_check|widen"):
        load_suite(root)


@pytest.mark.parametrize(
    "row, problem",
    [({"version": 1, "mae": 1.0, "n_models": 3}, None),
     ({"version": 1, "mae": math.nan, "n_models": 3}, "mae"),
     ({"version": 0, "mae": 1.0, "n_models": 3}, "version"),
     ({"version": 1, "mae": -1.0, "n_models": 3}, "mae"),
     ({"version": 1, "mae": 1.0}, "n_models"),
     ({"version": 1, "mae": 1.0, "n_models": 3, "drift": "yes"}, "drift"),
     ("row", "object")],
)  # fmt: skip
def test_drift_rows_are_checked(row, problem):
    got = fields.drift_row_problem(row)
    assert (got is None) if problem is None else (problem in got)


def test_an_intact_pool_check_round_trips(master):
    aset = load_anchor_set(master, B)
    assert aset.pool_check is not None and aset.item_sources
    assert replace(aset.pool_check, widen=2.0).widen == 2.0
