"""A store opened for writing sets its schema up once: later opens of the same schema write
nothing, and a store set up by other code (another schema text) is set up again."""

from __future__ import annotations

import duckdb

from sparseeval.pipeline.store import db
from sparseeval.pipeline.store.db import Store


def _schema_runs(monkeypatch) -> list[str]:
    runs: list[str] = []
    statements = db.statements

    def counted(name: str) -> list[str]:
        runs.append(name)
        return statements(name)

    monkeypatch.setattr(db, "statements", counted)
    return runs


def test_reopening_a_store_runs_no_schema_statement(tmp_path, monkeypatch):
    path = tmp_path / "store.duckdb"
    runs = _schema_runs(monkeypatch)
    Store.open(path).close()
    assert runs.count("schema") == 1
    for read_only in (False, True, False):
        Store.open(path, read_only=read_only).close()
    assert runs.count("schema") == 1


def test_a_store_set_up_by_other_code_is_set_up_again(tmp_path, monkeypatch):
    """A store from before the fingerprint (or from a schema edited since): the views and
    the known benchmarks come back, as they did on every open."""
    path = tmp_path / "store.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("DROP VIEW results_view")
    con.execute("DELETE FROM benchmarks WHERE name = 'arc'")
    con.execute("DELETE FROM meta WHERE key = 'schema_fingerprint'")
    con.close()
    runs = _schema_runs(monkeypatch)
    with Store.open(path) as store:
        assert runs.count("schema") == 1
        assert store.con.sql("SELECT count(*) FROM results_view").fetchall() == [(0,)]
        names = {n for (n,) in store.con.sql("SELECT name FROM benchmarks").fetchall()}
        fingerprint = store.con.sql(
            "SELECT value FROM meta WHERE key = 'schema_fingerprint'"
        ).fetchall()
    assert "arc" in names
    assert fingerprint == [(db.schema_fingerprint(),)]
