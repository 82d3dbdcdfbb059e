"""One answer from two places (issue 21, item 1): repeated columns or keys, repeated rows,
invisibly different item ids and two files of one suite are refused naming the anchors, or
agree; and `predict`'s readers are bounded (deep nesting, bad benchmark names)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.consume.answers.responses import ResponsesError, read_responses_files
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError, resolve_version_dir, seal
from sparseeval.pipeline.versions import set_latest
from tests.helpers import cli

B = "arc"


@pytest.fixture
def loaded(arc_set):
    """The published ARC set's folder and the set as loaded."""
    return arc_set, load_anchor_set(arc_set, B)


def refused(files, aset) -> str:
    with pytest.raises(ResponsesError) as err:
        read_responses_files(files, aset)
    assert "\n" not in str(err.value)
    return str(err.value)


# -- one file, two places for one answer -------------------------------------------------


@pytest.mark.parametrize(
    ("header", "twice"),
    [("item,correct,correct", "correct"), ("item,item,correct", "item"),
     ("item, correct,correct ", "correct"), ("item,correct,item,correct", "item, correct")],
)  # fmt: skip
def test_csv_with_a_repeated_column_is_refused(loaded, tmp_path, header, twice):
    _, aset = loaded
    a = aset.items[0]
    path = tmp_path / "a.csv"
    path.write_text(f"{header}\n{a},0,1,1\n", encoding="utf-8")
    assert refused([path], aset) == f"{path}: line 1: repeated column(s) {twice}; keep one"


def test_jsonl_record_with_a_repeated_key_is_refused(loaded, tmp_path):
    _, aset = loaded
    path = tmp_path / "a.jsonl"
    a = aset.items[0]
    path.write_text(f'{{"item": "{a}", "correct": 0}}\n{{"item": "{a}", "correct": 0, '
                    '"correct": 1}\n', encoding="utf-8")  # fmt: skip
    assert refused([path], aset) == f"{path}:2: repeated key(s) correct; keep one"


def test_json_record_with_a_repeated_key_is_refused(loaded, tmp_path):
    _, aset = loaded
    path = tmp_path / "a.json"
    a, b = aset.items[:2]
    path.write_text(f'[{{"item": "{a}", "correct": 1}}, {{"item": "{b}", "item": "{a}", '
                    '"correct": 0}]', encoding="utf-8")  # fmt: skip
    assert refused([path], aset) == f"{path}[1]: repeated key(s) item; keep one"


@pytest.mark.parametrize("spelling", ["{a} ", " {a}", "{a}\u200b", "\u00a0{a}"])
def test_invisibly_different_item_ids_are_one_anchor(loaded, tmp_path, spelling):
    _, aset = loaded
    a = aset.items[0]
    other = spelling.format(a=a)
    path = tmp_path / "a.json"
    path.write_text(json.dumps({a: 1, "x": 0})[:-1] + f", {json.dumps(other)}: 0}}")
    msg = refused([path], aset)
    assert msg.startswith(f"conflicting answers for 1 anchor(s): {a} (")
    path.write_text(json.dumps({a: 1})[:-1] + f", {json.dumps(other)}: 1}}")
    assert read_responses_files([path], aset)[a] == 1  # agreeing: fine


def test_item_ids_with_control_characters_are_refused(loaded, tmp_path):
    _, aset = loaded
    path = tmp_path / "a.jsonl"
    path.write_text('{"item": "1", "correct": 1}\n{"item": "a\\u0000b", "correct": 0}\n')
    assert refused([path], aset) == f"{path}:2: item id has a control character (\\x00)"


def test_repeated_rows_conflict_across_formats(loaded, tmp_path):
    _, aset = loaded
    a, b = aset.items[:2]
    csv_path = tmp_path / "a.csv"
    csv_path.write_text(f"item,correct\n{a},1\n{b},0\n{a},1\n")
    jsonl = tmp_path / "b.jsonl"
    jsonl.write_text(json.dumps({"item": f" {a}", "correct": 0}) + "\n")
    assert read_responses_files([csv_path], aset) == {a: "1", b: "0"}  # repeats agree
    msg = refused([csv_path, jsonl], aset)
    assert msg.startswith(f"conflicting answers for 1 anchor(s): {a} ({csv_path}:2: '1'")


def test_python_answers_with_invisible_differences_conflict(loaded):
    _, aset = loaded
    a = aset.items[0]
    with pytest.raises(ResponsesError, match=f"conflicting answers for anchor {a}"):
        aset.predict({a: 1, f"{a} ": 0}, allow_missing=True)


# -- bounded readers and names ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [("a.json", "[" * 100_000, "not valid JSON (nested too deeply)"),
     ("a.json", '{"1": ' + "9" * 5000 + "}", "not valid JSON (Exceeds the limit"),
     ("a.jsonl", '{"item": ' + "[" * 100_000, "1: not valid JSON (nested too deeply)")],
)  # fmt: skip
def test_answers_json_is_bounded(loaded, tmp_path, name, text, why):
    _, aset = loaded
    path = tmp_path / name
    path.write_text(text)
    assert refused([path], aset).startswith(f"{path}{':' if name.endswith('l') else ': '}{why}")


