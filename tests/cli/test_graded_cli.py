"""A graded benchmark end to end: `fit` on a wide table of scores in [0, 1] publishes a set
whose manifest says `item_scale: graded`; `predict` reads graded answers with it, and a binary
set refuses graded answers in one line (exit 2)."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from sparseeval.cli import main
from sparseeval.consume.answers.responses import ResponsesError
from sparseeval.consume.sets.anchorset import load_anchor_set
from tests.helpers import quick_config


def graded_csv(path, n_models: int = 160, n_items: int = 30, seed: int = 0):
    """A wide table of graded scores: a logistic item curve per item, beta noise around it."""
    rng = np.random.default_rng(seed)
    p = 1 / (1 + np.exp(-(1.5 * rng.normal(size=(n_models, 1)) - rng.normal(size=(1, n_items)))))
    scores = np.round(rng.beta(8 * p + 1e-3, 8 * (1 - p) + 1e-3), 3)
    frame = pl.DataFrame({"model": [f"org/m{i}" for i in range(n_models)]})
    frame.hstack(pl.DataFrame(scores, schema=[f"q{j}" for j in range(n_items)])).write_csv(path)
    return scores


def answers(path, template, row: dict, threshold: bool = False) -> None:
    items = [r["item"] for r in csv.DictReader(template.open())]
    said = {i: int(row[i] >= 0.5) if threshold else row[i] for i in items}
    path.write_text("item,correct\n" + "".join(f"{i},{v}\n" for i, v in said.items()))


def test_a_graded_benchmark_is_fit_published_and_scored(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scores = graded_csv(tmp_path / "judged.csv")
    argv = ["fit", "judged.csv", "--anchors", "6", "--config", quick_config(tmp_path), "--test",
            "40", "--valid", "40", "--out", "out", "--quiet"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    aset = load_anchor_set(tmp_path / "out", "judged")
    assert aset.manifest["item_scale"] == "graded" and aset.graded
    where = ["--anchor-set", "out", "--benchmark", "judged"]
    assert main(["anchors", *where, "--template", "t.csv"]) == 0
    row = dict(zip([f"q{j}" for j in range(scores.shape[1])], scores[7].tolist(), strict=True))
    answers(tmp_path / "a.csv", tmp_path / "t.csv", row)
    capsys.readouterr()
    assert main(["predict", *where, "--responses", "a.csv", "--json"]) == 0
    graded = json.loads(capsys.readouterr().out)
    assert abs(graded["value"] - scores[7].mean()) < 0.15
    answers(tmp_path / "b.csv", tmp_path / "t.csv", row, threshold=True)  # 0/1: taken too
    assert main(["predict", *where, "--responses", "b.csv", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] != pytest.approx(graded["value"])
    older = replace(
        aset, manifest={k: v for k, v in aset.manifest.to_dict().items() if k != "item_scale"}
    )
    assert not older.graded  # a set written before graded items is binary
    with pytest.raises(ResponsesError, match="this set's items are binary"):
        older.predict({i: row[i] for i in aset.items})


def test_a_binary_set_refuses_graded_answers_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["fit", "--synthetic", "200", "30", "--anchors", "5", "--config",
            quick_config(tmp_path), "--test", "40", "--valid", "40", "--out", "out",
            "--quiet"]  # fmt: skip
    assert main(argv) == 0
    where = ["--anchor-set", "out", "--benchmark", "synthetic"]
    assert main(["anchors", *where, "--template", "t.csv"]) == 0
    items = [r["item"] for r in csv.DictReader((tmp_path / "t.csv").open())]
    (tmp_path / "t.csv").write_text("item,correct\n" + "".join(
        f"{i},{0.43 if j == 0 else 1}\n" for j, i in enumerate(items)))  # fmt: skip
    capsys.readouterr()
    assert main(["predict", *where, "--responses", "t.csv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: answer for {items[0]} is a graded score ('0.43'), but this set's items are"
        " binary: answer 0/1, true/false or -1/+1 (a graded benchmark's set is fit on graded"
        " scores)"
    ]
