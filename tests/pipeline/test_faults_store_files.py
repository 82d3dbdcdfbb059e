"""The store's files and ingest's inputs when they are not what they should be (issue 21,
items 9 and 10): damaged stores, a newer schema, a full disk, compressed files, other
delimiters, one answer vocabulary, the retry policy of a full disk.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import logging
import lzma
import os
import zipfile

import duckdb
import pytest

from sparseeval.consume.answers.responses import ResponsesError, sign
from sparseeval.pipeline.store import LongTable, Store, StoreError, ingest
from sparseeval.pipeline.store import ingestion as ingestion_module

HEADER = "model,benchmark,item,correct\n"


def long_csv(path, n_models: int = 30, n_items: int = 40):
    rows = [f"m{m},arc,{i},{(m * i) % 2}\n" for m in range(n_models) for i in range(n_items)]
    path.write_text(HEADER + "".join(rows))
    return path


def counts(path) -> tuple[int, int]:
    with Store.open(path, read_only=True) as s:
        return s.con.execute("SELECT count(*), sum(correct::INT) FROM results").fetchone()


@pytest.fixture
def filled(tmp_path):
    """A closed store holding one file's 1,200 results."""
    path = tmp_path / "store.duckdb"
    with Store.open(path) as s:
        ingest(s, LongTable(long_csv(tmp_path / "a.csv")))
    return path


# -- damaged store ---------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0.5, 5000 / 3_158_016, 0.0])
def test_a_truncated_store_is_a_damaged_store(filled, keep):
    os.truncate(filled, int(os.path.getsize(filled) * keep))
    for read_only in (False, True):
        with pytest.raises(StoreError, match=r"^damaged store .*restore it"):
            Store.open(filled, read_only=read_only)


def test_a_store_of_random_bytes_is_a_damaged_store(tmp_path):
    path = tmp_path / "store.duckdb"
    path.write_bytes(os.urandom(20_000))
    with pytest.raises(StoreError, match="damaged store"):
        Store.open(path)


def test_an_intact_store_after_failed_ingests_still_opens(tmp_path):
    """The damage check must not refuse a good file (free blocks at its end are cut off)."""
    path = tmp_path / "store.duckdb"
    bad = tmp_path / "bad.csv"
    bad.write_bytes(gzip.compress(b"x" * 1000))
    for _ in range(3):
        with Store.open(path) as s:
            ingest(s, LongTable(bad), keep_going=True)
    with Store.open(path) as s:
        ingest(s, LongTable(long_csv(tmp_path / "a.csv")))
    assert counts(path)[0] == 1200


def test_a_newer_schema_is_refused_and_left_as_it_is(tmp_path):
    path = tmp_path / "store.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.close()
    for read_only in (False, True):
        with pytest.raises(StoreError, match="schema version 2, newer"):
            Store.open(path, read_only=read_only)
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT * FROM meta").fetchall() == [("schema_version", "2")]
    assert con.execute("SHOW TABLES").fetchall() == [("meta",)]  # nothing created


# -- a full disk -------------------------------------------------------------------------


def test_a_full_disk_during_ingest_is_one_line_and_keeps_the_data(filled, tmp_path, monkeypatch,
                                                                   caplog):  # fmt: skip
    """ENOSPC injected where DuckDB writes: every write from the unit's load on fails, the
    record of the failure too (as on a disk with no byte free)."""
    before = counts(filled)
    full = duckdb.IOException('IO Error: Could not write file "store.duckdb": No space left '
                              "on device")  # fmt: skip
    real_execute = ingestion_module.execute

    def no_space(*a, **k):
        raise full

    def failing_execute(con, name, params):
        if name == "run_finish":
            raise full
        return real_execute(con, name, params)

    monkeypatch.setattr(ingestion_module, "_load", no_space)
    monkeypatch.setattr(ingestion_module, "execute", failing_execute)
    caplog.set_level(logging.INFO)
    with Store.open(filled) as s:
        (report,) = ingest(s, LongTable(long_csv(tmp_path / "b.csv", 31)), keep_going=True)
    assert report.status == "failed"
    assert report.message.startswith("disk full, nothing of it was stored: IO Error")
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert any("could not record failed run" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()
    assert counts(filled) == before


def test_a_full_disk_is_not_retried_by_the_ingest_task():
    from sparseeval.tasks.policies import transient

    class State:
        def __init__(self, exc):
            self.exc = exc

        def result(self, raise_on_failure=False):
            return self.exc

    def retried(exc) -> bool:
        return transient(None, None, State(exc))

    for code in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.ENOTDIR, errno.EACCES):
        assert not retried(OSError(code, os.strerror(code))), code
    assert retried(OSError(errno.ETIMEDOUT, "timed out")) and retried(ConnectionResetError())
    assert not retried(StoreError("bad file"))


