"""A newcomer's first hour: errors that say what to do, commands that work where one stands."""

from __future__ import annotations

import re

import pytest

from sparseeval.cli import main
from sparseeval.pipeline.versions import set_latest, sign_version
from tests.helpers import publish_fit, quick_config, signing_keys, tiny_fit


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A synthetic-id ARC set, promoted, and answers for it."""
    root = tmp_path_factory.mktemp("home") / "published"
    fitted = tiny_fit(seed=1, item_ids=[f"item-{j:05d}" for j in range(60)])
    folder = publish_fit(root, "arc", fitted)
    set_latest(root, "arc", 1)
    m, sp, est = fitted
    row = m.values[int(sp.test[0])]
    answers = root.parent / "answers.csv"
    answers.write_text("item,correct\n" + "".join(f"{est.anchor_ids_[i]},{int(row[a] > 0)}\n"
                                                  for i, a in enumerate(est.anchors_)))  # fmt: skip
    return root, folder, answers


def one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_unknown_benchmark_lists_the_published_ones(published, capsys):
    root, _, answers = published
    rc = main(["predict", "--anchor-set", str(root), "--benchmark", "nope", "--responses",
               str(answers)])  # fmt: skip
    assert rc == 2 and "published there: arc" in one_error(capsys)
    rc = main(["predict", "--anchor-set", str(root), "--benchmark", "ARC", "--responses",
               str(answers)])  # fmt: skip
    assert rc == 2 and one_error(capsys).endswith("(published there: arc); did you mean 'arc'?")


def test_an_empty_home_says_to_run_refresh(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPARSEEVAL_HOME", raising=False)
    rc = main(["predict", "--benchmark", "arc", "--responses", "a.csv"])
    assert rc == 2 and "sparseeval refresh" in one_error(capsys)


def test_anchors_of_the_demo_say_they_are_synthetic_not_a_missing_id_map(tmp_path, capsys):
    root = tmp_path / "published"
    fitted = tiny_fit(seed=1, item_ids=[f"item-{j:05d}" for j in range(60)])
    opaque = {i: {"id_kind": "opaque"} for i in fitted[2].anchor_ids_}  # as the demo store has
    publish_fit(root, "arc", fitted, item_sources=opaque, extra={"provenance": {"synthetic": True}})
    set_latest(root, "arc", 1)
    assert main(["anchors", "--anchor-set", str(root), "--benchmark", "arc"]) == 0
    said = capsys.readouterr().err
    assert "synthetic item ids of the built-in demo" in said and "--id-map" not in said


def test_export_of_synthetic_ids_says_they_are_synthetic(published, tmp_path, capsys):
    root, _, _ = published
    rc = main(["export-lm-eval", "--anchor-set", str(root), "--benchmark", "arc",
               "--out", str(tmp_path / "s.json")])  # fmt: skip
    assert rc == 2 and "synthetic leaderboard's ids" in one_error(capsys)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["fit", "--targets", "scores.csv", "--anchors", "20"], "--targets needs a data file"),
        (["fit", "--anchors", "0"], "at least 1 anchor"),
        (["refresh", "--anchors", "0"], "--anchors takes budgets of at least 1 anchor"),
        (["refresh", "--anchors", "-5"], "--anchors takes budgets of at least 1 anchor"),
    ],
)
def test_arguments_are_checked_before_any_work(argv, says, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert says in one_error(capsys)
    assert not (tmp_path / ".sparseeval").exists()  # nothing was started


def test_the_reports_commands_work_from_any_folder(published, tmp_path, capsys, monkeypatch):
    _, folder, answers = published
    report = (folder / "report.md").read_text()
    command = next(line for line in report.splitlines() if line.startswith("sparseeval predict"))
    argv = command.split()[1:]
    argv[argv.index("answers.csv")] = str(answers)
    monkeypatch.chdir(tmp_path)  # elsewhere: the command names the root by its absolute path
    assert main(argv) == 0
    assert re.match(r"arc v1: estimated accuracy \d", capsys.readouterr().out)


def test_predict_checks_the_publishers_signature(published, tmp_path, capsys):
    pytest.importorskip("cryptography")
    root, folder, answers = published
    private, public = signing_keys()
    _, other = signing_keys()
    sign_version(folder, private)
    (tmp_path / "pub.pem").write_bytes(public)
    (tmp_path / "other.pem").write_bytes(other)
    base = ["predict", "--anchor-set", str(root), "--benchmark", "arc", "--responses",
            str(answers)]  # fmt: skip
    # a signed manifest found through an unsigned `latest`: the pointer could be a rollback
    assert main([*base, "--public-key", str(tmp_path / "pub.pem")]) == 2
    assert "the latest pointer is not signed" in one_error(capsys)
    set_latest(root, "arc", 1, budget=8, signing_key=private)  # promoted with the key
    assert main([*base, "--public-key", str(tmp_path / "pub.pem")]) == 0
    capsys.readouterr()
    assert main([*base, "--public-key", str(tmp_path / "other.pem")]) == 2
    assert "does not verify with the public key" in one_error(capsys)
    # anchors takes the same flag and verifies it (it was accepted and ignored)
    listed = ["anchors", "--anchor-set", str(root), "--benchmark", "arc", "--public-key"]
    assert main([*listed, str(tmp_path / "pub.pem")]) == 0
    capsys.readouterr()
    assert main([*listed, str(tmp_path / "other.pem")]) == 2
    assert "does not verify with the public key" in one_error(capsys)


def _wide(tmp_path, rows: int = 60, blank: tuple[int, int] | None = None):
    import numpy as np

    rng = np.random.default_rng(0)
    values = (rng.random((rows, 12)) < np.linspace(0.2, 0.8, rows)[:, None]).astype(int)
    lines = ["model," + ",".join(f"q{j}" for j in range(12))]
    for i, row in enumerate(values):
        cells = [str(v) for v in row]
        if blank == (i, 3):
            cells[3] = ""
        lines.append(f"m{i}," + ",".join(cells))
    path = tmp_path / "responses.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, values


def test_fit_says_what_it_leaves_out(tmp_path, capsys):
    data, values = _wide(tmp_path, rows=120)  # the recipe trains from 100 models
    scores = tmp_path / "scores.csv"
    rows = [f"m{i},{100 * values[i].mean():.1f},train" for i in range(len(values))]
    rows += [f"other{i},50,test" for i in range(7)]  # scores of models without answers
    scores.write_text("model,score,split\n" + "\n".join(rows) + "\n")
    argv = ["fit", str(data), "--targets", str(scores), "--anchors", "4,40", "--test", "10",
            "--valid", "10", "--config", quick_config(tmp_path), "--quiet"]  # fmt: skip
    assert main([*argv[:-1]]) == 0
    err = capsys.readouterr().err
    assert "column(s) split ignored" in err
    assert "7 score row(s) ignored" in err
    assert "divided by 100" in err
    assert (
        "budget 40 does not fit 12 items: fitting 4 anchors (the anchors read at most 33%"
        " of the items: max_anchor_share)"
    ) in err


def test_a_missing_answer_names_its_line_and_column(tmp_path, capsys):
    data, _ = _wide(tmp_path, blank=(4, 3))
    assert main(["fit", str(data), "--anchors", "4"]) == 2
    err = one_error(capsys)
    assert "line 6 (model m4), column 'q3': missing answer" in err
