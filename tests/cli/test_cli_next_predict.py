"""A real `sparseeval fit --out`, then predict -> told to answer more -> both files combined."""

from __future__ import annotations

import csv
import json

import pytest

from sparseeval.cli import main
from sparseeval.method.synthetic import make_synthetic

M, N = 240, 40


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A fit of the built-in demo under --out; the strongest model's answers on every item."""
    root = tmp_path_factory.mktemp("fit")
    out = root / "fit"
    args = ["fit", "--synthetic", str(M), str(N), "--anchors", "6", "--quiet", "--test", "0.2",
            "--valid", "0.2", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    m = make_synthetic(M, N, seed=0)
    best = int(m.y.argmax())
    row = {str(i): int(v > 0) for i, v in zip(m.item_ids, m.values[best], strict=True)}
    return out, row, float(m.y[best]), root


def _fill(path, row) -> None:
    items = [r["item"] for r in csv.DictReader(path.open())]
    path.write_text("item,correct\n" + "".join(f"{i},{row[i]}\n" for i in items))


def test_predict_says_how_many_more_items_then_combines_both_files(fitted, capsys, monkeypatch):
    out, row, truth, root = fitted
    monkeypatch.chdir(root)
    where = ["--anchor-set", str(out), "--benchmark", "synthetic"]
    assert main(["anchors", *where, "--template", "a.csv"]) == 0
    _fill(root / "a.csv", row)
    capsys.readouterr()
    assert main(["predict", *where, "--responses", "a.csv", "--max-width", "8"]) == 0
    said = capsys.readouterr().out
    assert "more items would help (wider than 8 points)" in said
    n = int(said.split("--next ")[1].split()[0])
    assert f"--next {n} --responses a.csv --template more.csv" in said
    assert "--responses a.csv more.csv" in said
    # the demo's ids are no lm-eval doc ids: export-lm-eval --next would refuse, so not offered
    assert "export-lm-eval" not in said and "not lm-eval doc ids" in said
    assert main(["export-lm-eval", *where, "--next", "3", "--responses", "a.csv",
                 "--out", "x.json"]) == 2  # fmt: skip
    assert main(["anchors", *where, "--next", str(n), "--responses", "a.csv",
                 "--template", "more.csv"]) == 0  # fmt: skip
    _fill(root / "more.csv", row)
    listed = [r["item"] for r in csv.DictReader((root / "more.csv").open())]
    assert len(listed) == n
    capsys.readouterr()
    assert main(["predict", *where, "--responses", "a.csv", "more.csv", "--json"]) == 0
    est = json.loads(capsys.readouterr().out)
    c = est["correction"]
    assert c["n_extra"] == n and sorted(c["items"]) == sorted(listed)
    assert est["value"] == pytest.approx(c["anchor_estimate"][0] + c["shift"])
    assert est["low"] - 1e-9 <= truth <= est["high"] + 1e-9 or n < 10
    assert main(["predict", *where, "--responses", "a.csv", "more.csv"]) == 0
    assert f"and {n} more items (anchors alone" in capsys.readouterr().out


def test_next_needs_the_answers_and_a_positive_count(fitted, capsys):
    out, _, _, _ = fitted
    where = ["--anchor-set", str(out), "--benchmark", "synthetic"]
    assert main(["anchors", *where, "--next", "5"]) == 2
    assert "--next needs --responses" in capsys.readouterr().err
    assert main(["anchors", *where, "--next", "0", "--responses", "x.csv"]) == 2
    assert "at least 1" in capsys.readouterr().err


def test_a_wide_estimate_more_items_cannot_narrow_says_why(fitted, capsys, monkeypatch):
    """--max-width on a set whose target is not the mean over its items (a reported score over
    items it does not hold), or on a model that answered every item: one line saying why."""
    from argparse import Namespace
    from dataclasses import replace

    from sparseeval.cli.consumer import suggestion
    from sparseeval.consume.sets.anchorset import load_anchor_set

    out, row, _, _ = fitted
    aset = load_anchor_set(out, "synthetic")
    args = Namespace(max_width=0.001, responses=["a.csv"], budget=None, anchor_set=str(out))
    est = aset.predict({i: row[i] for i in aset.items})
    assert suggestion(aset, {i: row[i] for i in aset.items}, est, args)["n"] > 0
    reported = replace(aset, curves=replace(aset.curves, item_mean=False))
    said = suggestion(reported, {i: row[i] for i in aset.items}, est, args)
    assert said["n"] == 0 and f"does not follow the mean over its {N} items" in said["line"]
    assert "cannot place a model above its best training models" in said["line"]
    assert "published before sets recorded how the score follows the items" in said["line"]
    assert "on the items' mean (`fit` without --targets)" in said["line"]
    everything = dict(row)
    said = suggestion(aset, everything, replace(est, low=0.0, high=1.0), args)
    assert said["n"] == 0 and f"every one of the benchmark's {N} items is an anchor" in said["line"]
