"""Real data without stumbles: what a new user meets in `fit`, `predict`, `anchors`, `report`."""

from __future__ import annotations

import json
import re
import shutil

import pytest

import sparseeval
from sparseeval.cli import main
from sparseeval.consume.sets import layout
from sparseeval.pipeline.versions import set_latest
from tests.helpers import quick_config, wide_csv


def _fit(data, out, anchors: str, *extra: str) -> int:
    """`fit --out` with a quick predictor (these tests are about the sets, not the fit)."""
    return main(["fit", str(data), "--anchors", anchors, "--test", "15", "--valid", "15",
                 "--config", quick_config(data.parent), "--out", str(out), *extra])  # fmt: skip


def _answers(path, items, row, columns) -> str:
    path.write_text("item,correct\n" + "".join(f"{i},{row[columns.index(i)]}\n" for i in items))
    return str(path)


@pytest.mark.parametrize("anchors", ["5", "4,6"])
def test_a_fit_folder_loads_in_predict_and_load_anchor_set(anchors, tmp_path, capsys):
    data, values = wide_csv(tmp_path / "arc.csv", 120, 20)
    out = tmp_path / "fit"
    assert _fit(data, out, anchors, "--benchmark", "arc") == 0
    err = capsys.readouterr().err
    assert f"next: sparseeval predict --anchor-set {out} --benchmark arc" in err
    assert err.count("local and ungated: no quality gate, no Hub mirror") == 1
    aset = sparseeval.load_anchor_set(out, "arc")  # the largest budget
    assert len(aset.items) == max(int(k) for k in anchors.split(","))
    assert aset.target == "mean over the 20 given items" and not aset.synthetic
    columns = [f"q{j}" for j in range(20)]
    answers = _answers(tmp_path / "a.csv", aset.items, values[0], columns)
    assert main(["predict", "--anchor-set", str(out), "--benchmark", "arc", "--responses",
                 answers]) == 0  # fmt: skip
    said = capsys.readouterr().out
    assert re.match(rf"arc v1: estimated accuracy \d.* from {len(aset.items)}/", said)
    assert "estimates: mean over the 20 given items" in said
    # a table's column names are no lm-eval doc ids: export refuses them in one line
    assert main(["export-lm-eval", "--anchor-set", str(out), "--benchmark", "arc", "--out",
                 str(tmp_path / "ids.json")]) == 2  # fmt: skip
    assert "opaque" in capsys.readouterr().err


def test_a_fit_set_is_named_after_its_data_file_and_budgets_are_sets_of_their_own(tmp_path, capsys):
    data, _ = wide_csv(tmp_path / "my_data.csv", 120, 20)
    out = tmp_path / "fit"
    assert _fit(data, out, "5") == 0 and _fit(data, out, "5") == 0
    assert sparseeval.load_anchor_set(out, "my_data").version == 1  # the same set: no copy
    assert _fit(data, out, "6") == 0  # another budget: a set of its own, which readers load
    aset = sparseeval.load_anchor_set(out, "my_data")
    assert (aset.version, len(aset.items)) == (1, 6)
    assert layout.list_budgets(out, "my_data") == [5, 6]
    assert _fit(data, out, "5", "--benchmark", "no spaces") == 2
    assert "--benchmark: benchmark name must be" in capsys.readouterr().err


