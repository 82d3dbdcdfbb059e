"""One bad line in an lm-eval samples file (issue 21, item 3): the store quarantines it with
its reason and line and keeps the good rows; `predict` names the file and line in one line.
Also the same class in long tables: Parquet list/struct columns are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from sparseeval.cli import main
from sparseeval.consume.lm_eval.harness import LmEvalError, read_samples_file
from sparseeval.pipeline.store import LmEvalRun, LongTable, SourceError, Store, ingest

TS = "2024-05-01T12-00-00.123456"
MAX = f"{2**63 - 1:,}"
GOOD = [json.dumps({"doc_id": d, "acc_norm": d % 2}) for d in range(5)]

# (line text, reason the store quarantines it with)
BAD = [
    (json.dumps({"doc_id": 2**70, "acc_norm": 1}), f"doc_id is out of range (more than {MAX})"),
    (json.dumps({"doc_id": "9" * 30, "acc_norm": 1}), f"doc_id is out of range (more than {MAX})"),
    ("[" * 100_000 + "]" * 100_000, "malformed JSON line: nested too deeply"),
    ('{"doc_id": 7, "acc_norm": ' + "[" * 100_000, "malformed JSON line: nested too deeply"),
    ("[1, 2]", "not a JSON object (list), not an lm-eval sample"),
    ('"doc"', "not a JSON object (str), not an lm-eval sample"),
    ("42", "not a JSON object (int), not an lm-eval sample"),
    ('{"doc_id": 1e999, "acc_norm": 1}', "doc_id inf is not a non-negative integer"),
    ('{"doc_id": NaN, "acc_norm": 1}', "doc_id nan is not a non-negative integer"),
    ('{"doc_id": 8, "acc_norm": NaN}', "acc_norm is nan, not a 0/1 result"),
    ('{"doc_id": 8, "acc_norm": "1"}', "acc_norm is '1', not a 0/1 result"),
    ('{"doc_id": 8, "acc_norm": [1]}', "acc_norm is [1], not a 0/1 result"),
    ('{"doc_id": 8, "acc_norm": {"v": 1}}', "acc_norm is {'v': 1}, not a 0/1 result"),
    ('{"doc_id": 8, "acc_norm": 1, "filter": 5}', "filter is 5, not a string"),
    ('{"doc_id": 8, "acc_norm": 1, "acc_norm": 0}', "repeated key(s) 'acc_norm' in sample"),
    ('{"doc_id": 8, "doc_id": 9, "acc_norm": 1}', "repeated key(s) 'doc_id' in sample"),
    ('{"doc_id": 8, "acc_norm": 1', "malformed JSON line: Expecting ',' delimiter"),
]


def samples_file(folder: Path, lines: list[str], task: str = "arc_challenge") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"results_{TS}.json").write_text(json.dumps({"model_name": "org/m"}))
    path = folder / f"samples_{task}_{TS}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def test_every_bad_line_is_quarantined_and_the_good_rows_land(store, tmp_path):
    lines = [GOOD[0], *(t for t, _ in BAD[:9]), *GOOD[1:3], *(t for t, _ in BAD[9:]), *GOOD[3:]]
    samples_file(tmp_path / "run", lines)
    (r,) = ingest(store, LmEvalRun(tmp_path / "run"))
    assert (r.status, r.n_read, r.n_new, r.n_quarantined) == ("ok", len(lines), 5, len(BAD))
    q = store.quarantine().sort("line")
    reasons = [x[: len(want)] for x, (_, want) in zip(q["reason"], BAD, strict=True)]
    assert reasons == [want for _, want in BAD]
    expected = [2 + k for k in range(9)] + [13 + k for k in range(len(BAD) - 9)]
    assert q["line"].to_list() == expected
    assert max(map(len, q["raw"])) <= 2003  # the raw line is kept, cut


@pytest.mark.parametrize(("line", "reason"), BAD, ids=range(len(BAD)))
def test_one_bad_line_is_one_quarantined_row(store, tmp_path, line, reason):
    samples_file(tmp_path / "run", [*GOOD[:2], line, *GOOD[2:]])
    (r,) = ingest(store, LmEvalRun(tmp_path / "run"))
    assert (r.n_new, r.n_quarantined) == (5, 1)
    ((got, n),) = store.quarantine().select("reason", "line").rows()
    assert got.startswith(reason) and n == 3


@pytest.mark.parametrize(("line", "reason"), BAD, ids=range(len(BAD)))
def test_the_consumer_reader_names_file_line_and_reason(tmp_path, line, reason):
    path = samples_file(tmp_path / "run", [*GOOD[:2], line])
    with pytest.raises(LmEvalError) as err:
        read_samples_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}:3: ") and "\n" not in message and len(message) < 400
    core = reason.removeprefix("malformed JSON line: ")
    assert core.split(" (")[0][:30] in message


def test_predict_on_a_bad_samples_file_is_one_line(tmp_path, capsys):
    from sparseeval.pipeline.versions import set_latest
    from tests.helpers import publish_fit, tiny_fit

    fitted = tiny_fit(seed=2, n_test=60, n_valid=80, item_ids=[str(j) for j in range(60)])
    publish_fit(tmp_path / "pub", "arc", fitted)
    set_latest(tmp_path / "pub", "arc", 1)
    for k, (line, _) in enumerate(BAD[:4]):
        path = samples_file(tmp_path / f"r{k}", [*GOOD, line])
        argv = ["predict", "--anchor-set", str(tmp_path / "pub"), "--benchmark", "arc"]
        rc = main([*argv, "--responses", str(path)])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith(f"error: {path}:6: ") and "Traceback" not in err


# -- long tables: nested Parquet columns are not text ------------------------------------


@pytest.mark.parametrize(
    ("column", "values", "kind"),
    [
        ("item", [[1, 2], [3]], "BIGINT[]"),
        ("model", [{"org": "a"}, {"org": "b"}], "STRUCT"),
        ("correct", [[1], [0]], "BIGINT[]"),
        ("benchmark", [b"arc", b"arc"], "BLOB"),
    ],
)
def test_nested_parquet_columns_are_refused_in_one_line(store, tmp_path, column, values, kind):
    frame = {"model": ["org/a", "org/b"], "benchmark": ["arc", "arc"], "item": ["1", "2"],
             "correct": [1, 0]} | {column: values}  # fmt: skip
    path = tmp_path / "t.parquet"
    pl.DataFrame(frame).write_parquet(path)
    with pytest.raises(SourceError) as err:
        ingest(store, LongTable(path))
    assert str(err.value).startswith(f"{path}: column {column} is {kind}")
    assert str(err.value).endswith(", not text or a number")
    assert store.models().height == 0


@pytest.mark.parametrize(
    ("results", "why"),
    [
        ("[" * 100_000, "not a JSON results file (nested too deeply)"),
        ('{"model_name": ["org/m"]}', "model_name is not a string; pass the model name"),
        ('{"config": "x"}', "no model_name or pretrained= in it; pass the model name"),
    ],
)
def test_a_bad_results_file_is_one_line(store, tmp_path, results, why):
    samples_file(tmp_path / "run", GOOD)
    (tmp_path / "run" / f"results_{TS}.json").write_text(results)
    with pytest.raises(SourceError) as err:
        ingest(store, LmEvalRun(tmp_path / "run"))
    assert str(err.value) == f"{tmp_path / 'run' / f'results_{TS}.json'}: {why}"
