"""`fit --out` sets carry the pool check, flags and their models; `sparseeval check` scores
models a set never saw against their reported scores and refuses the ones it saw."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from sparseeval.cli import main
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.models import read_models
from sparseeval.method.synthetic import make_synthetic
from tests.helpers import quick_config

N_FIT, N_NEW = 160, 40


def write_wide(path, matrix, rows, items=None) -> None:
    values = (matrix.values[rows] > 0).astype(int)
    names = [str(i) for i in matrix.item_ids]
    frame = pl.DataFrame(values, schema=names).select(items or names)
    pl.DataFrame({"model": matrix.model_ids[rows]}).hstack(frame).write_csv(path)


def write_scores(path, matrix, rows) -> None:
    pl.DataFrame({"model": matrix.model_ids[rows], "score": 100 * matrix.y[rows]}).write_csv(path)


def check_argv(tmp, name: str, matrix, rows, items=None) -> list[str]:
    """`check` of the fitted set on `rows`' answers (`{name}.csv`) and scores."""
    write_wide(tmp / f"{name}.csv", matrix, rows, items)
    write_scores(tmp / f"{name}_scores.csv", matrix, rows)
    return ["check", "--anchor-set", str(tmp / "fit"), "--benchmark", "wide", "--scores",
            str(tmp / f"{name}_scores.csv"), "--responses", str(tmp / f"{name}.csv")]  # fmt: skip


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A real `fit --out` on the first N_FIT models of a synthetic leaderboard."""
    tmp = tmp_path_factory.mktemp("check")
    matrix = make_synthetic(N_FIT + N_NEW, 30, seed=3)
    fit_rows = np.arange(N_FIT)
    write_wide(tmp / "wide.csv", matrix, fit_rows)
    write_scores(tmp / "scores.csv", matrix, fit_rows)
    argv = ["fit", str(tmp / "wide.csv"), "--targets", str(tmp / "scores.csv"), "--anchors",
            "6", "--test", "30", "--valid", "30", "--config", quick_config(tmp), "--quiet",
            "--out", str(tmp / "fit")]  # fmt: skip
    assert main(argv) == 0
    return tmp, matrix


def test_a_fit_out_set_carries_the_pool_check_flags_and_its_models(fitted):
    tmp, matrix = fitted
    aset = load_anchor_set(tmp / "fit", "wide")
    assert aset.pool_check is not None and aset.pool_check.n_models > 0
    inputs = json.loads((aset.folder / "report_inputs.json").read_text())
    models = read_models(aset.folder)
    sizes = aset.manifest["split_sizes"]
    assert len(inputs["test_flag_range"]) == len(inputs["test_pred"]) == len(models["test"])
    assert {r: len(models[r]) for r in ("test", "train", "valid", "calibration")} == sizes
    assert set(models["test"]).isdisjoint(models["train"])
    seen = {m for role in models.values() for m in role}
    assert seen == set(matrix.model_ids[:N_FIT].tolist())
    # the report's test models are the listed ones
    rows = [list(matrix.model_ids).index(m) for m in models["test"]]
    pred = aset.predict_matrix(matrix.values[rows], matrix.item_ids)
    assert sorted(pred) == pytest.approx(sorted(inputs["test_pred"]))
    assert len(inputs["test_flag_pattern"]) == len(rows)


def test_check_scores_new_models_and_refuses_the_pool(fitted, capsys):
    tmp, matrix = fitted
    new = np.arange(N_FIT, N_FIT + N_NEW)
    seen = np.array([0, 1])  # two models of the fit's pool
    items = list(reversed([str(i) for i in matrix.item_ids]))  # any column order
    argv = check_argv(tmp, "new", matrix, np.concatenate([new, seen]), items)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"wide v1: {N_NEW} new model(s) scored" in out
    assert "2 refused: in the set's train/test pool (it saw them)" in out
    assert "MAE " in out and "90% interval coverage" in out and "mean signed error" in out
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    aset = load_anchor_set(tmp / "fit", "wide")
    pred = aset.predict_matrix(matrix.values[new], matrix.item_ids)
    assert got["n"] == N_NEW and got["mae"] == pytest.approx(np.abs(pred - matrix.y[new]).mean())
    assert got["bias"] == pytest.approx((pred - matrix.y[new]).mean())
    kinds = (got["n_range"], got["n_pattern"], got["n_saturated"])  # a model may have several
    assert 0 <= got["coverage"] <= 1 and max(kinds) <= got["n_flagged"] <= sum(kinds)
    assert sorted(got["in_pool"]) == sorted(matrix.model_ids[seen].tolist())


def test_check_reads_long_answers_and_says_what_it_skips(fitted, capsys):
    tmp, matrix = fitted
    rows = [(m, str(i), int(v > 0)) for m, r in zip(matrix.model_ids[N_FIT:], matrix.values[N_FIT:],
            strict=True) for i, v in zip(matrix.item_ids, r, strict=True)]  # fmt: skip
    pl.DataFrame(rows, schema=["model", "item", "correct"], orient="row").write_csv(tmp / "l.csv")
    scores = tmp / "few_scores.csv"
    scores.write_text("model,benchmark,score\n" + "".join(
        f"{m},wide,{y:.4f}\n" for m, y in zip(matrix.model_ids[N_FIT:-1], matrix.y[N_FIT:-1],
                                             strict=True)))  # fmt: skip
    argv = ["check", "--anchor-set", str(tmp / "fit"), "--benchmark", "wide", "--scores",
            str(scores), "--responses", str(tmp / "l.csv")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"{N_NEW - 1} new model(s) scored" in out and "scores read as fractions" in out
    assert "1 skipped: no reported score" in out
    bad = tmp / "bad_scores.csv"
    bad.write_text("model,value\nx,1\n")
    assert main([*argv[:-4], "--scores", str(bad), "--responses", str(tmp / "l.csv")]) == 2
    assert "needs a score column" in capsys.readouterr().err


def test_check_reads_the_leaderboards_scores_file(fitted, capsys):
    """The Open LLM Leaderboard's scores file names its models in `name` (its header, as in
    metabench's `open-llm-leaderboard.csv`: name,link,complete,avg,arc,hellaswag,...), one
    column per benchmark: `check --scores` reads it as `ingest scores:` does."""
    tmp, matrix = fitted
    new = np.arange(N_FIT, N_FIT + N_NEW)
    write_wide(tmp / "lb_new.csv", matrix, new)
    pl.DataFrame({
        "name": matrix.model_ids[new], "link": "https://huggingface.co/x", "complete": True,
        "avg": 50.0, "wide": 100 * matrix.y[new],
    }).write_csv(tmp / "leaderboard.csv")  # fmt: skip
    scores, answers = str(tmp / "leaderboard.csv"), str(tmp / "lb_new.csv")
    argv = ["check", "--anchor-set", str(tmp / "fit"), "--benchmark", "wide", "--scores",
            scores, "--responses", answers, "--json"]  # fmt: skip
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["n"] == N_NEW


def test_check_on_the_sets_own_models_says_to_hold_models_out(fitted, capsys):
    """A user who fit on all their data has no model the set never saw: check says so and how
    to hold models out, and exits 2 (nothing checked)."""
    tmp, matrix = fitted
    argv = check_argv(tmp, "all", matrix, np.arange(N_FIT))
    assert main(argv) == 2
    out = capsys.readouterr().out
    assert f"{N_FIT} refused: in the set's train/test pool" in out
    assert "a set fit on all your data has no models it never saw" in out
    assert "Hold models out: fit on part of them (sparseeval fit TRAIN.csv" in out
    assert "pass --scores and --responses of models outside the pool" in out
    assert main([*argv, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["n"] == 0
