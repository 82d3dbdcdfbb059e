"""`sparseeval ingest` / `sparseeval matrix` as a user meets them (parser built here)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from sparseeval.cli.store import add_store_commands


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="sparseeval")
    add_store_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "home"


def long_csv(path: Path, n_models: int = 3, n_items: int = 4) -> Path:
    rows = [f"org/m{m},arc,{i},{(m + i) % 2}" for m in range(n_models) for i in range(n_items)]
    path.write_text("model,benchmark,item,correct\n" + "\n".join(rows) + "\n")
    return path


def test_ingest_then_matrix_with_json_and_export(tmp_path, capsys, home):
    src = long_csv(tmp_path / "a.csv")
    assert run(["ingest", str(src), "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["status"] == "ok" and report["n_new"] == 12
    assert (home / "store.duckdb").exists()

    assert run(["ingest", str(src)]) == 0
    assert "skipped (already ingested" in capsys.readouterr().out

    out = tmp_path / "arc.npz"
    assert run(["matrix", "arc", "--export", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["shape"] == [3, 4]
    saved = np.load(out)
    assert saved["values"].shape == (3, 4) and str(saved["fingerprint"]) == summary["fingerprint"]

    assert run(["matrix"]) == 0
    assert "arc" in capsys.readouterr().out


def test_wide_table_needs_benchmark_and_errors_are_one_line(tmp_path, capsys):
    wide = tmp_path / "w.csv"
    wide.write_text("model,1,2\norg/a,1,0\n")
    assert run(["ingest", str(wide)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{wide}: failed (") and "--benchmark" in err and err.count("\n") == 1
    assert run(["ingest", str(wide), "--benchmark", "arc"]) == 0


def test_bad_file_does_not_stop_good_ones(tmp_path, capsys):
    good = long_csv(tmp_path / "good.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("")
    assert run(["ingest", str(bad), str(good)]) == 1
    captured = capsys.readouterr()
    assert "empty file" in captured.err and "new 12" in captured.out


def test_matrix_errors(tmp_path, capsys):
    assert run(["matrix", "arc"]) == 2
    assert "no store" in capsys.readouterr().err
    run(["ingest", str(long_csv(tmp_path / "a.csv"))])
    capsys.readouterr()
    assert run(["matrix", "nope"]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err
    assert run(["ingest", "--hub", "v1"]) == 2
    assert "--hub-model" in capsys.readouterr().err


def test_help_has_examples(capsys):
    for cmd in ("ingest", "matrix"):
        with pytest.raises(SystemExit):
            run([cmd, "--help"])
        assert f"sparseeval {cmd} " in capsys.readouterr().out
