"""CLI: `sparseeval anchors`, the anchor items to answer and a blank answers file."""

from __future__ import annotations

import csv
import json

import pytest

from sparseeval.cli import main
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit, tiny_fit


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """ARC with lm-eval doc ids (v1, and v2 = latest), MMLU `subject:index`, synthetic ids."""
    root = tmp_path_factory.mktemp("anchors") / "published"
    for version, seed in ((1, 2), (2, 3)):
        publish_fit(root, "arc", tiny_fit(seed=seed, item_ids=[str(j) for j in range(60)]))
        set_latest(root, "arc", version)
    subjects = ["anatomy", "astronomy", "virology"]
    mmlu = [f"{subjects[j % 3]}:{j}" for j in range(60)]
    publish_fit(root, "mmlu", tiny_fit(seed=2, item_ids=mmlu))
    set_latest(root, "mmlu", 1)
    publish_fit(root, "gsm8k", tiny_fit(seed=2))
    set_latest(root, "gsm8k", 1)
    return root


def run(argv, capsys) -> tuple[int, str, str]:
    rc = main(["anchors", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit) as e:
        main(["anchors", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "sparseeval anchors --benchmark arc" in out
    assert "--template" in out and "question text" in out


def test_lists_anchors_with_task_and_doc_id(root, capsys):
    rc, out, err = run(["--anchor-set", root, "--benchmark", "arc"], capsys)
    assert rc == 0
    aset = load_anchor_set(root, "arc")
    assert out.splitlines() == [f"{i}\tarc_challenge\t{i}" for i in aset.items]
    assert err == "arc v2: 8 anchors (lm-eval task arc_challenge)\n"
    rc, out, _ = run(["--anchor-set", root, "--benchmark", "arc", "--version", "v1"], capsys)
    v1 = load_anchor_set(root, "arc", version=1).items
    assert rc == 0 and [line.split("\t")[0] for line in out.splitlines()] == v1 != aset.items


def test_mmlu_subjects_and_synthetic_ids(root, capsys):
    rc, out, err = run(["--anchor-set", root, "--benchmark", "mmlu"], capsys)
    assert rc == 0
    for line in out.splitlines():
        item, task, doc = line.split("\t")
        assert task == f"mmlu_{item.split(':')[0]}" and doc == item.split(":")[1]
    assert "lm-eval tasks mmlu_" in err
    rc, out, err = run(["--anchor-set", root, "--benchmark", "gsm8k"], capsys)
    assert rc == 0 and all(line.startswith("item-") and "\t" not in line
                           for line in out.splitlines())  # fmt: skip
    assert "synthetic item ids" in err


def test_json(root, capsys):
    rc, out, _ = run(["--anchor-set", root, "--benchmark", "mmlu", "--json"], capsys)
    data = json.loads(out)
    assert rc == 0 and data["benchmark"] == "mmlu" and data["version"] == 1
    assert data["n_anchors"] == len(data["anchors"]) == 8
    first = data["anchors"][0]
    subject, index = first["item"].split(":")
    assert first == {"item": first["item"], "task": f"mmlu_{subject}", "doc_id": int(index)}


def test_template_round_trip(root, tmp_path, capsys):
    answers = tmp_path / "sub" / "answers.csv"
    rc, _, err = run(["--anchor-set", root, "--benchmark", "arc", "--template", answers], capsys)
    assert rc == 0 and f"wrote {answers}" in err and "sparseeval predict" in err
    rows = list(csv.DictReader(answers.open()))
    assert [r["item"] for r in rows] == load_anchor_set(root, "arc").items
    assert all(r["correct"] == "" for r in rows)
    # a second run does not overwrite a (maybe filled) file unless asked
    answers.write_text(answers.read_text().replace(",\n", ",1\n"))
    rc, _, err = run(["--anchor-set", root, "--benchmark", "arc", "--template", answers], capsys)
    assert rc == 2 and err.count("\n") == 1 and "--force" in err
    assert main(["predict", "--anchor-set", str(root), "--benchmark", "arc",
                 "--responses", str(answers), "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["n_answered"] == 8
    rc, _, _ = run(["--anchor-set", root, "--benchmark", "arc", "--template", answers,
                    "--force"], capsys)  # fmt: skip
    assert rc == 0 and answers.read_text().endswith(",\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["--benchmark", "nope"],
        ["--benchmark", "arc", "--version", "9"],
        ["--benchmark", "arc", "--budget", "50"],
    ],
)
def test_errors_are_one_line(root, argv, capsys):
    rc, out, err = run(["--anchor-set", root, *argv], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ")


def test_missing_anchor_set_folder(tmp_path, capsys):
    rc, _, err = run(["--anchor-set", tmp_path / "none", "--benchmark", "arc"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "no such folder" in err