# -- compressed files and other delimiters ---------------------------------------------


def _zip(data: bytes) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.csv", data)
    return buf.getvalue()


ZSTD = b"\x28\xb5\x2f\xfd" + b"\x00" * 20  # a zstd frame's magic (no encoder in the stdlib)


@pytest.mark.parametrize(
    "pack, name, command",
    [(gzip.compress, "gzip", "gunzip"), (bz2.compress, "bzip2", "bunzip2"),
     (lzma.compress, "xz", "unxz"), (_zip, "zip", "unzip"), (lambda d: ZSTD, "zstd", "zstd -d")],
)  # fmt: skip
def test_compressed_files_named_csv_are_said_to_be_compressed(store, tmp_path, pack, name,
                                                              command):  # fmt: skip
    path = tmp_path / "results.csv"
    path.write_bytes(pack((HEADER + "m,arc,1,1\n").encode()))
    (report,) = ingest(store, LongTable(path), keep_going=True)
    assert report.status == "failed"
    assert f"a {name}-compressed file, not text; decompress it first ({command}" in report.message
    assert "UTF-8" not in report.message


@pytest.mark.parametrize("sep, named", [(";", "';'"), ("\t", "tabs")])
def test_other_delimiters_get_a_hint(store, tmp_path, sep, named):
    path = tmp_path / "results.csv"
    path.write_text(HEADER.replace(",", sep) + sep.join(["m", "arc", "1", "1"]) + "\n")
    (report,) = ingest(store, LongTable(path), keep_going=True)
    assert f"the header is separated by {named}, not commas" in report.message


# -- one answer vocabulary -------------------------------------------------------------


def test_the_store_and_predict_read_the_same_answer_words(store, tmp_path):
    words = ["1", "1.0", "+1", "+1.0", "true", "t", "0", "0.0", "-1", "-1.0", "false", "f",
             "T", " F ", "TRUE", "yes", "2", "1.00", "tru", "-0"]  # fmt: skip
    path = tmp_path / "words.csv"
    path.write_text(HEADER + "".join(f"m,arc,{n},{w}\n" for n, w in enumerate(words)))
    ingest(store, LongTable(path))
    stored = dict(store.con.execute("SELECT i.item, r.correct FROM results r "
                                    "JOIN items i USING (item_id)").fetchall())  # fmt: skip
    for n, w in enumerate(words):
        try:
            expected = sign(w, "x") > 0
        except ResponsesError:
            expected = None
        assert stored.get(str(n)) == expected, (w, stored.get(str(n)))
    assert all(stored.get(str(n)) is not None for n in range(12))  # t, f, +1.0 ... read


# -- found by the corpus (bench/faults.py --corpus) --------------------------------------


def test_a_quote_never_closed_is_one_quarantined_line(store, tmp_path):
    path = long_csv(tmp_path / "big.csv", 50, 40)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(500, 'm9,arc,"1,1\n')
    lines.insert(1500, 'm8,"arc,2,1\n')
    path.write_text("".join(lines))
    (report,) = ingest(store, LongTable(path))
    assert (report.status, report.n_new, report.n_quarantined) == ("ok", 2000, 2)
    q = store.quarantine().sort("line")
    assert q["line"].to_list() == [501, 1501]
    assert q["raw"].to_list() == ['m9,arc,"1,1', 'm8,"arc,2,1']


def test_a_store_path_that_is_a_fifo_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "store.duckdb")
    with pytest.raises(StoreError, match="not a regular file"):
        Store.open(tmp_path / "store.duckdb")


def test_an_lm_eval_samples_fifo_is_refused_not_read(store, tmp_path):
    from sparseeval.pipeline.store import LmEvalRun

    run = tmp_path / "run"
    run.mkdir()
    (run / "results_2025-01-01T00-00-00.json").write_text('{"model_name": "org/m"}')
    os.mkfifo(run / "samples_arc_challenge_2025-01-01T00-00-00.jsonl")
    (report,) = ingest(store, LmEvalRun(run), keep_going=True)
    assert report.status == "failed" and "not a regular file" in report.message


@pytest.mark.parametrize("name", ["suite", "Suite", "average", "latest", "k25", "v3"])
def test_names_the_published_layout_reserves_are_refused(store, name):
    with pytest.raises(StoreError, match="reserved by the published layout"):
        store.add_benchmark(name)
    store.add_benchmark(f"{name}_local")  # a name merely containing one is fine
