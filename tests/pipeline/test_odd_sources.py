"""Odd inputs to ingest (issue 28, classes 5 and 6): each is one line about that file, and the
command's other files still land."""

from __future__ import annotations

import duckdb

from sparseeval.cli import main


def _good(tmp_path):
    p = tmp_path / "good.csv"
    p.write_text("model,benchmark,item,correct\n" + "".join(
        f"m{m},arc,{i},1\n" for m in range(3) for i in range(4)))  # fmt: skip
    return p


def _rows(store) -> int:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM results_view").fetchone()[0]
    finally:
        con.close()


def test_a_1mb_column_name_fails_its_file_alone(tmp_path, capsys):
    wide = tmp_path / "wide.csv"
    wide.write_text("model," + "x" * 1_000_000 + "\nm1,1\n")
    store = tmp_path / "s.duckdb"
    rc = main(["ingest", str(_good(tmp_path)), str(wide), "--store", str(store)])
    err = capsys.readouterr().err
    assert rc == 1 and "wide.csv: line 1: not a CSV header" in err and "Traceback" not in err
    assert _rows(store) == 12


def test_a_negative_zero_correctness_in_parquet_is_wrong_not_quarantined(tmp_path, capsys):
    import polars as pl

    p = tmp_path / "z.parquet"
    pl.DataFrame({"model": ["m", "m"], "benchmark": ["arc", "arc"], "item": ["1", "2"],
                  "correct": [-0.0, 1.0]}).write_parquet(p)  # fmt: skip
    store = tmp_path / "s.duckdb"
    assert main(["ingest", str(p), "--store", str(store)]) == 0
    assert "quarantined 0" in capsys.readouterr().out
    assert _rows(store) == 2


def test_an_empty_column_name_in_a_wide_table_is_refused_not_dropped(tmp_path, capsys):
    p = tmp_path / "w.csv"
    p.write_text("model,,1,2\nm1,1,0,1\nm2,0,1,1\n")
    rc = main(["ingest", str(p), "--benchmark", "arc", "--store", str(tmp_path / "s.duckdb")])
    err = capsys.readouterr().err
    assert rc == 2 and "w.csv: line 1: column 2 has no name" in err


def test_automations_with_an_unreachable_server_is_one_line(monkeypatch, capsys):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    # over a session test server started by earlier tests, whose settings context wins
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        assert main(["automations", "install"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Prefect server at PREFECT_API_URL=http://127.0.0.1:9/api" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_home_under_tilde_is_the_users_home_not_a_folder_named_tilde(monkeypatch, tmp_path):
    from sparseeval.pipeline.settings import Settings

    monkeypatch.setenv("HOME", str(tmp_path))
    s = Settings.of(home="~/x", published_dir="~/pub")
    assert s.paths.home == tmp_path / "x" and s.paths.store_path == tmp_path / "x" / "store.duckdb"
    assert s.paths.published_dir == tmp_path / "pub"
