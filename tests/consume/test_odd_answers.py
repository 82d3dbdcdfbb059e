"""Answers files at odd scales (issue 28 class 5): a field past the csv module's limit is one
line naming the file and line, not a traceback."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparseeval.consume.answers.responses import ResponsesError, read_responses_files


@pytest.mark.parametrize("where", ["item", "header"])
def test_a_1mb_item_id_is_one_line(tmp_path, where):
    p = tmp_path / "a.csv"
    big = "x" * 1_000_000
    if where == "item":
        p.write_text(f"item,correct\n1,1\n{big},0\n")
    else:
        p.write_text(f"item,correct,{big}\n1,1,\n")
    aset = SimpleNamespace(items=["1"], item_sources=None, benchmark="arc")
    with pytest.raises(ResponsesError) as e:
        read_responses_files([p], aset)
    said = str(e.value)
    assert f"a.csv:{1 if where == 'header' else 3}: not a readable CSV row" in said
    assert "a field longer than 131,072 characters" in said and "\n" not in said
