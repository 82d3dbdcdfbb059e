"""Saturation seen and said: where every anchor (but one) is right, or wrong, the anchors stop
telling models apart; the estimate is flagged, its interval opened on that side, and `check`
counts such models and the misses it flagged (`flags.Saturation`, `scoring.check`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.cli import main
from sparseeval.consume.scoring.flags import (
    SATURATED_BOTTOM,
    SATURATED_TOP,
    PoolCheck,
    Saturation,
    interval_of,
)
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.models import read_models
from sparseeval.method.pool import fit_saturation
from sparseeval.method.synthetic import make_synthetic
from tests.cli.test_cli_check import write_scores, write_wide
from tests.helpers import quick_config

N_FIT, N_NEW = 200, 30


def strict(text: str) -> dict:
    """JSON as a strict parser reads it: NaN or Infinity is an error."""

    def refuse(name: str):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A real `fit --out` (target: the items' mean) on the first N_FIT models."""
    tmp = tmp_path_factory.mktemp("saturation")
    matrix = make_synthetic(N_FIT + N_NEW, 30, seed=4)
    write_wide(tmp / "wide.csv", matrix, np.arange(N_FIT))
    argv = ["fit", str(tmp / "wide.csv"), "--anchors", "6", "--test", "30", "--valid", "30",
            "--config", quick_config(tmp), "--quiet", "--out", str(tmp / "fit")]  # fmt: skip
    assert main(argv) == 0
    return tmp, matrix, load_anchor_set(tmp / "fit", "wide")


