"""A set is honest on models stronger than its pool: a real `fit --out` without the strongest
models, then `sparseeval check` on them (the pool's edges, `consume.scoring.flags.Edge`)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from sparseeval.cli import main
from sparseeval.consume.answers.responses import ResponsesError
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import Edge, PoolCheck, bounds
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.method.synthetic import make_synthetic
from tests.cli.test_cli_check import write_scores, write_wide

N, STRONG = 600, 60


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """`fit --out` on all but the STRONG strongest models of a synthetic leaderboard."""
    tmp = tmp_path_factory.mktemp("edges")
    matrix = make_synthetic(N, 60, seed=3)
    order = np.argsort(matrix.y)
    weak, strong = order[:-STRONG], order[-STRONG:]
    write_wide(tmp / "wide.csv", matrix, weak)
    write_scores(tmp / "scores.csv", matrix, weak)
    (tmp / "c.toml").write_text('[predictor]\npredictor = "ridge"\n[selection]\nrefine_steps = 0\n')
    argv = ["fit", str(tmp / "wide.csv"), "--targets", str(tmp / "scores.csv"), "--anchors",
            "8", "--test", "60", "--valid", "60", "--quiet", "--config", str(tmp / "c.toml"),
            "--out", str(tmp / "fit")]  # fmt: skip
    assert main(argv) == 0
    write_wide(tmp / "strong.csv", matrix, strong)
    write_scores(tmp / "strong_scores.csv", matrix, strong)
    return tmp, matrix, strong


def test_a_set_covers_models_stronger_than_its_pool(fitted, capsys):
    tmp, matrix, strong = fitted
    scores, answers = str(tmp / "strong_scores.csv"), str(tmp / "strong.csv")
    argv = ["check", "--anchor-set", str(tmp / "fit"), "--benchmark", "wide", "--json",
            "--scores", scores, "--responses", answers]  # fmt: skip
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["n"] == STRONG and got["bias"] < -0.03  # the predictor tops out: underestimated
    assert got["coverage"] >= 0.87
    # without its top edge and saturation (the interval before them: conformal, widened beyond
    # the range) the same set's intervals cover fewer of them, below the 87% target
    aset = load_anchor_set(tmp / "fit", "wide")
    pred = aset.predict_matrix(matrix.values[strong], matrix.item_ids)
    cols = [list(map(str, matrix.item_ids)).index(i) for i in aset.items]
    old = replace(aset.pool_check, top=None, saturation=None)
    low, high, _ = bounds(old, aset.conformal, matrix.values[strong][:, cols], pred)
    without_edge = np.mean((matrix.y[strong] >= low) & (matrix.y[strong] <= high))
    assert without_edge < 0.87 and without_edge < got["coverage"]


def test_the_top_edge_widens_each_side_to_its_own_inside_its_zone():
    conf = ConformalInterval(0.9, 0.02, 0.03, 100)
    check = PoolCheck(0.0, 1.0, 0.0, (0.0,), (1.0,), -1e9, 0.02, 3.0, top=Edge(0.8, 0.01, 0.1))
    low, high, _ = bounds(check, conf, np.ones((3, 1)), [0.5, 0.85, 0.1])
    assert low == pytest.approx([0.48, 0.83, 0.08]) and high == pytest.approx([0.52, 0.95, 0.12])
    assert PoolCheck.from_dict(check.to_dict()) == check
    old = {k: v for k, v in check.to_dict().items() if k != "edges"}  # a set without edges
    assert PoolCheck.from_dict(old).top is None


def _answers(matrix, row, items) -> dict:
    """The model's 0/1 answers on `items` only (more items would correct the estimate)."""
    at = {str(i): j for j, i in enumerate(matrix.item_ids)}
    return {i: int(matrix.values[row, at[i]] > 0) for i in items}


def test_predict_and_intervals_give_one_model_the_same_bounds(fitted):
    """The interval a model gets is one function (`consume.scoring.flags.interval_of`): `predict` on
    one model and `predict_matrix` + `intervals` on the same rows agree, the top edge included."""
    tmp, matrix, strong = fitted
    aset = load_anchor_set(tmp / "fit", "wide")
    assert aset.pool_check.top is not None  # a set with an edge
    rows = np.concatenate([strong[:20], np.arange(20)])
    pred = aset.predict_matrix(matrix.values[rows], matrix.item_ids)
    low, high = aset.intervals(pred, matrix.values[rows], matrix.item_ids)
    one = [aset.predict(_answers(matrix, r, aset.items)) for r in rows]
    np.testing.assert_allclose(low, [e.low for e in one], atol=1e-6)
    np.testing.assert_allclose(high, [e.high for e in one], atol=1e-6)
    assert np.any(high - pred > aset.conformal.halfwidths(pred) + 1e-6)  # the edge widened some
    with pytest.raises(ResponsesError, match="pass the answers matrix"):
        aset.intervals(pred)  # a set with a pool check needs the answers


def test_the_reports_coverage_is_of_the_intervals_a_user_gets(fitted):
    """The report's test coverage and its bands are those of `intervals` on the test models."""
    from sparseeval.consume.sets.models import read_models

    tmp, matrix, _ = fitted
    aset = load_anchor_set(tmp / "fit", "wide")
    metrics = json.loads((aset.folder / "metrics.json").read_text())["interval"]
    test = [list(matrix.model_ids).index(m) for m in read_models(aset.folder)["test"]]
    pred = aset.predict_matrix(matrix.values[test], matrix.item_ids)
    low, high = aset.intervals(pred, matrix.values[test], matrix.item_ids)
    truth = matrix.y[test]
    coverage = float(np.mean((truth >= low - 1e-12) & (truth <= high + 1e-12)))
    assert metrics["test_coverage_published"] == pytest.approx(coverage)
    assert metrics["coverage_check"]["action"] == "kept"
    assert metrics["test_coverage"] == pytest.approx(coverage)  # the gate checked these too
    half = 100 * (high - low) / 2  # the bands' half-widths: of the same intervals
    assert np.mean([b["halfwidth"] for b in metrics["bands"]["estimate"]]) == pytest.approx(
        np.mean([half[(pred >= b["from"] / 100 - 1e-9) & (pred <= b["to"] / 100 + 1e-9)].mean()
                 for b in metrics["bands"]["estimate"]]), rel=1e-6)  # fmt: skip
