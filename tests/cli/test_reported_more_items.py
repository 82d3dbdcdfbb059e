"""More items on a set fit on reported scores (issue [2/5], item 3): where the reported score
is a function of the items (every item of the benchmark held, as Hub details and lm-eval runs
hold them: a straight line of their mean, or a macro mean over their subjects), answers on
more items correct the estimate as on a set fit on the items' mean;
where it is not (metabench's reduced tables: their best line misses the leaderboard by
1.7-3.4 points), the set says why more items cannot help."""

from __future__ import annotations

from argparse import Namespace

import numpy as np
import polars as pl
import pytest

from sparseeval.cli import main
from sparseeval.cli.consumer import suggestion
from sparseeval.consume.sets.anchorset import load_anchor_set

N_ITEMS = 60


def _answers(rng, n_models: int) -> np.ndarray:
    """0/1 answers of models of spread ability on items of spread difficulty."""
    ability = rng.normal(0, 1.2, n_models)[:, None]
    difficulty = np.linspace(-1.5, 1.5, N_ITEMS)[None, :]
    return (rng.random((n_models, N_ITEMS)) < 1 / (1 + np.exp(difficulty - ability))).astype(int)


# MMLU-like: items `subject:index` in subjects of unequal size (4 + 8 + 16 + 32 = N_ITEMS)
SUBJECTS = np.repeat(np.arange(4), [4, 8, 16, 32])
SUBJECT_ITEMS = [f"s{g}:{j}" for j, g in enumerate(SUBJECTS)]


def _macro_mean(values: np.ndarray) -> np.ndarray:
    """The mean over subjects of each subject's accuracy (MMLU's reported score)."""
    return np.mean([values[:, np.equal(SUBJECTS, g)].mean(1) for g in range(4)], axis=0)


def _fit(tmp_path, scores_of, items=None) -> tuple:
    """`fit --targets` on 300 models whose reported scores are `scores_of(answers)` (0-1);
    the set and 40 new models' answers with their reported scores."""
    rng = np.random.default_rng(0)
    values = _answers(rng, 300)
    models = [f"org/m{i}" for i in range(300)]
    items = items or [f"q{j}" for j in range(N_ITEMS)]
    pl.DataFrame({"model": models}).hstack(pl.DataFrame(values, schema=items)).write_csv(
        tmp_path / "wide.csv"
    )
    pl.DataFrame({"model": models, "score": 100 * scores_of(values)}).write_csv(
        tmp_path / "scores.csv"
    )
    argv = ["fit", str(tmp_path / "wide.csv"), "--targets", str(tmp_path / "scores.csv"),
            "--anchors", "8", "--quiet", "--test", "0.2", "--valid", "0.2", "--out",
            str(tmp_path / "fit")]  # fmt: skip
    assert main(argv) == 0
    new = _answers(rng, 40)
    rows = [dict(zip(items, map(int, row), strict=True)) for row in new]
    return load_anchor_set(tmp_path / "fit", "wide"), rows, scores_of(new)


def _more_items_help(aset, rows, truth) -> None:
    """30 random extra items lower the MAE; every item answered gives the score itself."""
    alone, more, everything = [], [], []
    for row, true in zip(rows, truth, strict=True):
        anchors = {i: row[i] for i in aset.items}
        alone.append(abs(aset.predict(anchors).value - true))
        extra = {i: row[i] for i in aset.next_items(anchors, 30, seed=1)}
        est = aset.predict(anchors | extra)
        assert est.n_extra == 30 and est.correction is not None
        more.append(abs(est.value - true))
        full = aset.predict(row)
        everything.append(abs(full.value - true))
        assert full.high - full.low < 1e-6  # every item answered: the score itself
    assert max(everything) < 1e-6
    assert np.mean(more) < np.mean(alone)
    anchors = {i: rows[0][i] for i in aset.items}
    assert 0 < aset.items_needed(anchors, 0.02) <= N_ITEMS - len(aset.items)


def test_more_items_correct_a_reported_score_that_follows_the_items(tmp_path):
    aset, rows, truth = _fit(tmp_path, lambda v: 0.1 + 0.8 * v.mean(1))  # e.g. a rescaled mean
    line = aset.curves.item_map
    assert line.usable and line.a == pytest.approx(0.1) and line.b == pytest.approx(0.8)
    assert aset.curves.weights is None
    _more_items_help(aset, rows, truth)


def test_more_items_correct_a_macro_mean_over_subjects(tmp_path):
    """MMLU's reported score is the mean of its 57 subjects' accuracies (benchmarks.py: "mean
    of 57 subject accuracies"), no straight line of the mean over its items: weighted by
    subject (`group_weights`, items named `subject:index`), it is that line exactly."""
    aset, rows, truth = _fit(tmp_path, _macro_mean, SUBJECT_ITEMS)
    line = aset.curves.item_map  # on the subject-weighted mean: the identity
    assert line.usable and line.b == pytest.approx(1) and line.rmse < 1e-9
    w = aset.curves.weights
    assert w is not None and w.mean() == pytest.approx(1)
    assert w[np.equal(SUBJECTS, 0)][0] == pytest.approx(N_ITEMS / (4 * 4))  # the smallest subject
    _more_items_help(aset, rows, truth)
    # the same scores read as a plain mean of the items miss: the subjects are what make it
    values = np.array([[row[i] for i in SUBJECT_ITEMS] for row in rows])
    assert np.sqrt(np.mean((values.mean(1) - _macro_mean(values)) ** 2)) > 0.02


def test_a_reported_score_that_does_not_follow_the_items_says_why(tmp_path):
    noise = np.random.default_rng(1).normal(0, 0.03, 300)  # 3 points off any line of the mean
    aset, rows, _ = _fit(tmp_path, lambda v: np.clip(v.mean(1) + noise[: len(v)], 0, 1))
    line = aset.curves.item_map
    assert not line.usable and line.rmse > 0.02
    anchors = {i: rows[0][i] for i in aset.items}
    extra = {i: rows[0][i] for i in aset.next_items(anchors, 10)}
    est = aset.predict(anchors | extra)
    assert est.correction is None and "does not follow the mean over its items" in est.note
    args = Namespace(max_width=0.001, responses=["a.csv"], budget=None,
                     anchor_set=str(tmp_path / "fit"))  # fmt: skip
    said = suggestion(aset, anchors, aset.predict(anchors), args)["line"]
    assert said.startswith("more items cannot help (wider than 0.001 points)")
    assert f"misses the training models' scores by {100 * line.rmse:.1f} points (RMS)" in said
    assert "the data hold only some of the benchmark's items" in said


def test_item_weights_that_cannot_be_a_mean_are_refused(tmp_path):
    from sparseeval.consume.scoring.next_items import CurvesError, ItemCurves

    a, b = np.zeros(3), np.ones(3)
    for bad in ([1.0, 1.0], [1.0, 0.0, 2.0], [1.0, np.nan, 2.0]):
        with pytest.raises(CurvesError, match="item weights must be 3 positive numbers"):
            ItemCurves(("s0:0", "s0:1", "s1:0"), a, b, weights=np.array(bad))
    curves = ItemCurves(("s0:0", "s0:1", "s1:0"), a, b, weights=np.array([0.75, 0.75, 1.5]))
    curves.save(tmp_path)
    assert np.array_equal(ItemCurves.load(tmp_path).weights, curves.weights)
    np.savez(tmp_path / "curves.npz", a=a, b=b, w=np.array([1.0, -1.0, 3.0]))  # hand-edited
    with pytest.raises(CurvesError, match="item weights"):
        ItemCurves.load(tmp_path)
