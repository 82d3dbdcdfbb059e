"""The table of source kinds: a new kind is one class plus one line; specs keep their meaning."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pytest

from sparseeval.consume.hashing import fingerprint
from sparseeval.pipeline.sources import ingest_sources, parse_source
from sparseeval.pipeline.store import Store
from sparseeval.pipeline.store import kinds as kinds_module
from sparseeval.pipeline.store.kinds import SOURCE_KINDS, SourceKind, register, source_from_spec
from sparseeval.pipeline.store.unit import SpecOptions, Unit, stage_frames


@dataclass
class Constant:
    """A made-up source: `const:MODEL=VALUE` answers items q0..q2 of benchmark `arc`."""

    model: str
    value: str

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> Constant:
        model, _, value = body.partition("=")
        return cls(model, value)

    def units(self, store):
        label = f"const:{self.model}"
        key = fingerprint("const", self.model, self.value)
        yield Unit("const", label, key, [label], self._stage)

    def _stage(self, con) -> None:
        rows = pl.DataFrame({
            "model": [self.model] * 3, "benchmark": ["arc"] * 3,
            "item": ["q0", "q1", "q2"], "correct": [self.value] * 3,
            "ord": [0, 1, 2], "line": [1, 2, 3], "ref_no": [0, 0, 0],
        })  # fmt: skip
        stage_frames(con, rows)


@pytest.fixture
def const_kind(monkeypatch):
    """The one line a new kind needs (registered for this test only)."""
    kind = SourceKind("const", Constant.from_spec, "const:MODEL=0|1")
    monkeypatch.setitem(SOURCE_KINDS, kind.prefix, kind)
    return kind


def test_a_new_kind_in_one_line_is_ingested_end_to_end(tmp_path, const_kind):
    path = tmp_path / "store.duckdb"
    summary = ingest_sources(path, ["const:org/a=1", "const:org/b=0"], fill_if_empty=False)
    assert [(r["source"], r["new"], r["failed"]) for r in summary.sources] == [
        ("const:org/a=1", 3, 0),
        ("const:org/b=0", 3, 0),
    ]
    assert summary.new == 6 and summary.failed == 0
    with Store.open(path, read_only=True) as store:
        rows = store.con.execute(
            "SELECT m.model, i.item, r.correct FROM results r"
            " JOIN models m ON m.model_id = r.model_id JOIN items i ON i.item_id = r.item_id"
            " ORDER BY 1, 2"
        ).fetchall()
    assert rows == [
        (m, f"q{i}", v) for m, v in (("org/a", True), ("org/b", False)) for i in range(3)
    ]
    again = ingest_sources(path, ["const:org/a=1"], fill_if_empty=False)
    assert (again.new, again.sources[0]["skipped"]) == (0, 1)  # the same content is read once


def test_an_unknown_prefix_is_refused_with_the_known_ones():
    with pytest.raises(ValueError) as err:
        parse_source("s3://bucket/results.parquet")
    message = str(err.value)
    assert message.startswith("unknown source kind 's3' in 's3://bucket/results.parquet'")
    assert "(one of: synthetic, hub, wide, lm-eval, inbox, scores, inspect, eee, helm;" in message
    assert "wide:BENCHMARK=file.csv" in message and "inbox:DIR" in message


def test_the_list_of_prefixes_comes_from_the_table(const_kind):
    with pytest.raises(
        ValueError,
        match=r"one of: synthetic, hub, wide, lm-eval, inbox, scores, inspect, eee, helm, const;",
    ):
        parse_source("nope:x")
    with pytest.raises(ValueError, match=r"cannot tell what source 'notes\.txt' is .*const:MODEL"):
        parse_source("notes.txt")


def test_a_prefix_is_registered_once(const_kind):
    with pytest.raises(ValueError, match="'const' is already registered"):
        register(SourceKind("const", Constant.from_spec, "const:X"))


def test_an_existing_path_with_a_colon_is_still_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "night:1.parquet").write_bytes(b"")
    assert type(parse_source("night:1.parquet")).__name__ == "LongTable"


@pytest.mark.parametrize(
    ("spec", "kind", "fields"),
    [
        ("synthetic", "SyntheticLeaderboard", {"n_models": 1000, "seed": 0}),
        ("synthetic:seed=4,models=0-10", "SyntheticLeaderboard", {"model_range": (0, 10)}),
        ("wide:arc=a.csv", "WideTable", {"benchmark": "arc"}),
        ("lm-eval: runs/*/* ", "LmEvalGlob", {"pattern": "runs/*/*"}),
        ("inbox:drop/", "Inbox", {}),
        ("hub:v1:*@mirror", "OpenLLMLeaderboard", {"org": "mirror", "globs": None}),
        ("results.parquet", "LongTable", {}),
        ("runs/out/results_2025-01-01T00-00-00.json", "LmEvalRun", {}),
    ],
)
def test_every_spec_form_names_its_source(spec, kind, fields):
    source = parse_source(spec, hub_max_repos=7)
    assert type(source).__name__ == kind
    assert {k: getattr(source, k) for k in fields} == fields


def test_a_plain_path_takes_its_format_from_the_options():
    wide = kinds_module.source_from_spec("w.csv", SpecOptions(fmt="wide", benchmark="gsm8k"))
    assert (type(wide).__name__, wide.benchmark) == ("WideTable", "gsm8k")
    with pytest.raises(ValueError, match="name its benchmark"):
        parse_source("w.csv", fmt="wide")
    with pytest.raises(
        ValueError, match=r"unknown format 'xml' \(one of auto, long, wide, lm-eval, inspect\)"
    ):
        parse_source("w.csv", fmt="xml")


def test_a_plain_folder_without_lm_eval_output_is_refused_with_the_prefixes(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "night.csv").write_text("model,benchmark,item,correct\n")
    with pytest.raises(ValueError) as err:
        source_from_spec(str(tmp_path / "tables"))
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / 'tables'} is a folder without lm-eval output")
    assert f"use inbox:{tmp_path / 'tables'}" in msg and "wide:BENCHMARK=file.csv" in msg


def test_a_pipe_is_refused_at_once_not_read(tmp_path):
    import os

    fifo = tmp_path / "results.csv"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is not a regular file or folder"):
        source_from_spec(str(fifo))
