"""Canonical ids (issue 21, items 6 and 7): one rule in `consume.answers.ids`, applied by the store,
`predict` and the published sets; a benchmark name that cannot be published is refused at
registration and in rows."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import polars as pl
import pytest

from sparseeval.consume.answers.ids import (
    MAX_ITEM_LEN,
    IdError,
    canonical_id,
    check_benchmark_name,
    is_canonical,
)
from sparseeval.pipeline.store import LongTable, Store, StoreError, ingest

HEADER = "model,benchmark,item,correct\n"
NFC = unicodedata.normalize("NFC", "org/caf\u00e9")
NFD = unicodedata.normalize("NFD", NFC)


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def long_csv(tmp_path: Path, rows: list[tuple[str, str, str, str]], name="t.csv") -> Path:
    path = tmp_path / name
    text = HEADER + "".join(",".join(f'"{v}"' for v in row) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")
    return path


def quarantine(store: Store) -> list[tuple[int, str]]:
    q = store.quarantine()
    return list(zip(q["line"].to_list(), q["reason"].to_list(), strict=True))


# -- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    ["org/a", "org/a ", " org/a", "org/\u200ba", "\ufefforg/a", "org/a\u00a0", "\u3000org/a"],
)
def test_invisible_differences_have_one_canonical_form(raw):
    assert canonical_id(raw) == "org/a"


def test_nfd_and_nfc_are_one_id():
    assert NFD != NFC and canonical_id(NFD) == canonical_id(NFC) == NFC


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("org/a\n", "model id has a control character (\\n)"),
        ("org\x00a", "model id has a control character (\\x00)"),
        ("org/\x1b[31ma", "model id has a control character (\\x1b)"),
        ("org/a\tb", "model id has a control character (\\t)"),
        ("org/\u202ea", "model id has a format character (\\u202e)"),
        ("org/a\u2028", "model id has a control character (\\u2028)"),
        ("  \u200b ", "model id is empty"),
        ("m" * 257, "model id is 257 characters long (at most 256)"),
    ],
)
def test_ids_without_a_canonical_form_are_refused(raw, reason):
    with pytest.raises(IdError) as err:
        canonical_id(raw, "model id", max_len=256)
    assert str(err.value) == reason
    assert not is_canonical(raw)


@pytest.mark.parametrize("name", ["my bench", "../../x", "x/y", "..", "'q'", '"q"', ".hidden",
                                  "-x", "", "b\u00e9nch", "a\nb", "x" * 65])  # fmt: skip
def test_benchmark_names_that_cannot_be_published(store, name):
    with pytest.raises(IdError, match="benchmark name must be 1 to 64 characters"):
        check_benchmark_name(name)
    with pytest.raises(StoreError, match="benchmark name must be 1 to 64 characters"):
        store.add_benchmark(name)
    assert name not in store.benchmarks()["benchmark"].to_list()


@pytest.mark.parametrize("name", ["my_bench", "arc", "mmlu-pro", "v1.2", "X9"])
def test_publishable_benchmark_names_register(store, name):
    assert check_benchmark_name(name) == name
    store.add_benchmark(name)
    assert name in store.benchmarks()["benchmark"].to_list()


# -- the store ----------------------------------------------------------------------------


def test_model_spellings_become_one_model(store, tmp_path):
    rows = [(m, "arc", "1", "1") for m in ("org/a", "org/a ", " org/a", "org/\u200ba")]
    rows += [(NFD, "arc", "2", "0"), (NFC, "arc", "3", "1")]
    (report,) = ingest(store, LongTable(long_csv(tmp_path, rows)))
    assert sorted(store.models()["model"].to_list()) == sorted(["org/a", NFC])
    assert (report.n_read, report.n_new, report.n_duplicates) == (6, 3, 3)


def test_item_with_a_space_conflicts_with_the_item(store, tmp_path):
    rows = [("org/a", "arc", "1", "1"), ("org/a", "arc", "1 ", "0"), ("org/a", "arc", "2", "1")]
    (report,) = ingest(store, LongTable(long_csv(tmp_path, rows)))
    assert (report.n_new, report.n_quarantined) == (1, 2)
    n_items = store.con.sql("SELECT count(*) FROM items WHERE item LIKE '1%'").fetchall()[0][0]
    assert n_items == 1


def test_ids_with_control_characters_are_quarantined_with_the_reason(store, tmp_path):
    rows = [
        ("org/a", "arc", "1", "1"),
        ("org/\x00b", "arc", "1", "1"),
        ("org/c", "arc", "x\x1b[2J", "1"),
        ("org/d", "arc", "\u202e1", "0"),
        ("org/e", "arc", "2", "0"),
    ]
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    (report,) = ingest(store, LongTable(path))
    assert (report.n_read, report.n_new, report.n_quarantined) == (5, 2, 3)
    assert quarantine(store) == [
        (3, "model id has a control character"),
        (4, "item id has a control character"),
        (5, "item id has a format character"),
    ]
    assert sorted(store.models()["model"].to_list()) == ["org/a", "org/e"]


def test_newline_in_a_quoted_field_is_quarantined(store, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + 'org/a,arc,1,1\n"org/\nb",arc,1,1\n', encoding="utf-8")
    (report,) = ingest(store, LongTable(path))
    assert (report.n_new, report.n_quarantined) == (1, 1)
    assert [r for _, r in quarantine(store)] == ["model id has a control character"]


def test_parquet_ids_are_canonical_too(store, tmp_path):
    path = tmp_path / "t.parquet"
    frame = {"model": [" org/a", "org/a", NFD], "benchmark": ["arc", "arc ", "arc"],
             "item": ["1", "2\u200b", "1"], "correct": ["1", "0", "1"]}  # fmt: skip
    pl.DataFrame(frame).write_parquet(path)
    (report,) = ingest(store, LongTable(path))
    assert (report.n_new, report.n_quarantined) == (3, 0)
    assert sorted(store.models()["model"].to_list()) == sorted(["org/a", NFC])
    items = store.con.sql("SELECT item FROM items ORDER BY item").fetchall()
    assert [i for (i,) in items] == ["1", "2"]


def test_a_registered_name_that_cannot_be_published_is_quarantined(store, tmp_path):
    # e.g. a store written before the rule: its rows are refused, naming the rule
    store.con.execute("INSERT INTO benchmarks (benchmark_id, name) VALUES (999, 'my bench')")
    rows = [("org/a", "my bench", "1", "1"), ("org/a", "arc", "1", "1")]
    (report,) = ingest(store, LongTable(long_csv(tmp_path, rows)))
    assert (report.n_new, report.n_quarantined) == (1, 1)
    assert [r for _, r in quarantine(store)] == [
        "benchmark name cannot be published (letters, digits, '_', '-', '.'): my bench"
    ]


def test_long_ids_after_canonicalization(store, tmp_path):
    rows = [("org/a", "arc", " " + "i" * MAX_ITEM_LEN + " ", "1"), ("org/a", "arc", "2", "1")]
    (report,) = ingest(store, LongTable(long_csv(tmp_path, rows)))
    assert (report.n_new, report.n_quarantined) == (2, 0)  # trimmed, it fits


@pytest.mark.parametrize("name", ["my bench", "../../x", "x/y", "..", "it's"])
def test_ingest_refuses_a_new_benchmark_name_in_one_line(tmp_path, monkeypatch, capsys, name):
    from sparseeval.cli import main

    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    path = long_csv(tmp_path, [("org/a", name, "1", "1")])
    rc = main(["ingest", "--new-benchmark", name, str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (rc, out, err)
    assert "benchmark name must be 1 to 64 characters" in err
    with Store.open(tmp_path / "home" / "store.duckdb", read_only=True) as s:
        assert name not in s.benchmarks()["benchmark"].to_list()
