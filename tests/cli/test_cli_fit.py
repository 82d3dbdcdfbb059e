"""The `sparseeval fit` command, run in-process."""

import json

import numpy as np
import polars as pl

from sparseeval.cli import main
from sparseeval.consume.scoring.inference import load_predictor


def test_fit_on_synthetic_prints_table_and_writes_files(tmp_path, capsys):
    out = tmp_path / "fit"
    code = main(
        [
            "fit",
            "--synthetic",
            "240",
            "40",
            "--anchors",
            "5,8",
            "--quiet",
            "--test",
            "0.2",
            "--valid",
            "0.2",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    for method in ("sparseeval", "random", "anchor-points", "linear-gd", "greedy+ridge"):
        assert method in table
    reference = [line for line in table.splitlines() if line.startswith("all-items-ridge")]
    assert len(reference) == 1 and reference[0].split()[1:3] == ["all", "40"]  # not "5 anchors"
    assert "a reference, not a budget" in table
    metrics = json.loads((out / "metrics.json").read_text())
    rows = metrics["test_metrics"]
    assert {r["n_anchors"] for r in rows if r["method"] != "all-items-ridge"} == {5, 8}
    anchors = json.loads((out / "k8" / "anchors.json").read_text())
    assert len(anchors["items"]) == len(anchors["anchors"]) == 8
    assert load_predictor(out / "k8" / "predictor").predict(np.ones((1, 8))).shape == (1,)


def test_fit_reads_wide_csv_with_targets_and_prints_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    values = (rng.random((120, 30)) < np.linspace(0.2, 0.8, 120)[:, None]).astype(int)
    frame = pl.DataFrame({"model": [f"org/m{i}" for i in range(120)]}).hstack(
        pl.DataFrame(values, schema=[f"q{j}" for j in range(30)])
    )
    frame.write_csv(tmp_path / "wide.csv")
    scores = pl.DataFrame({"model": frame["model"], "score": values.mean(1) * 100})
    lines = scores.write_csv().splitlines()  # R-style file: an extra column with NA cells
    (tmp_path / "scores.csv").write_text(
        "\n".join(
            [lines[0] + ",theta"]
            + [f"{x},{'NA' if i % 2 else 0.5}" for i, x in enumerate(lines[1:])]
        )
        + "\n"
    )
    code = main(
        [
            "fit",
            str(tmp_path / "wide.csv"),
            "--targets",
            str(tmp_path / "scores.csv"),
            "--anchors",
            "6",
            "--json",
            "--test",
            "30",
            "--valid",
            "30",
        ]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)["test_metrics"]
    assert {r["method"] for r in rows} >= {"sparseeval", "random"}


def test_fit_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,a,b\nm1,0,7\n")
    assert main(["fit", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sparseeval fit: error:") and "\n" not in err
    assert main(["fit", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["fit", "--synthetic", "100", "20", "--anchors", "x"]) == 2


def test_fit_out_twice_on_the_same_data_keeps_the_set_it_wrote(tmp_path):
    """The same fit again is the live set over again: nothing new is published (no v2)."""
    from sparseeval.consume.sets.layout import latest_version, list_versions
    from tests.helpers import maintained

    out = tmp_path / "fit"
    argv = ["fit", "--synthetic", "240", "40", "--anchors", "8", "--quiet", "--test", "0.2",
            "--valid", "0.2", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0 and main(argv) == 0  # it used to end in a TypeError (a bug)
    at = maintained(out, "synthetic")
    assert at[2] == 8 and latest_version(*at) == 1 and list_versions(*at) == [1]


def test_fit_splits_a_small_pool_as_refresh_does(tmp_path, capsys, monkeypatch):
    """`fit` trains through the pipeline's recipe (`recipe.fit_matrix`): 300 models on the
    default 200 test / 200 validation used to be refused ("-100 for training") by `fit`
    while `refresh` capped each held-out set at a fifth and trained (issue [1/5], bug 1)."""
    monkeypatch.chdir(tmp_path)  # no settings file: the defaults
    for name in ("SPARSEEVAL_CONFIG", "SPARSEEVAL_HOME"):
        monkeypatch.delenv(name, raising=False)
    argv = ["fit", "--synthetic", "300", "30", "--anchors", "5", "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    sizes = json.loads(capsys.readouterr().out)["split"]
    # a fifth each, as refresh splits (stable splits by id: a fifth in expectation)
    assert 40 <= sizes["test"] <= 80 and 40 <= sizes["valid"] <= 80
    assert sum(sizes.values()) == 300 and sizes["calibration"] > 0


def test_fit_refuses_a_pool_refresh_would_wait_on(tmp_path, capsys):
    """Under `MIN_MODELS` models, `fit` says so in one line, as `refresh` waits for more."""
    assert main(["fit", "--synthetic", "60", "20", "--anchors", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == "sparseeval fit: error: synthetic: 60 models, needs at least 100 to train"
