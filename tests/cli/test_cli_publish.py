"""CLI: predict / export-lm-eval / report through our own argparse parser."""

from __future__ import annotations

import argparse
import json

import pytest

from sparseeval.cli.consumer import add_consumer_commands
from sparseeval.consume.sets.anchorset import load_anchor_set
from tests.helpers import anchor_answers, answers_csv, published, tiny_fit

STAMP = "2025-05-02T10-11-12.131415"


def run(argv, capsys) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="sparseeval")
    sub = parser.add_subparsers(dest="command", required=True)
    add_consumer_commands(sub)
    args = parser.parse_args(argv)
    rc = args.func(args)
    out, err = capsys.readouterr()
    return rc, out, err


def predict_json(root, responses, capsys) -> tuple[int, str, str]:
    """`sparseeval predict --json` on the ARC set under `root`."""
    argv = ["predict", "--anchor-set", str(root), "--benchmark", "arc"]
    return run([*argv, "--responses", str(responses), "--json"], capsys)


@pytest.fixture(scope="module")
def arc_doc_set(tmp_path_factory):
    """An ARC-like anchor set whose item ids are lm-eval doc ids, published as v1 (latest)."""
    fitted = tiny_fit(seed=2, n_test=60, n_valid=80, item_ids=[str(j) for j in range(60)])
    root = published(tmp_path_factory.mktemp("home") / "published", "arc", fitted)
    return root, anchor_answers(fitted), anchor_answers(fitted, 1)


@pytest.mark.parametrize("cmd", ["predict", "export-lm-eval", "report"])
def test_help_has_examples(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        run([cmd, "--help"], capsys)
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"sparseeval {cmd}" in out


def test_predict_from_csv_jsonl_and_json(arc_doc_set, tmp_path, capsys):
    root, answers, _ = arc_doc_set
    expected = load_anchor_set(root, "arc").predict(answers)
    csv_file = answers_csv(tmp_path / "a.csv", answers)
    rc, out, err = run(
        ["predict", "--anchor-set", str(root), "--benchmark", "arc", "--responses", str(csv_file)],
        capsys,
    )
    assert rc == 0 and err == ""
    assert out.startswith("arc v1: estimated accuracy ") and "from 8/8 anchors" in out
    assert f"{100 * expected.value:.1f}%" in out
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"item": k, "correct": bool(v)}) + "\n" for k, v in answers.items())
    )
    js = tmp_path / "a.json"
    js.write_text(json.dumps({k: 2 * v - 1 for k, v in answers.items()}))
    for f in (jsonl, js):
        rc, out, _ = predict_json(root, f, capsys)
        got = json.loads(out)
        assert rc == 0 and got["value"] == pytest.approx(expected.value)
        assert got["low"] <= got["value"] <= got["high"] and got["level"] == 0.9


