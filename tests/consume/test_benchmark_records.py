"""A benchmark is one record: a registered record is read by the task map, the lm-eval task
writer, the leaderboard-scores readers and the store, with nothing else to edit."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sparseeval.consume import benchmarks
from sparseeval.consume.benchmarks import Benchmark, LeaderboardV1, LeaderboardV2
from sparseeval.consume.lm_eval.ids import export_samples
from sparseeval.consume.lm_eval.specs import ARC_DOC, TaskSpec
from sparseeval.consume.lm_eval.task import write_task
from sparseeval.consume.lm_eval.taskmap import (
    DEFAULT_METRICS,
    default_task,
    known_benchmarks,
    map_lm_eval_task,
    map_v1_config,
)

TOY = Benchmark(
    "toyqa",
    "ToyQA (3-shot), acc_norm",
    ("toyqa",),
    ("acc_norm",),
    "toyqa",
    specs={"toyqa": TaskSpec("org/toyqa", None, "test", "train", ARC_DOC, num_fewshot=3)},
    v1=LeaderboardV1("toyqa", ("acc",), "harness|toyqa|3", "acc", "ToyQA v1: acc", 100),
    v2=LeaderboardV2("ToyQA", "leaderboard_toyqa", 4),
)


@pytest.fixture
def toy(monkeypatch):
    """The records with ToyQA added."""
    monkeypatch.setattr(benchmarks, "BENCHMARKS", (*benchmarks.BENCHMARKS, TOY))


def test_an_unregistered_benchmark_is_unknown():
    assert map_lm_eval_task("toyqa").metrics == DEFAULT_METRICS
    assert map_v1_config("harness_toyqa_3") is None and default_task("toyqa") is None
    assert "toyqa" not in known_benchmarks()


def test_the_task_map_reads_a_registered_record(toy):
    assert map_lm_eval_task("toyqa").benchmark == "toyqa"
    assert map_lm_eval_task("toyqa").metrics == ("acc_norm",)
    assert map_v1_config("harness_toyqa_3").metrics == ("acc",)
    assert default_task("toyqa") == "toyqa"
    assert known_benchmarks()["toyqa"] == "ToyQA (3-shot), acc_norm"
    assert export_samples(["3", "1"], "toyqa") == {"toyqa": [1, 3]}


def test_the_lm_eval_writer_reads_a_registered_record(toy, tmp_path):
    aset = SimpleNamespace(items=["0", "4"], benchmark="toyqa", item_sources=None,
                           version=1, folder=None, level=0.9, manifest={})  # fmt: skip
    folder = write_task(tmp_path, aset, tmp_path / "sets")
    text = (folder / "sparseeval_toyqa.yaml").read_text()
    assert 'dataset_path: "org/toyqa"' in text and "num_fewshot: 3" in text
    assert "  - metric: acc_norm\n" in text  # the record's metric, not the spec's
    assert 'METRIC = "acc_norm"' in (folder / "utils.py").read_text()


def test_the_leaderboard_readers_read_a_registered_record(toy, tmp_path):
    from sparseeval.pipeline.store.score_files import read_scores_csv
    from sparseeval.pipeline.store.scores import v1_definitions, v1_file_scores, v2_file_scores

    assert v1_file_scores({"results": {"harness|toyqa|3": {"acc": 0.5}}}) == {"toyqa": 0.5}
    got = v2_file_scores({"leaderboard_toyqa": {"acc_norm,none": 0.625}}, {})
    assert got == {"toyqa": (0.5, "acc_norm normalized from 1/4 (random) to 1")}
    assert v1_definitions()["toyqa"] == "ToyQA v1: acc"
    (tmp_path / "lb.csv").write_text("model,toyqa\nm1,62.5\n")
    frame = read_scores_csv(tmp_path / "lb.csv")
    assert frame.select("benchmark", "definition").rows() == [("toyqa", "ToyQA v1: acc")]


def test_a_new_store_knows_a_registered_record(toy, tmp_path):
    from sparseeval.pipeline.store import Store

    with Store.open(tmp_path / "s.duckdb") as s:
        assert "toyqa" in s.benchmarks()["benchmark"].to_list()
