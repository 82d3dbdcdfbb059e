"""Suite members held to a benchmark set's standard: the same pool check with its top edge,
the gate's coverage check of each reader on the interval a user gets, one verdict per figure."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from sparseeval.consume.sets.suite_set import SUITE, joint_item, load_suite
from sparseeval.method.synthetic import make_leaderboard
from sparseeval.pipeline.records import GateResult
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_publish import with_member_checks, write_suite
from sparseeval.pipeline.suite_recipe import common_models, fit_suite
from sparseeval.pipeline.versions import set_latest

ITEMS = {"arc": 60, "gsm8k": 50, "mmlu": 70}
SETTINGS = dict(n_anchors=8, n_test=60, n_valid=60, n_calib=60, refine_steps=2, epochs=60,
                patience=10, ensemble=1)  # fmt: skip


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("suite-honest")
    lb = make_leaderboard(360, ITEMS, seed=4)
    settings = Settings.of(home=tmp, **SETTINGS)
    fit = fit_suite(lb, settings)
    folder = write_suite(tmp, fit, settings)
    set_latest(tmp, SUITE, 1)
    return tmp, folder, fit, common_models(lb)


def test_every_suite_reader_has_the_pool_check_and_top_edge_of_a_benchmark_set(published):
    tmp, _, _, _ = published
    suite = load_suite(tmp)
    readers = [suite.average, *suite.joint.values(), *suite.own.values()]
    assert all(r.pool_check is not None and r.pool_check.top is not None for r in readers)
    # the suite's readers keep the edge as a step (method.pool.SUITE_RAMP): full up at its start
    tops = [r.pool_check.top for r in readers]
    assert all(t.upper(np.array([t.start]))[0] == pytest.approx(t.up) for t in tops)


def test_each_members_coverage_check_is_of_the_intervals_a_user_gets(published):
    tmp, folder, fit, aligned = published
    suite = load_suite(tmp)
    ids = list(aligned["arc"].model_ids)
    rows = np.array([ids.index(m) for m in fit.test_ids])
    values = np.hstack([aligned[b].values[rows] for b in ITEMS])
    joint_ids = [joint_item(b, i) for b in ITEMS for i in aligned[b].item_ids]
    members = json.loads((folder / "manifest.json").read_text())["suite"]["members"]
    for b in ITEMS:
        for kind, reader, X, item_ids in (
            ("joint", suite.joint[b], values, joint_ids),
            ("own", suite.own[b], aligned[b].values[rows], aligned[b].item_ids),
        ):
            pred = reader.predict_matrix(X, item_ids)
            low, high = reader.intervals(pred, X, item_ids)
            truth = fit.test_true[b]
            coverage = float(np.mean((truth >= low - 1e-12) & (truth <= high + 1e-12)))
            check = members[b][kind]["interval"]["coverage_check"]
            published_figure = check.get("coverage_after", check["coverage_before"])
            assert published_figure == pytest.approx(coverage), (b, kind)
    gate = with_member_checks(GateResult(True, "no live suite to compare with"), folder)
    assert set(gate.figures["member_coverage"]) == {f"{b}/{k}" for b in ITEMS
                                                    for k in ("joint", "own")}  # fmt: skip


def test_the_suite_reports_trust_section_gives_each_figure_one_verdict(published):
    _, folder, _, _ = published
    md = (folder / "report.md").read_text()
    trust = md[md.index("## Should I trust it?") : md.index("## Use it")]
    table = md[md.index("## Per benchmark") : md.index("## Metrics")]
    assert "Each benchmark's readers were checked like the average" in trust
    said = {}  # each member figure: the verdict words the report puts next to it
    for text in (trust, table):
        for figure, words in re.findall(r"(\d+\.\d)% \(((?:BELOW|above|consistent)[^)]*)\)", text):
            said.setdefault(figure, set()).add(words)
    assert said and all(len(v) == 1 for v in said.values()), said
