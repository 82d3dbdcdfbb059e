"""The suite says what each member estimates and where its data came from, like a set does."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sparseeval.cli import main
from sparseeval.consume.sets.suite_set import SUITE, load_suite
from sparseeval.method.synthetic import make_leaderboard
from sparseeval.pipeline.publish import publish_unit
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_publish import suite_candidate, suite_line
from sparseeval.pipeline.suite_recipe import matrix_info

SETTINGS = dict(n_anchors=6, n_test=50, n_valid=50, n_calib=50, refine_steps=1, epochs=40,
                patience=5, ensemble=1)  # fmt: skip
DEMO = {"synthetic": True,
        "kinds": {"synthetic": {"n_results": 10, "n_sources": 1, "sources": ["demo"]}}}  # fmt: skip
SCORES = {"n_results": 9, "n_sources": 2, "sources": ["a.csv", "b.csv"]}
REAL = {"synthetic": False, "kinds": {"leaderboard scores": SCORES}}


def publish_suite(tmp_path, provenance: dict):
    from sparseeval.pipeline.artifacts import save_matrix

    infos = {}
    for b, m in make_leaderboard(240, {"arc": 40, "gsm8k": 30}, seed=1).items():
        path = tmp_path / f"{b}.npz"
        save_matrix(m, path, fingerprint=m.fingerprint())
        target = {"kind": "reported", "definition": f"the leaderboard's reported {b} score"}
        infos[b] = replace(matrix_info(b, path), target=target, provenance=provenance)
    settings = Settings.of(home=tmp_path, **SETTINGS)
    line = suite_line(publish_unit(settings, lambda: suite_candidate(infos, settings)))
    assert line.startswith("suite: published v1"), line
    root = tmp_path / "published"
    files = []
    suite = load_suite(root)
    for b in infos:
        answers = tmp_path / f"{b}.csv"
        answers.write_text("item,correct\n" + "".join(f"{i},1\n" for i in suite.items(b)))
        files.append(f"{b}={answers}")
    return ["predict", "--anchor-set", str(root), "--benchmark", SUITE, "--responses", *files]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return publish_suite(tmp_path_factory.mktemp("demo"), DEMO)


def test_suite_json_says_each_member_target_and_synthetic(demo, capsys):
    assert main([*demo, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arc"]["synthetic"] and out["average"]["synthetic"]
    assert out["arc"]["target"] == "the leaderboard's reported arc score"
    assert out["arc"]["data"] == "synthetic (1 source(s))"
    assert out["average"]["target"].startswith("the mean of the 2 benchmarks' estimates")


def test_suite_text_names_targets_and_warns_it_is_synthetic(demo, capsys):
    assert main(demo) == 0
    out = capsys.readouterr().out
    assert "gsm8k        the leaderboard's reported gsm8k score (data: synthetic" in out
    assert "SYNTHETIC demo leaderboard" in out


def test_suite_report_says_what_it_estimates_and_where_data_came_from(tmp_path, capsys):
    argv = publish_suite(tmp_path, REAL)
    assert main([*argv, "--json"]) == 0
    assert not json.loads(capsys.readouterr().out)["arc"]["synthetic"]
    root = tmp_path / "published"
    assert main(["report", "--anchor-set", str(root), "--benchmark", SUITE, "--out",
                 str(tmp_path / "r")]) == 0  # fmt: skip
    md = (tmp_path / "r" / "report.md").read_text()
    published = next((root / SUITE).glob("v1/report.md")).read_text()
    for text in (md, published):
        assert "Data: not recorded" not in text and "SYNTHETIC" not in text
        assert "Estimates: the mean of the 2 benchmarks' estimates" in text
        assert "arc: the leaderboard's reported arc score. Data: leaderboard scores (2" in text


def test_anchors_of_the_demo_suite_say_synthetic_not_a_missing_id_map(demo, capsys):
    root = demo[demo.index("--anchor-set") + 1]
    assert main(["anchors", "--anchor-set", root, "--benchmark", SUITE]) == 0
    said = capsys.readouterr().err
    assert "synthetic item ids of the built-in demo" in said and "--id-map" not in said


def test_suite_progress_names_each_benchmark_and_throttles_refinement(tmp_path):
    from sparseeval.pipeline.progress import throttled
    from sparseeval.pipeline.suite_recipe import fit_suite

    lines: list[str] = []
    fit_suite(make_leaderboard(240, {"arc": 40, "gsm8k": 30}, seed=1),
              Settings.of(home=tmp_path, **SETTINGS), progress=lines.append)  # fmt: skip
    assert any("arc" in line for line in lines) and any("gsm8k" in line for line in lines)
    steps = [line for line in lines if line.split(": ", 1)[-1].startswith(("refine", "init"))]
    assert len(steps) <= 1  # fast: one at most, named: "arc: init kmeans ..."
    said: list[str] = []
    say = throttled(said.append, seconds=60)
    say("refine step 1")
    say("refine step 2")
    assert said == ["refine step 1"]


def test_a_suite_lists_its_models_as_a_benchmark_set_does(demo):
    from sparseeval.consume.sets.models import MODELS_FILE, read_models

    folder = Path(demo[demo.index("--anchor-set") + 1]) / SUITE / "v1"
    models = read_models(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert MODELS_FILE in manifest["files"]
    assert {r: len(v) for r, v in models.items()} == manifest["split_sizes"]
    assert len(models["test"]) > 0 and len(models["calibration"]) > 0
    seen = [m for ids in models.values() for m in ids]
    assert len(seen) == len(set(seen)) == 240  # every common model, in one role each


def test_a_source_holding_every_member_counts_once_in_the_suites_data(tmp_path):
    """One long results file with both benchmarks (the layout `ingest` reads as
    `model,benchmark,item,correct`): each member says 1 source, and so does the suite average,
    not 2 (it counted each member's sources again)."""
    from sparseeval.pipeline.store import Store, ingest
    from sparseeval.pipeline.store.kinds import source_from_spec

    lb = make_leaderboard(240, {"arc": 40, "gsm8k": 30}, seed=1)
    rows = [f"{mid},{b},{item},{int(v > 0)}" for b, m in lb.items()
            for mid, row in zip(m.model_ids, m.values, strict=True)
            for item, v in zip(m.item_ids, row, strict=True)]  # fmt: skip
    results = tmp_path / "results.csv"
    results.write_text("model,benchmark,item,correct\n" + "\n".join(rows) + "\n")
    settings = Settings.of(home=tmp_path, **SETTINGS)
    with Store.open(settings.paths.store_path) as store:
        ingest(store, source_from_spec(str(results)))
        member = store.provenance("arc")
        both = store.provenance("arc", "gsm8k")
    assert [k["n_sources"] for k in member["kinds"].values()] == [1]
    assert [k["n_sources"] for k in both["kinds"].values()] == [1]
    assert sum(k["n_results"] for k in both["kinds"].values()) == 240 * 70
    publish_suite(tmp_path, member)
    manifest = json.loads(
        next((tmp_path / "published" / SUITE).glob("v1/manifest.json")).read_text()
    )
    assert [k["n_sources"] for k in manifest["provenance"]["kinds"].values()] == [1]