@pytest.mark.parametrize("name", ["../../x", "x/y", "..", "my bench", "'arc'"])
def test_predict_refuses_a_benchmark_name_in_one_line(loaded, tmp_path, capsys, name):
    root, _ = loaded
    path = tmp_path / "a.csv"
    path.write_text("item,correct\n1,1\n")
    argv = ["predict", "--anchor-set", str(root), "--benchmark", name, "--responses", str(path)]
    rc, out, err = cli(argv, capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: benchmark name must be 1 to 64 characters")


@pytest.mark.parametrize("bad", ["{a} ", "{a}\n", "{a}\u200b"])
def test_a_published_set_with_non_canonical_item_ids_is_refused(loaded, bad):
    root, _ = loaded
    folder = resolve_version_dir(root, B, 1)
    man = json.loads((folder / "manifest.json").read_text())
    man["items"][0] = bad.format(a=man["items"][0])
    man = seal(man)
    (folder / "manifest.json").write_text(json.dumps(man))
    latest = resolve_version_dir(root, B).parent / "latest"
    ptr = json.loads(latest.read_text())
    ptr["promoted"]["1"] = ptr["manifest_sha256"] = man["manifest_sha256"]
    latest.write_text(json.dumps(ptr))
    with pytest.raises(AnchorSetError, match="is not canonical"):
        load_anchor_set(root, B)


# -- a suite: a benchmark's own file and a joint file ------------------------------------


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory):
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite

    root = tmp_path_factory.mktemp("suite")
    settings = Settings.of(home=root, n_anchors=8, n_test=60, n_valid=60, n_calib=60,
                        refine_steps=2, epochs=60, patience=10, ensemble=1)  # fmt: skip
    lb = make_leaderboard(360, {"arc": 60, "gsm8k": 50}, seed=4)
    write_suite(root, fit_suite(lb, settings), settings)
    set_latest(root, "suite", 1)
    return root


def suite_files(root, tmp_path, arc_value: int, joint_value: int) -> list[str]:
    from sparseeval.consume.sets.suite_set import load_suite

    suite = load_suite(root)
    arc = tmp_path / "arc.csv"
    arc.write_text("item,correct\n" + "".join(f"{i},{arc_value}\n" for i in suite.items("arc")))
    joint = tmp_path / "all.csv"
    rows = [f"{b}/{i},{joint_value}\n" for b in suite.benchmarks for i in suite.items(b)]
    joint.write_text("item,correct\n" + "".join(rows))
    return [f"arc={arc}", str(joint)]


def test_suite_files_that_disagree_are_refused(suite_root, tmp_path, capsys):
    base = ["predict", "--anchor-set", str(suite_root), "--benchmark", "suite", "--responses"]
    rc, out, err = cli([*base, *suite_files(suite_root, tmp_path, 0, 1)], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: conflicting answers for 8 anchor(s): arc/")
    assert f"arc={tmp_path / 'arc.csv'}: '0'" in err and f"{tmp_path / 'all.csv'}: '1'" in err
    rc, out, err = cli([*base, *suite_files(suite_root, tmp_path, 1, 1)], capsys)
    assert rc == 0 and "average" in out  # agreeing sources are fine


def test_two_own_files_of_one_suite_benchmark_disagree(suite_root, tmp_path, capsys):
    files = suite_files(suite_root, tmp_path, 0, 1)
    other = tmp_path / "arc2.csv"
    other.write_text((tmp_path / "arc.csv").read_text().replace(",0\n", ",1\n"))
    base = ["predict", "--anchor-set", str(suite_root), "--benchmark", "suite", "--responses"]
    rc, _, err = cli([*base, files[0], f"arc={other}"], capsys)
    assert rc == 2 and err.startswith("error: conflicting answers for 8 anchor(s)")


def test_suite_predict_refuses_repeated_rows_that_disagree(suite_root):
    import polars as pl

    from sparseeval.consume.sets.suite_set import load_suite

    suite = load_suite(suite_root)
    answers = {b: {i: 1 for i in suite.items(b)} for b in suite.benchmarks}
    a = suite.items("arc")[0]
    rows = [*answers["arc"].items(), (a, 0)]
    answers["arc"] = pl.DataFrame({"item": [r[0] for r in rows], "correct": [r[1] for r in rows]})
    with pytest.raises(ResponsesError, match=f"conflicting answers for 1 anchor\\(s\\): arc/{a}"):
        suite.predict(answers)
    answers["arc"] = {i: 1 for i in suite.items("arc")} | {f"{a} ": 1}
    assert np.isfinite(suite.predict(answers)["average"].value)
