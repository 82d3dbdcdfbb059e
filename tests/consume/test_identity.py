"""Item identity on the consumer side: id kinds, the opaque-id refusal and its --id-map, and
the doc_hash check of lm-eval answers (`sparseeval.consume.answers.identity`)."""

from __future__ import annotations

import json

import pytest

from sparseeval.consume.answers import identity as ids
from sparseeval.consume.lm_eval.harness import LmEvalError, export_samples, item_source

SOURCES = {
    "0": {"task": "arc_challenge", "doc_id": 0, "hash": "doc_hash:aa", "id_kind": ids.LM_EVAL_DOC},
    "1": {"task": "arc_challenge", "doc_id": 1, "hash": "doc_hash:bb", "id_kind": ids.LM_EVAL_DOC},
    "2": {"task": "arc_challenge", "doc_id": 2, "hash": "example:cc", "id_kind": ids.ROW_INDEX},
    "914": {"id_kind": ids.OPAQUE},
}


def test_each_entry_says_its_kind_and_old_entries_are_unknown():
    kinds = ids.id_kinds(["0", "2", "914", "7"], SOURCES | {"7": {"task": "t", "doc_id": 7}})
    assert kinds == {"0": ids.LM_EVAL_DOC, "2": ids.ROW_INDEX, "914": ids.OPAQUE,
                     "7": ids.UNKNOWN}  # fmt: skip
    assert set(ids.id_kinds(["0"], None).values()) == {ids.UNKNOWN}


def test_an_opaque_id_is_never_a_doc_id():
    with pytest.raises(LmEvalError, match=r"'914' has an opaque id.*--id-map"):
        item_source("914", "arc", SOURCES)
    with pytest.raises(LmEvalError, match="opaque"):
        export_samples(["0", "914"], "arc", SOURCES)
    with pytest.raises(LmEvalError) as e:
        ids.check_exportable("arc", ["0", "914"], SOURCES)
    assert str(e.value).count("\n") == 0
    assert str(e.value).startswith("arc: 1 anchor id(s) are opaque (914)")
    assert "--id-map FILE.csv" in str(e.value)
    ids.check_exportable("arc", ["0", "1", "2"], SOURCES)  # doc ids and row indices export


def test_an_id_map_makes_opaque_ids_exportable(tmp_path):
    path = tmp_path / "map.csv"
    path.write_text("item,doc_id\n914,17\n")
    mapping = ids.read_id_map(path, "arc_challenge")
    assert mapping == {"914": {"task": "arc_challenge", "doc_id": 17}}
    sources = ids.with_id_map(["0", "914"], SOURCES, mapping)
    assert sources["914"] == {"id_kind": ids.LM_EVAL_DOC, "task": "arc_challenge", "doc_id": 17}
    ids.check_exportable("arc", ["0", "914"], sources)
    assert export_samples(["0", "914"], "arc", sources) == {"arc_challenge": [0, 17]}


@pytest.mark.parametrize(
    ("text", "task", "says"),
    [
        ("item,task\n914,arc_challenge\n", "arc_challenge", "columns item,doc_id"),
        ("item,doc_id\n914,17.5\n", "arc_challenge", "map.csv:2: doc_id '17.5'"),
        ("item,doc_id,task\n914,3,\n", None, "map.csv:2: no task"),
    ],
)
def test_a_bad_id_map_names_its_line(tmp_path, text, task, says):
    path = tmp_path / "map.csv"
    path.write_text(text)
    with pytest.raises(LmEvalError, match="--id-map") as e:
        ids.read_id_map(path, task)
    assert says in str(e.value)


def samples(
    folder,
    hashes: dict[int, str],
    name: str = "samples_arc_challenge_2024-05-01T12-00-00.123456.jsonl",
):
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"doc_id": d, "doc_hash": h, "filter": "none", "acc_norm": 1.0}
             for d, h in hashes.items()]  # fmt: skip
    path = folder / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


@pytest.mark.parametrize("name", ["samples_arc_challenge_2024-05-01T12-00-00.123456.jsonl",
                                  "my_run.jsonl"])  # fmt: skip
def test_answers_to_other_questions_are_named(tmp_path, name):
    from sparseeval.consume.lm_eval.harness import read_responses

    folder = samples(tmp_path / "run", {0: "aa", 1: "zz", 2: "other"}, name)
    hashes: dict[str, str] = {}
    got = read_responses([folder / name], items=["0", "1", "2"], benchmark="arc",
                         item_sources=SOURCES, task="arc_challenge", hashes=hashes)  # fmt: skip
    assert got == {"0": 1, "1": 1, "2": 1}
    assert hashes == {"0": "aa", "1": "zz", "2": "other"}  # whatever the file's name
    # doc 1's hash differs; doc 2's set hash is another kind (a details row), not compared
    assert ids.hash_mismatches(SOURCES, hashes) == ["1"]
    assert ids.hash_mismatches(SOURCES, {"0": "aa"}) == []
    message = ids.mismatch_message("arc", ["1"])
    assert message == (
        "arc: 1 answered anchor(s) have another doc_hash than the set's (1): the questions"
        " differ from the set's: dataset or lm-eval version changed? (--ignore-hash-mismatch"
        " to score them anyway)"
    )
