"""One-line errors and exit codes where the README promises them (issue 21, items 9-10):
`ingest` with one bad path among good ones, settings no run can use, a damaged store,
answers files that are compressed, `;`-separated or wrapped, and the refresh console.
"""

from __future__ import annotations

import gzip
import json
import logging
import os

import pytest

from sparseeval.cli import main
from sparseeval.consume.answers.responses import MergedAnswers
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.pipeline.recipe import PipelineError
from sparseeval.pipeline.store import Store
from sparseeval.pipeline.versions import set_latest
from tests.helpers import publish_fit, tiny_fit

HEADER = "model,benchmark,item,correct\n"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return rc, out, err


def good_csv(path):
    path.write_text(HEADER + "".join(f"m{m},arc,{i},{(m + i) % 2}\n"
                                     for m in range(3) for i in range(4)))  # fmt: skip
    return path


def stored(store_path) -> int:
    with Store.open(store_path, read_only=True) as s:
        return s.con.execute("SELECT count(*) FROM results").fetchone()[0]


def bad_paths(tmp_path) -> dict:
    folder = tmp_path / "not-results"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    packed = tmp_path / "packed.csv"
    packed.write_bytes(gzip.compress(HEADER.encode()))
    unknown = tmp_path / "secret.key"
    unknown.write_text("x")
    return {"folder": folder, "fifo": fifo, "compressed": packed, "unknown": unknown,
            "missing": tmp_path / "gone.csv"}  # fmt: skip


@pytest.mark.parametrize("kind", ["folder", "fifo", "compressed", "unknown", "missing"])
def test_one_bad_path_does_not_stop_the_good_file(tmp_path, capsys, kind):
    bad = bad_paths(tmp_path)[kind]
    store = tmp_path / "s.duckdb"
    rc, out, err = cli(capsys, "ingest", good_csv(tmp_path / "good.csv"), bad, "--store", store)
    assert rc == 1, (out, err)  # partly failed: good.csv landed
    assert stored(store) == 12
    assert out.startswith(f"{tmp_path / 'good.csv'}: read 12; new 12")
    assert err.count("\n") == 1 and err.startswith(f"{bad}: failed (") and "Traceback" not in err


def test_exit_code_is_2_when_nothing_landed(tmp_path, capsys):
    paths = bad_paths(tmp_path)
    store = tmp_path / "s.duckdb"
    rc, _, err = cli(capsys, "ingest", paths["compressed"], "--store", store)
    assert rc == 2 and "a gzip-compressed file" in err
    rc, _, err = cli(capsys, "ingest", paths["folder"], paths["missing"], "--store", store)
    assert rc == 2 and err.count("failed (") == 2


@pytest.mark.parametrize("setting", ["n_test=inf", "n_valid=nan", "lr=inf", "drift_mae_points=nan"])
def test_settings_that_overflow_are_refused_before_any_work(tmp_path, capsys, setting, home):
    rc, out, err = cli(capsys, "refresh", "--set", setting, "--no-fill")
    name = setting.split("=")[0]
    assert rc == 2 and out == ""
    assert err.startswith(f"sparseeval refresh: error: {name} must be a finite number")
    assert err.count("\n") == 1
    assert not home.exists()  # nothing was started


def test_a_truncated_store_is_a_damaged_store_in_one_line(tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    assert cli(capsys, "ingest", good_csv(tmp_path / "good.csv"), "--store", store)[0] == 0
    os.truncate(store, os.path.getsize(store) // 2)
    for argv in (["matrix", "arc"], ["ingest", tmp_path / "good.csv"], ["matrix"]):
        rc, out, err = cli(capsys, *argv, "--store", store)
        assert rc == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith(f"error: damaged store {store} (truncated or corrupt")


# -- answers files given to predict ------------------------------------------------------


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    root = tmp_path_factory.mktemp("pub")
    fitted = tiny_fit(seed=2, item_ids=[str(j) for j in range(60)])
    publish_fit(root, "arc", fitted)
    set_latest(root, "arc", 1)
    return root, load_anchor_set(root, "arc").items


def predict(capsys, root, path):
    return cli(capsys, "predict", "--anchor-set", root, "--benchmark", "arc", "--responses", path)


@pytest.mark.parametrize("wrap", [lambda a: {"answers": a}, lambda a: {"model": "x", "r": [a]}])
def test_wrapped_json_answers_are_refused_not_read_as_item_ids(published, tmp_path, capsys, wrap):
    root, items = published
    path = tmp_path / "a.json"
    path.write_text(json.dumps(wrap(dict.fromkeys(items, 1))))
    rc, out, err = predict(capsys, root, path)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "holds an object or a list, not an answer" in err and "missing" not in err


def test_compressed_and_semicolon_answers_are_named(published, tmp_path, capsys):
    root, items = published
    text = "item,correct\n" + "".join(f"{i},1\n" for i in items)
    packed = tmp_path / "a.csv"
    packed.write_bytes(gzip.compress(text.encode()))
    rc, _, err = predict(capsys, root, packed)
    assert rc == 2 and "a gzip-compressed file, not text; decompress it first (gunzip a.csv)" in err
    semi = tmp_path / "b.csv"
    semi.write_text(text.replace(",", ";"))
    rc, _, err = predict(capsys, root, semi)
    assert rc == 2 and "separated by ';', not commas" in err


def test_answer_words_t_f_and_plus_one_are_read(published, tmp_path, capsys):
    root, items = published
    words = ["t", "f", "+1.0", "-1.0", " T ", "F", "true", "0"]
    path = tmp_path / "a.csv"
    rows = [f"{i},{w}\n" for i, w in zip(items, words, strict=True)]
    path.write_text("item,correct\n" + "".join(rows))
    rc, out, err = predict(capsys, root, path)
    assert rc == 0 and "from 8/8 anchors" in out, err


def test_answers_of_other_items_are_not_kept():
    """Memory follows the anchors, not the file (bench/faults.py --corpus measures 54 MB)."""
    merged = MergedAnswers({"a", "b"})
    for n in range(10_000):
        merged.add(f"other-{n}", 1, "f")
    merged.add(" a ", 1, "f")
    assert merged.values == {"a": 1} and len(merged.seen) == 1


# -- the refresh console -----------------------------------------------------------------


def test_the_flows_pipeline_error_leaves_no_traceback_on_the_console(capsys):
    from sparseeval.cli.refresh import _input_errors_in_one_line

    console = logging.StreamHandler()
    log = logging.getLogger("tests.flow_runs")
    logging.getLogger().addHandler(console)
    try:
        with _input_errors_in_one_line(verbose=False):
            try:
                raise PipelineError("refresh failed for arc; report at r.md")
            except PipelineError:
                log.exception("Encountered exception during execution")
    finally:
        logging.getLogger().removeHandler(console)
    assert "Traceback" not in capsys.readouterr().err