def test_bare_fit_asks_for_data_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["fit"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "give a data file" in err[0] and "--synthetic M N" in err[0]


def test_the_template_is_written_with_lf(tmp_path, capsys):
    data, _ = wide_csv(tmp_path / "arc.csv", 120, 20)
    assert _fit(data, tmp_path / "fit", "5", "--benchmark", "arc") == 0
    template = tmp_path / "answers.csv"
    assert main(["anchors", "--anchor-set", str(tmp_path / "fit"), "--benchmark", "arc",
                 "--template", str(template)]) == 0  # fmt: skip
    raw = template.read_bytes()
    assert raw.startswith(b"item,correct\n") and b"\r" not in raw and raw.count(b"\n") == 6


def test_report_help_names_the_homes_reports_folder(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert "$SPARSEEVAL_HOME/reports/{benchmark}/vN" in " ".join(capsys.readouterr().out.split())


# -- the suite answered in part -----------------------------------------------------------


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory):
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite

    root = tmp_path_factory.mktemp("suite")
    settings = Settings.of(home=root, n_anchors=6, n_test=40, n_valid=40, n_calib=40,
                        refine_steps=1, epochs=40, patience=5, ensemble=1)  # fmt: skip
    lb = make_leaderboard(240, {"arc": 30, "gsm8k": 30, "mmlu": 30}, seed=4)
    write_suite(root, fit_suite(lb, settings), settings)
    set_latest(root, "suite", 1)
    return root


def test_partial_suite_answers_name_the_missing_benchmarks(suite_root, tmp_path, capsys):
    suite = sparseeval.load_suite(suite_root)
    arc = tmp_path / "arc.csv"
    arc.write_text("item,correct\n" + "".join(f"{i},1\n" for i in suite.items("arc")))
    base = ["predict", "--anchor-set", str(suite_root), "--benchmark", "suite"]
    assert main([*base, "--responses", f"arc={arc}"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("suite v1 (own anchors):") and "average" not in out.split("note:")[0]
    assert (
        "note: no answers for gsm8k, mmlu (2 of 3 benchmarks): each answered benchmark is"
        " read from its own anchors only, and there is no suite average"
    ) in out
    assert main([*base, "--responses", f"arc={arc}", "--json"]) == 0
    said = capsys.readouterr()
    assert "no answers for gsm8k, mmlu" in said.err and set(json.loads(said.out)) == {"arc"}
    assert suite.fallback_note(suite.benchmarks) == ""


def test_matrix_lists_the_benchmarks_with_results_and_names_the_empty_ones(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    data, _ = wide_csv(tmp_path / "arc.csv", 5, 3)
    assert main(["ingest", str(data), "--benchmark", "arc"]) == 0
    capsys.readouterr()
    assert main(["matrix"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"arc +5 models +3 items", lines[0]) and " 0 models" not in "\n".join(lines)
    assert lines[-1].startswith("known, no results yet: ") and "gsm8k" in lines[-1]


def test_suite_answers_missing_an_anchor_say_where_the_suites_anchors_are(
    suite_root, tmp_path, capsys
):
    suite = sparseeval.load_suite(suite_root)
    arc = tmp_path / "arc.csv"  # as if answered for arc's own set: one suite anchor short
    arc.write_text("item,correct\n" + "".join(f"{i},1\n" for i in suite.items("arc")[1:]))
    base = ["predict", "--anchor-set", str(suite_root), "--benchmark", "suite"]
    assert main([*base, "--responses", f"arc={arc}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: arc: 1 of 6 anchors missing")
    assert "`sparseeval anchors --benchmark suite` lists them" in err[0]


def test_a_home_given_as_anchor_set_reads_its_published_sets(tmp_path, capsys):
    """`--anchor-set .sparseeval` (the home, not its `published/`) listed `artifacts,
    published, reports` as benchmarks; a home now reads its published sets (issue [5/5])."""
    data, _ = wide_csv(tmp_path / "arc.csv", 120, 20)
    home = tmp_path / "home"
    assert _fit(data, tmp_path / "fit", "5", "--benchmark", "arc") == 0
    shutil.copytree(tmp_path / "fit" / "arc", home / "published" / "arc")  # a home's layout
    (home / "artifacts").mkdir()
    (home / "reports").mkdir()
    capsys.readouterr()
    assert main(["anchors", "--anchor-set", str(home), "--benchmark", "arc"]) == 0
    assert len(capsys.readouterr().out.split()) >= 5
    assert main(["anchors", "--anchor-set", str(home), "--benchmark", "gsm8k"]) == 2
    err = capsys.readouterr().err
    assert "(published there: arc)" in err and "artifacts" not in err


def test_an_lm_eval_task_name_given_as_benchmark_suggests_the_benchmark(tmp_path, capsys):
    """`ingest wide:arc_challenge=...` quarantined everything and suggested nothing."""
    data, _ = wide_csv(tmp_path / "arc.csv", 10, 5)
    store = tmp_path / "s.duckdb"
    assert main(["ingest", f"wide:arc_challenge={data}", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'arc'? (arc_challenge is its lm-eval task)" in err


def test_scores_of_one_benchmark_are_named_as_wide_names_its_answers(tmp_path, capsys):
    """`scores:arc=FILE` (by analogy with `wide:arc=`) said "no such file"."""
    scores = tmp_path / "arc_scores.csv"
    scores.write_text("model,score\n" + "".join(f"m{i:03d},{40 + i / 10:.1f}\n" for i in range(30)))
    store = tmp_path / "s.duckdb"
    assert main(["ingest", f"scores:arc={scores}", "--store", str(store)]) == 0, capsys.readouterr()
    import duckdb

    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.sql(
            "select b.name, count(*) from reported_scores s join benchmarks b"
            " on b.benchmark_id = s.benchmark_id group by 1"
        ).fetchall()
    assert rows == [("arc", 30)]
    assert main(["ingest", f"scores:arc={tmp_path / 'missing.csv'}", "--store", str(store)]) == 2
    assert "missing.csv" in capsys.readouterr().err


def test_a_header_only_answers_file_is_not_told_to_pass_allow_missing(tmp_path, capsys):
    """It was told "pass --allow-missing", which then failed: with no answer at all, one
    line says so and how to get the ids, with or without the flag."""
    data, _ = wide_csv(tmp_path / "arc.csv", 120, 20)
    assert _fit(data, tmp_path / "fit", "5", "--benchmark", "arc") == 0
    empty = tmp_path / "answers.csv"
    empty.write_text("item,correct\n")
    base = ["predict", "--anchor-set", str(tmp_path / "fit"), "--benchmark", "arc",
            "--responses", str(empty)]  # fmt: skip
    for extra in ([], ["--allow-missing"]):
        capsys.readouterr()
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert "no answers on any of the 5 anchors" in err and "--allow-missing" not in err
        assert "\n" not in err


def test_a_long_error_line_keeps_its_end():
    """A failure line over the limit kept its first 500 characters and lost the end, where
    "(and 1 more failed); report at PATH" is (it failed with longer temporary paths)."""
    from sparseeval.consume.errors import MAX_LINE, first_line

    message = "refresh failed for " + "x" * 2000 + " (and 1 more failed); report at /r.md"
    line = first_line(RuntimeError(message))
    assert len(line) <= MAX_LINE and line.startswith("refresh failed for xxx")
    assert line.endswith("(and 1 more failed); report at /r.md") and " ... " in line
    assert first_line(RuntimeError("short\nsecond line")) == "short"
