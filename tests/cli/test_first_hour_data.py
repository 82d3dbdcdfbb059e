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


def test_a_mistyped_benchmark_gets_the_name_it_nearly_is(tmp_path, capsys):
    src = wide_csv(tmp_path / "winogrande.csv")
    assert main(["ingest", str(src), "--benchmark", "winogrand"]) == 2
    assert "12 unknown benchmark: winogrand" in (err := capsys.readouterr().err)
    assert err.rstrip().endswith("; did you mean 'winogrande'?)"), err


def test_ingest_help_names_the_wide_and_scores_specs(capsys):
    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    out = capsys.readouterr().out
    assert "scores:open-llm-leaderboard.csv" in out and "wide:arc=" in out


@pytest.mark.parametrize(
    "header", ["name,link,avg,arc,hellaswag,mmlu,gsm8k", "model,benchmark,score"]
)
def test_a_scores_table_given_as_results_says_to_use_scores(header, tmp_path, capsys):
    board = tmp_path / "open-llm-leaderboard.csv"
    board.write_text(header + "\n" + ",".join(["org/a"] + ["50"] * header.count(",")) + "\n")
    assert main(["ingest", str(board)]) == 2
    assert f"ingest it as scores:{board}" in capsys.readouterr().err


def test_the_hinted_scores_spec_reads_a_leaderboard_file(tmp_path, capsys):
    board = tmp_path / "open-llm-leaderboard.csv"
    board.write_text("name,avg,arc,gsm8k\norg/a,55,60,50\n")
    assert main(["ingest", f"scores:{board}"]) == 0
    assert "reported scores: read 2; new 2" in capsys.readouterr().out
