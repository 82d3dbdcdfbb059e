"""A newcomer's first hour with their own data: ingest, the store, the real-data path."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparseeval.cli import main


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARSEEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "home"


def wide_csv(path: Path, n_models: int = 3, n_items: int = 4) -> Path:
    head = "model," + ",".join(str(i) for i in range(n_items))
    rows = [f"org/m{m}," + ",".join(str((m + i) % 2) for i in range(n_items))
            for m in range(n_models)]  # fmt: skip
    path.write_text(head + "\n" + "\n".join(rows) + "\n")
    return path


def test_an_ingest_that_stored_nothing_fails_with_reasons_and_can_be_fixed(tmp_path, capsys):
    src = wide_csv(tmp_path / "arc_responses_train.csv")
    assert main(["ingest", str(src), "--benchmark", "arc_challenge"]) == 2
    err = capsys.readouterr().err
    assert "quarantined (nothing stored, all 12 rows quarantined" in err
    assert "12 unknown benchmark: arc_challenge" in err and "--new-benchmark" in err
    assert main(["ingest", str(src), "--benchmark", "arc"]) == 0  # not "already ingested"
    out = capsys.readouterr().out
    assert "new 12" in out and "already ingested" not in out