def test_lm_eval_round_trip(arc_doc_set, tmp_path, capsys):
    """export-lm-eval -> (lm-eval writes samples jsonl for exactly those docs) -> predict."""
    root, answers, _ = arc_doc_set
    out_json = tmp_path / "anchors.json"
    rc, out, err = run(
        ["export-lm-eval", "--anchor-set", str(root), "--benchmark", "arc", "--out", str(out_json)],
        capsys,
    )
    assert rc == 0 and "wrote 8 doc ids for 1 task(s)" in out and "--samples" in err
    samples = json.loads(out_json.read_text())
    assert list(samples) == ["arc_challenge"]
    assert samples["arc_challenge"] == sorted(int(k) for k in answers)
    model_dir = tmp_path / "results" / "acme__tiny-llm"
    model_dir.mkdir(parents=True)
    lines = []
    for doc in samples["arc_challenge"]:
        ok = float(answers[str(doc)])
        rec = {
            "doc_id": doc,
            "doc": {"id": f"Mercury_{doc}"},
            "target": "0",
            "arguments": {},
            "resps": [],
            "filtered_resps": [],
            "filter": "none",
            "metrics": ["acc", "acc_norm"],
            "doc_hash": "",
            "prompt_hash": "",
            "target_hash": "",
            "acc": 1.0 - ok,
            "acc_norm": ok,
        }
        lines.append(json.dumps(rec))
    (model_dir / f"samples_arc_challenge_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    (model_dir / f"results_{STAMP}.json").write_text("{}")
    rc, out, _ = predict_json(root, tmp_path / "results", capsys)
    expected = load_anchor_set(root, "arc").predict(answers)
    assert rc == 0 and json.loads(out)["value"] == pytest.approx(expected.value)


def test_errors_are_one_line_exit_2(arc_doc_set, tmp_path, capsys):
    root, answers, _ = arc_doc_set
    partial = answers_csv(tmp_path / "p.csv", dict(list(answers.items())[:5]))
    base = ["predict", "--anchor-set", str(root), "--benchmark", "arc", "--responses"]
    rc, out, err = run([*base, str(partial)], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: 3 of 8 anchors missing") and "--allow-missing" in err
    rc, out, _ = run([*base, str(partial), "--allow-missing"], capsys)
    assert rc == 0 and "3 of 8 anchors imputed" in out and "from 5/8 anchors" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("model,score\nx,1\n")
    for argv in (
        [*base, str(bad)],
        [*base, str(tmp_path / "nope.csv")],
        [
            "predict",
            "--anchor-set",
            str(tmp_path / "nowhere"),
            "--benchmark",
            "arc",
            "--responses",
            str(partial),
        ],
        ["predict", "--anchor-set", str(root), "--benchmark", "gsm8k", "--responses", str(partial)],
        ["report", "--anchor-set", str(root), "--benchmark", "arc", "--version", "9"],
    ):
        rc, out, err = run(argv, capsys)
        assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1, (argv, err)
        assert "Traceback" not in err


def test_compare_and_default_home(arc_doc_set, tmp_path, capsys, monkeypatch):
    root, answers, answers_b = arc_doc_set
    a, b = answers_csv(tmp_path / "a.csv", answers), answers_csv(tmp_path / "b.csv", answers_b)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARSEEVAL_HOME", str(root.parent))  # default --anchor-set
    rc, out, _ = run(
        ["predict", "--benchmark", "arc", "--responses", str(a), "--compare-to", str(b)], capsys
    )
    assert rc == 0 and "A - B:" in out and "smallest resolvable difference" in out
    rc, out, _ = run(
        ["predict", "--benchmark", "arc", "--responses", str(a), "--compare-to", str(b), "--json"],
        capsys,
    )
    d = json.loads(out)
    assert d["value"] == pytest.approx(d["a"]["value"] - d["b"]["value"])


def test_report_rerenders_elsewhere(arc_doc_set, tmp_path, capsys):
    root, _, _ = arc_doc_set
    drift = tmp_path / "drift.json"
    drift.write_text(json.dumps([{"version": 1, "mae": 2.5, "n_models": 12}]))
    out_dir = tmp_path / "rep"
    rc, out, _ = run(
        [
            "report",
            "--anchor-set",
            str(root),
            "--benchmark",
            "arc",
            "--out",
            str(out_dir),
            "--drift",
            str(drift),
        ],
        capsys,
    )
    assert rc == 0 and "report.html" in out
    assert (out_dir / "plots" / "drift.png").is_file()
    assert (out_dir / "plots" / "predicted_vs_true.png").is_file()
    load_anchor_set(root, "arc")  # the published folder is untouched (still verifies)


def test_manifest_records_derived_item_sources(arc_doc_set):
    root, answers, _ = arc_doc_set
    sources = load_anchor_set(root, "arc").item_sources
    assert sources == {k: {"task": "arc_challenge", "doc_id": int(k)} for k in sources}
    assert set(sources) == set(answers)
