"""Small stumbles of a first hour, each said in words a user can act on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparseeval.cli import main
from sparseeval.cli.common import install_hint
from sparseeval.consume.answers.responses import ResponsesError
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit, tiny_fit, wide_csv

README = Path(__file__).resolve().parents[2] / "README.md"
LM_EVAL_DOCS = README.parent / "docs" / "howto-lm-eval.md"


@pytest.fixture(scope="module")
def arc(tmp_path_factory):
    """A promoted ARC set whose ids are lm-eval doc ids, and full answers for it."""
    root = tmp_path_factory.mktemp("home") / "published"
    fitted = tiny_fit(seed=2, item_ids=[str(j) for j in range(60)])
    publish_fit(root, "arc", fitted)
    set_latest(root, "arc", 1)
    items = fitted[2].anchor_ids_
    answers = root.parent / "answers.csv"
    answers.write_text("item,correct\n" + "".join(f"{i},1\n" for i in items))
    return root, list(items), answers


def predict(root, answers, *more) -> list[str]:
    return ["predict", "--anchor-set", str(root), "--benchmark", "arc", "--responses",
            str(answers), *more]  # fmt: skip


def test_missing_anchors_say_the_flag_on_the_cli_and_the_argument_in_python(arc, capsys):
    from sparseeval.consume.sets.anchorset import load_anchor_set

    root, items, _ = arc
    partial = root.parent / "partial.csv"
    partial.write_text("item,correct\n" + "".join(f"{i},1\n" for i in items[:-2]))
    assert main(predict(root, partial)) == 2
    err = capsys.readouterr().err
    assert "pass --allow-missing to estimate" in err and "allow_missing" not in err
    with pytest.raises(ResponsesError, match="pass allow_missing=True to") as caught:
        load_anchor_set(root, "arc").predict({i: 1 for i in items[:-2]})
    assert "CLI" not in str(caught.value)


def test_a_wide_row_given_to_predict_gets_a_layout_hint_not_a_header_dump(arc, capsys):
    root, _, _ = arc
    row = root.parent / "row.csv"
    row.write_text("model," + ",".join(str(j) for j in range(400)) + "\norg/a," +
                   ",".join("1" for _ in range(400)) + "\n")  # fmt: skip
    assert main(predict(root, row)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err) < 400 and "(401 columns)" in err and "wide table" in err, err


def test_export_tasks_without_local_data_names_the_dataset_option(arc, tmp_path, capsys):
    root, _, _ = arc
    rc = main(["export-lm-eval", "--anchor-set", str(root), "--benchmark", "arc",
               "--tasks-dir", str(tmp_path / "tasks")])  # fmt: skip
    assert rc == 0
    assert "offline, write the tasks with local copies: --dataset" in capsys.readouterr().err
    assert "--dataset [SPLIT=]FILE" in LM_EVAL_DOCS.read_text()


def test_a_closed_pipe_ends_quietly(arc):
    root, _, answers = arc
    read, write = os.pipe()
    os.close(read)  # as `| head` after its lines: every write now fails
    try:
        argv = [sys.executable, "-m", "sparseeval", *predict(root, answers)]
        proc = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr


def test_the_install_hint_names_the_checkout_it_came_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the checkout
    hint = install_hint("pipeline")
    assert "'sparseeval[pipeline]'" not in hint  # the package is on no index
    folder = hint.split("'")[1].removesuffix("[pipeline]")
    assert (Path(folder) / "pyproject.toml").is_file()


def test_refresh_anchors_that_are_not_numbers_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPARSEEVAL_HOME", raising=False)
    assert main(["refresh", "--anchors", "abc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("--anchors takes comma-separated integers, got 'abc'"), err
    assert not (tmp_path / ".sparseeval").exists()


def test_fit_names_the_models_without_a_score(tmp_path, capsys):
    data, _ = wide_csv(tmp_path / "wide.csv", 20, 6)
    scores = tmp_path / "scores.csv"
    scores.write_text("model,score\n" + "".join(f"m{i:03d},50\n" for i in range(19)))
    assert main(["fit", str(data), "--targets", str(scores), "--anchors", "3"]) == 2
    assert "1 model(s) have no score: m019" in capsys.readouterr().err


def test_matrix_of_a_benchmark_without_results_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    wide_csv(tmp_path / "arc.csv", 4, 3)
    assert main(["ingest", f"wide:arc={tmp_path / 'arc.csv'}"]) == 0
    capsys.readouterr()
    assert main(["matrix", "hellaswag"]) == 2
    err = capsys.readouterr().err
    assert "hellaswag: no results stored for this benchmark yet" in err
    assert "missing policy" not in err


def test_the_quick_start_keeps_filled_answers_out_of_the_checkout():
    text = README.read_text()
    quick = text[text.index("## Quick start") : text.index("## Python")]
    written = [w for line in quick.splitlines() if "--template" in line
               for w in [line.split("--template")[1].split()[0]]]  # fmt: skip
    assert written and all(w.startswith(".sparseeval/") for w in written), written


@pytest.mark.parametrize(
    "manifest, says, not_said",
    [
        ({"provenance": {"synthetic": True}, "items": ["1"]}, "not for this set", "--out"),
        ({"items": ["7"], "item_sources": {"7": {"id_kind": "opaque"}}}, "--id-map MAP.csv", ""),
        ({"items": ["7"], "item_sources": {"7": {"task": "arc_challenge", "doc_id": 7}}},
         "--out samples.json", "--id-map"),
        ({"items": ["arc/7"], "suite": {"members": {"arc": {"items": ["7"], "own": {
            "item_sources": {"7": {"id_kind": "opaque"}}}}}}}, "--id-map MAP.csv", ""),
    ],
)  # fmt: skip
def test_reports_suggest_export_only_where_it_works(manifest, says, not_said):
    from sparseeval.pipeline.reports.anchor_report import _export_line

    line = _export_line(manifest, "--benchmark arc")
    assert says in line and (not not_said or not_said not in line), line


def test_a_suite_id_map_scopes_rows_by_benchmark_column_or_suite_id(tmp_path):
    from sparseeval.consume.answers.identity import read_id_map

    path = tmp_path / "map.csv"
    path.write_text("benchmark,item,doc_id\narc,5,1\n,gsm8k/5,2\nwinogrande,5,3\n")
    members = ("arc", "gsm8k", "winogrande")
    assert read_id_map(path, "arc_challenge", "arc", members) == {
        "5": {"task": "arc_challenge", "doc_id": 1}
    }
    assert read_id_map(path, "gsm8k", "gsm8k", members)["5"]["doc_id"] == 2


def test_a_slow_temporary_server_is_one_line_not_a_bug():
    from sparseeval.cli.common import UserError, is_user_error
    from sparseeval.cli.tempserver import _wait_healthy

    class Running:
        def poll(self):
            return None

    with pytest.raises(UserError, match="did not start within 0s") as caught:
        _wait_healthy("http://127.0.0.1:9/api", Running(), 0, None)
    assert is_user_error(caught.value) and "PREFECT_API_URL" in str(caught.value)
