"""Next items and the corrected estimate (`consume.scoring.next_items`, `AnchorSet.next_items`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.consume.scoring import next_items as nx
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError, resolve_version_dir
from sparseeval.method.item_curves import fit_curves
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit

ITEM_MEAN = {"target": {"kind": "items", "definition": "mean over the 60 given items"}}


@pytest.fixture(scope="module")
def set_with_curves(tmp_path_factory, fitted):
    """The tiny fit published with its item curves; answers of every model on every item."""
    m, sp, _ = fitted
    root = tmp_path_factory.mktemp("next")
    publish_fit(root, "arc", fitted, curves=curves(fitted, True), extra=ITEM_MEAN)
    set_latest(root, "arc", 1)
    ids = [str(j) for j in range(60)]
    rows = [dict(zip(ids, (m.values[i] > 0).astype(int).tolist(), strict=True)) for i in sp.test]
    return load_anchor_set(root, "arc"), rows, m.y[sp.test], root


def curves(fitted, item_mean: bool):
    """Curves of the fit's 60 items ("0".."59", as the fixture names them)."""
    m, sp, _ = fitted
    return fit_curves(m.values[sp.train], [str(j) for j in range(60)], item_mean)


def _anchors(aset, row: dict) -> dict:
    return {i: row[i] for i in aset.items}


def test_next_items_are_neither_anchors_nor_answered_and_repeat_with_the_seed(set_with_curves):
    aset, rows, _, _ = set_with_curves
    answers = _anchors(aset, rows[0])
    first = aset.next_items(answers, 10)
    assert len(first) == len(set(first)) == 10 and not set(first) & set(aset.items)
    assert aset.next_items(answers, 10) == first  # same answers, same seed: same items
    more = aset.next_items(answers | {i: rows[0][i] for i in first}, 10)
    assert not set(more) & set(first)
    informative = aset.next_items(answers, 5, strategy="informative")
    assert len(informative) == 5 and not set(informative) & set(aset.items)
    everything = aset.next_items(answers, 1000)
    assert len(everything) == 60 - len(aset.items)  # capped at what is left
    with pytest.raises(ValueError, match="strategy"):
        aset.next_items(answers, 3, strategy="best")


def test_extra_items_correct_the_estimate_and_the_interval_narrows(set_with_curves):
    aset, rows, truth, _ = set_with_curves
    errors, widths, covered = {0: [], 20: [], 52: []}, {0: [], 20: [], 52: []}, []
    for row, true in zip(rows, truth, strict=True):
        answers = _anchors(aset, row)
        for n in errors:
            extra = {i: row[i] for i in aset.next_items(answers, n, seed=1)} if n else {}
            est = aset.predict(answers | extra)
            errors[n].append(abs(est.value - true))
            widths[n].append(est.high - est.low)
            if n:
                assert est.n_extra == n and len(est.correction["items"]) == n
                covered.append(est.low - 1e-9 <= true <= est.high + 1e-9) if n == 20 else None
            else:
                assert est.correction is None
    assert np.mean(widths[20]) > 0 and np.mean(widths[52]) == 0
    assert max(errors[52]) < 1e-9  # every item answered: the exact mean
    assert np.mean(covered) >= 0.8  # 90% intervals on 60 models
    assert np.mean(errors[20]) < np.mean(errors[0])  # never worse than the anchors alone


def test_positional_answers_and_unknown_items_leave_the_anchor_estimate(set_with_curves):
    aset, rows, _, _ = set_with_curves
    answers = _anchors(aset, rows[0])
    plain = aset.predict(answers)
    assert aset.predict([answers[i] for i in aset.items]).value == plain.value
    assert aset.predict(answers | {"not-an-item": 1}).value == plain.value


def test_a_set_without_curves_says_so_and_one_of_reported_scores_is_not_corrected(
    set_with_curves, fitted, tmp_path
):
    aset, rows, _, _ = set_with_curves
    publish_fit(tmp_path, "arc", fitted)
    set_latest(tmp_path, "arc", 1)
    old = load_anchor_set(tmp_path, "arc")
    with pytest.raises(AnchorSetError, match="no list of the benchmark's items"):
        old.next_items({}, 5)
    publish_fit(tmp_path, "gsm8k", fitted, curves=curves(fitted, False))
    set_latest(tmp_path, "gsm8k", 1)
    reported = load_anchor_set(tmp_path, "gsm8k")
    answers = _anchors(aset, rows[0])
    extra = {i: rows[0][i] for i in reported.next_items(answers, 10)}
    est = reported.predict(answers | extra)
    assert est.correction is None and "does not follow the mean over its items" in est.note
    assert reported.items_needed(answers, 0.05) is None


def test_curves_travel_as_json_and_npz_and_the_manifest_names_them(set_with_curves):
    aset, _, _, root = set_with_curves
    folder = resolve_version_dir(root, "arc", 1)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest[nx.KEY] == {"folder": "items", "n_items": 60, "item_mean": True,
                                "item_map": None}  # fmt: skip
    assert {"items/items.json", "items/curves.npz"} <= set(manifest["files"])
    with np.load(folder / "items" / "curves.npz", allow_pickle=False) as z:
        assert z["a"].shape == z["b"].shape == (60,) and (z["b"] >= 0).all()
    assert aset.known_items[: len(aset.items)] == aset.items and len(aset.known_items) == 60


def test_items_needed_shrinks_with_the_width_asked_for(set_with_curves):
    aset, rows, _, _ = set_with_curves
    answers = _anchors(aset, rows[0])
    wide, narrow = aset.items_needed(answers, 0.3), aset.items_needed(answers, 0.05)
    assert 0 <= wide <= narrow <= 60 - len(aset.items)


def test_the_difference_estimator_is_unbiased_with_wrong_curves():
    rng = np.random.default_rng(0)
    n_items, anchors = 200, np.arange(20)
    x = (rng.random(n_items) < np.linspace(0.2, 0.95, n_items)).astype(float)
    wrong = nx.ItemCurves(tuple(map(str, range(n_items))), np.full(n_items, 2.0), np.ones(n_items))
    rest = np.arange(20, n_items)
    values, inside = [], []
    for seed in range(400):
        extra = nx.choose(wrong, rest, 30, seed=seed)
        c = nx.correct(wrong, anchors, x[anchors], 0.3, extra, x[extra])  # 0.3: a poor anchor guess
        values.append(c.unbiased)
        lo, hi = c.interval(0.9)
        assert lo <= c.within(lo, hi).value <= hi
        inside.append(lo <= x.mean() <= hi)
    assert abs(np.mean(values) - x.mean()) < 0.005
    assert 0.85 <= np.mean(inside) <= 0.97


def test_t_quantiles_match_the_tables():
    assert nx.t_quantile(0.9, 10) == pytest.approx(1.812, abs=0.005)
    assert nx.t_quantile(0.9, 30) == pytest.approx(1.697, abs=0.003)
    assert nx.t_quantile(0.95, 1000) == pytest.approx(1.962, abs=0.003)


def test_the_lm_eval_task_says_the_next_step_for_a_flagged_estimate(set_with_curves, capsys):
    from dataclasses import replace

    from sparseeval.consume.lm_eval import runtime as lm_eval_runtime

    aset, rows, _, root = set_with_curves
    answers = _anchors(aset, rows[0])
    flagged = replace(aset.predict(answers), flags=("out of the training range",))
    lm_eval_runtime._note_next(str(root), "arc", 1, None, flagged, answers)
    said = capsys.readouterr().out
    assert "more items would help (flagged)" in said and "--next " in said
    assert "export-lm-eval" in said and "OUTPUT_PATH" in said