def test_every_anchor_right_is_flagged_and_opens_above_the_best_training_score(fitted):
    _, matrix, aset = fitted
    sat = aset.pool_check.saturation
    assert isinstance(sat, Saturation) and sat.bottom < sat.top
    train = [list(matrix.model_ids).index(m) for m in read_models(aset.folder)["train"]]
    assert sat.best == pytest.approx(matrix.y[train].max())
    top = aset.predict([1] * len(aset.items))
    assert top.saturated == "top" and top.high >= sat.best
    line = next(f for f in top.flags if f.startswith(SATURATED_TOP))
    assert "upper end opens to" in line
    assert "More items, or a set fit on stronger models, would narrow it" in line
    assert top.high == 1.0  # nothing in the pool bounds a model stronger than its best
    assert len(sat.rates) == len(aset.items) and all(0 < r < 1 for r in sat.rates)
    assert top.to_dict()["saturated"] == "top"
    bottom = aset.predict([0] * len(aset.items))
    assert bottom.saturated == "bottom" and bottom.low <= sat.worst
    assert any(f.startswith(SATURATED_BOTTOM) for f in bottom.flags)
    middle = aset.predict([1, 0] * (len(aset.items) // 2))
    assert middle.saturated == "" and middle.high < top.high


def test_saturation_is_fitted_from_the_reader_of_the_anchors():
    def share(X):  # the share of anchors right
        return (np.asarray(X).mean(1) + 1) / 2

    sat = fit_saturation(share, 4, [0.2, 0.5, 0.9])
    assert (sat.top, sat.peak, sat.bottom, sat.trough) == (0.75, 0.75, 0.25, 0.0)
    assert (sat.ceiling, sat.floor, sat.best, sat.worst) == (1.0, 0.2, 0.9, 0.2)
    assert fit_saturation(share, 1, [0.5]) is None

    def heavy(X):  # anchor 0 weighs as much as the other three together
        return (np.asarray(X) @ [3.0, 1.0, 1.0, 1.0] + 6) / 12

    sat = fit_saturation(heavy, 4, [0.2, 0.9])  # the typical anchor wrong, not the heavy one
    assert (sat.top, sat.bottom) == (10 / 12, 2 / 12) and heavy(-np.eye(4)[:1] * 2 + 1) < sat.top
    assert Saturation.from_dict(json.loads(json.dumps(sat.to_dict()))) == sat


def test_the_zone_starts_where_the_pools_strongest_models_are_read():
    """The pool's strongest models read as its middle ones (metabench ARC: leaderboard 75-78
    read 70-73 as its 72% models): from there on the anchors cannot tell a model from them,
    nor from one stronger still."""
    rng = np.random.default_rng(0)
    y = np.sort(rng.uniform(0.2, 0.9, 1000))
    pred = np.minimum(y, 0.7) + rng.normal(0, 0.005, 1000)  # the reader flattens above 0.7
    sat = fit_saturation(lambda X: (np.asarray(X).mean(1) + 1) / 2, 20, y, pred)
    strongest = pred[-10:]
    assert sat.top <= np.quantile(strongest, 0.1) + 1e-12 and sat.top == sat.peak
    assert 0.68 < sat.top < 0.7 and sat.bottom == pytest.approx(0.05)  # all wrong but one
    assert sat.at_top(strongest).mean() >= 0.9 and not sat.at_top(pred[y < 0.6]).any()
    low, high = sat.opened(np.array([0.5, 0.7]), np.array([0.45, 0.66]), np.array([0.55, 0.74]))
    assert high.tolist() == [0.55, 1.0] and low.tolist() == [0.45, 0.66]


def test_check_counts_saturated_models_and_flagged_misses_in_strict_json(fitted, capsys):
    tmp, matrix, aset = fitted
    new = np.arange(N_FIT, N_FIT + N_NEW)
    write_wide(tmp / "new.csv", matrix, new, list(aset.items))
    write_scores(tmp / "new_scores.csv", matrix, new)
    with open(tmp / "new.csv", "a") as f:  # one model above everything: every anchor right
        f.write("ceiling," + ",".join("1" for _ in aset.items) + "\n")
    with open(tmp / "new_scores.csv", "a") as f:
        f.write("ceiling,100\n")
    argv = ["check", "--anchor-set", str(tmp / "fit"), "--benchmark", "wide", "--scores",
            str(tmp / "new_scores.csv"), "--responses", str(tmp / "new.csv")]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    got = strict(capsys.readouterr().out)
    assert got["n"] == N_NEW + 1 and got["n_saturated"] >= 1
    assert 0 <= got["n_missed_flagged"] <= got["n_missed"] <= got["n"]
    if not got["n_flagged"]:
        assert got["coverage_flagged"] is None
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "at the top or bottom of what these anchors can tell" in out
    assert f"missed {got['n_missed']} (reported score outside the interval)" in out


def test_check_on_a_full_width_table_scores_the_anchors_unless_asked(fitted, capsys):
    """Every item answered: `predict` would read the items' own mean (MAE 0, zero-width
    intervals); `check` tests the anchors' estimate and says so, `--extra-items` the other."""
    tmp, matrix, _ = fitted
    new = np.arange(N_FIT, N_FIT + N_NEW)
    write_wide(tmp / "full.csv", matrix, new)
    write_scores(tmp / "full_scores.csv", matrix, new)
    files = ["--scores", str(tmp / "full_scores.csv"), "--responses", str(tmp / "full.csv")]
    argv = ["check", "--anchor-set", str(tmp / "fit"), "--benchmark", "wide", "--json", *files]
    assert main(argv) == 0
    anchors = strict(capsys.readouterr().out)
    assert anchors["scored_from"] == "anchors" and anchors["n_extra_ignored"] == N_NEW
    assert anchors["mae"] > 0.005
    assert any("scored from the anchors' answers alone" in n for n in anchors["notes"])
    assert main([*argv, "--extra-items"]) == 0
    extra = strict(capsys.readouterr().out)
    assert extra["scored_from"] == "anchors+extra" and extra["mae"] < 1e-6
    assert extra["coverage"] == 1.0  # zero-width intervals at the truth count as covered


def _check_with_rates(rates) -> PoolCheck:
    """Six anchors: three easy for every model (a = 2), three hard below the top (a = -1);
    the pool's strongest models right on the hard ones too (`rates`, or None: an older set)."""
    sat = Saturation(top=0.9, peak=0.9, bottom=0.1, trough=0.0, ceiling=1.0, floor=0.1,
                     best=0.95, worst=0.1, rates=rates)  # fmt: skip
    return PoolCheck(low=0.05, high=0.95, margin=0.0, a=(2.0,) * 3 + (-1.0,) * 3, b=(1.0,) * 6,
                     threshold=-3.0, rate=0.02, widen=3.0, saturation=sat)  # fmt: skip


def test_an_answer_pattern_the_pools_strongest_share_is_flagged_below_the_zone():
    """Metabench MMLU's strongest held-out model (87.5) answered 46 of 50 anchors right and was
    read 72.6, below the zone; its answers were likelier under the pool's top 0.5%'s right
    rates than at its own estimate (`bench/above_pool.py`): it is flagged, not widened."""
    check = _check_with_rates((0.95, 0.95, 0.6, 0.9, 0.9, 0.9))
    middle, strong = [1, 1, 1, -1, -1, -1], [1, 1, -1, 1, 1, 1]  # hard anchors right
    assert check.like_top(np.array([middle, strong], float), [0.5, 0.6]).tolist() == [False, True]
    (line,) = check.reasons(strong, 0.6)
    assert line.startswith(SATURATED_TOP) and "as likely from the pool's strongest" in line
    assert "More items, or a set fit on stronger models, would tell" in line
    assert check.reasons(middle, 0.5) == ()
    # said, not widened: the interval follows the estimate alone, with or without the rates
    older = _check_with_rates(None)
    assert older.reasons(strong, 0.6) == () and not older.like_top([strong], [0.6]).any()

    class Flat:  # a conformal interval of +-0.02 everywhere
        edges = ()

        def halfwidths(self, v):
            return np.full(np.shape(v), 0.02)

    conformal = Flat()
    assert np.array_equal(interval_of(check, conformal, [0.6])[1],
                          interval_of(older, conformal, [0.6])[1])  # fmt: skip
    sat = Saturation.from_dict(json.loads(json.dumps(check.saturation.to_dict())))
    assert sat == check.saturation and PoolCheck.from_dict(check.to_dict()) == check


def test_checks_flag_line_has_no_nan_when_every_model_was_flagged():
    from sparseeval.consume.scoring.check import CheckResult

    every = CheckResult("mmlu", 1, 0.9, n=10, mae=0.1, coverage=0.9, bias=-0.1, n_flagged=10,
                        n_saturated=10, coverage_flagged=0.9)  # fmt: skip
    line = next(x for x in every.lines() if x.startswith("flagged"))
    assert line.endswith("coverage of the flagged 90.0% (every model was flagged)")
    some = CheckResult("mmlu", 1, 0.9, n=10, mae=0.1, coverage=0.9, bias=-0.1, n_flagged=4,
                       coverage_flagged=0.75, coverage_others=1.0)  # fmt: skip
    assert "nan" not in " ".join(some.lines() + every.lines())
    assert "of the flagged 75.0%, of the others 100.0%" in " ".join(some.lines())


def test_graded_answers_and_missing_anchors_are_weighed_as_the_pattern_flag_weighs_them():
    """A graded answer (2 * score - 1) counts as its score's share of a right answer; an
    unanswered anchor (NaN) counts for neither side (as `person_fit`)."""
    check = _check_with_rates((0.95, 0.95, 0.6, 0.9, 0.9, 0.9))
    graded = [1.0, 1.0, -1.0, 0.9, 0.9, 0.9]  # the hard anchors at 95% credit
    partly = [1.0, 1.0, -1.0, np.nan, np.nan, 0.9]
    assert check.like_top(np.array([graded, partly]), [0.6, 0.6]).tolist() == [True, True]
    assert check.like_top([[1.0, 1.0, 1.0, -0.9, -0.9, -0.9]], [0.5]).tolist() == [False]


def test_a_manifest_with_malformed_rates_is_refused_in_one_line():
    from sparseeval.consume.sets.fields import POOL_CHECK, check_fields, listing, table, text
    from sparseeval.consume.sets.layout import AnchorSetError

    schema = table({"items": listing(text()), "pool_check": POOL_CHECK}, ("pool_check",))
    check = _check_with_rates((0.95, 0.95, 0.6, 0.9, 0.9, 0.9)).to_dict()
    items = [f"q{j}" for j in range(6)]
    check_fields("set", {"items": items, "pool_check": check}, schema)  # as written: fine
    for bad in ([0.9] * 5, [0.9] * 5 + [1.5], [0.9] * 5 + ["x"]):
        broken = check | {"saturation": check["saturation"] | {"rates": bad}}
        with pytest.raises(AnchorSetError, match=r"pool_check\.saturation\.rates"):
            check_fields("set", {"items": items, "pool_check": broken}, schema)
