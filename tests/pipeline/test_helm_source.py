"""HELM raw runs as a store source.

The run folders follow the shape of HELM's `helm-run` output as kept in
github.com/evaleval/every_eval_ever `tests/data/helm/mmlu-subject=philosophy,method=
multiple_choice_joint,model=openai_gpt2/` (`run_spec.json`, `per_instance_stats.json`,
`scenario_state.json`): the entries and stats below copy those files' keys (`instance_id`,
`train_trial_index`, `stats[].name.{name,split}`, `count`, `mean`; `request_states[].instance`
with `input.text`, `references[].output.text`, `tags`, `id`), with the values varied. A
perturbed entry carries `perturbation` ({`name`, ...}) as HELM's `PerInstanceStats` does.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from sparseeval.pipeline.sources import ingest_sources
from sparseeval.pipeline.store import Store, watched
from sparseeval.pipeline.store.helm import HelmRuns
from sparseeval.pipeline.store.kinds import source_from_spec

METRIC_CLASS = "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric"


def stat(name: str, mean: float | None, perturbation: dict | None = None) -> dict:
    key = {"name": name, "split": "test"} | ({"perturbation": perturbation} if perturbation else {})
    if mean is None:
        return {"name": key, "count": 0, "sum": 0, "sum_squared": 0}
    return {"name": key, "count": 1, "sum": mean, "sum_squared": mean * mean, "min": mean,
            "max": mean, "mean": mean, "variance": 0.0, "stddev": 0.0}  # fmt: skip


def write_run(
    release: Path, model: str, subject: str, scores: dict[str, float], groups=("mmlu",)
) -> Path:
    """`{release}/mmlu:subject=S,method=multiple_choice_joint,model=M/` with one unperturbed
    first-trial entry per instance, plus a perturbed and a second-trial entry of the first."""
    name = f"mmlu:subject={subject},method=multiple_choice_joint,model={model.replace('/', '_')}"
    run = release / name
    run.mkdir(parents=True)
    spec = {
        "name": name,
        "scenario_spec": {"class_name": "helm.benchmark.scenarios.mmlu_scenario.MMLUScenario",
                          "args": {"subject": subject}},
        "adapter_spec": {"method": "multiple_choice_joint", "model": model, "num_trials": 1},
        "groups": list(groups),
        "metric_specs": [{"class_name": METRIC_CLASS,
                          "args": {"names": ["exact_match", "quasi_exact_match"]}}],
    }  # fmt: skip
    entries = [
        {"instance_id": iid, "train_trial_index": 0,
         "stats": [stat("num_references", 4.0), stat("exact_match", v),
                   stat("quasi_exact_match", v)]}
        for iid, v in scores.items()
    ]  # fmt: skip
    first = next(iter(scores))
    robust = {"name": "robustness", "robustness": True, "fairness": False, "computed_on": "worst"}
    entries += [
        {"instance_id": first, "train_trial_index": 0, "perturbation": robust,
         "stats": [stat("exact_match", 0.0, robust)]},
        {"instance_id": first, "train_trial_index": 1, "stats": [stat("exact_match", 0.0)]},
    ]  # fmt: skip
    states = [
        {"instance": {"input": {"text": f"{subject} question {iid}?"},
                      "references": [{"output": {"text": "yes"}, "tags": ["correct"]},
                                     {"output": {"text": "no"}, "tags": []}],
                      "split": "test", "id": iid},
         "train_trial_index": 0}
        for iid in scores
    ]  # fmt: skip
    (run / "run_spec.json").write_text(json.dumps(spec, indent=2))
    (run / "per_instance_stats.json").write_text(json.dumps(entries, indent=2))
    (run / "scenario_state.json").write_text(
        json.dumps({"adapter_spec": {}, "request_states": states})
    )
    return run


def aged(root: Path) -> None:
    then = time.time() - 60
    for p in root.rglob("*"):
        os.utime(p, (then, then))


@pytest.fixture(autouse=True)
def quick_settle(monkeypatch):
    monkeypatch.setattr(watched, "SETTLE_SECONDS", 0.5)


def rows(path: Path) -> list[tuple]:
    with Store.open(path, read_only=True) as store:
        return store.con.execute(
            "SELECT m.model, i.item, r.correct, i.hash FROM results r"
            " JOIN models m USING (model_id) JOIN items i USING (item_id) ORDER BY 1, 2"
        ).fetchall()


def test_a_release_is_read_unperturbed_first_trial_with_hashes(tmp_path):
    release = tmp_path / "benchmark_output" / "runs" / "v1.0"
    write_run(release, "openai/gpt2", "philosophy", {"id147": 1.0, "id11": 0.0, "id65": 0.5})
    write_run(release, "openai/gpt2", "anatomy", {"id147": 0.0, "id3": None})
    aged(tmp_path)
    path = tmp_path / "s.duckdb"
    summary = ingest_sources(path, [f"helm:{release}"], fill_if_empty=False)
    assert (summary.new, summary.quarantined, summary.failed) == (4, 1, 0)
    stored = rows(path)
    assert [(m, i, c) for m, i, c, _ in stored] == [
        ("openai/gpt2", "anatomy:id147", False), ("openai/gpt2", "philosophy:id11", False),
        ("openai/gpt2", "philosophy:id147", True), ("openai/gpt2", "philosophy:id65", True),
    ]  # fmt: skip
    # id65's mean 0.5 is a graded score: kept (below), `correct` its threshold at 0.5
    # two subjects' id147 are two items
    assert all(h.startswith("helm_instance:") for *_, h in stored)
    assert stored[0][3] != stored[2][3]
    said = " ".join(summary.lines)
    assert (
        "exact_match (unperturbed, first trial; 2 perturbed or later-trial entries not read)"
        in said
    )
    with Store.open(path, read_only=True) as store:
        reasons = sorted(
            r for (r,) in store.con.execute("SELECT reason FROM quarantine").fetchall()
        )
    assert reasons == ["exact_match: no value (count 0)"]
    with Store.open(path, read_only=True) as store:
        graded = store.con.execute("SELECT item, score FROM results_view WHERE score IS NOT NULL")
        assert graded.fetchall() == [("philosophy:id65", 0.5)]


def test_a_new_release_is_a_new_source_and_same_runs_are_read_once(tmp_path):
    runs = tmp_path / "benchmark_output" / "runs"
    write_run(runs / "v1.0", "openai/gpt2", "philosophy", {"id1": 1.0, "id2": 0.0})
    aged(tmp_path)
    path = tmp_path / "s.duckdb"
    assert ingest_sources(path, [f"helm:{runs}"], fill_if_empty=False).new == 2
    write_run(runs / "v1.1", "openai/gpt2", "philosophy", {"id1": 1.0, "id2": 0.0})  # the same
    write_run(runs / "v1.1", "eleutherai/pythia-1b", "philosophy", {"id1": 0.0, "id2": 0.0})
    write_run(runs / "v1.1", "eleutherai/pythia-1b", "x", {"id1": 1.0}, groups=["hellaswag"])
    (runs / "v1.2" / "mmlu:subject=x,model=m").mkdir(parents=True)
    (runs / "v1.2" / "mmlu:subject=x,model=m" / "run_spec.json").write_text("{}")
    aged(tmp_path)
    night2 = ingest_sources(path, [f"helm:{runs}"], fill_if_empty=False)
    assert (night2.new, night2.skipped, night2.pending) == (3, 2, 1)  # v1.2: still running
    assert "metric hellaswag=exact_match" in " ".join(night2.lines)  # the run's group
    assert len(rows(path)) == 5


def test_the_spec_names_the_source(tmp_path):
    run = write_run(tmp_path, "openai/gpt2", "philosophy", {"id1": 1.0})
    assert isinstance(source_from_spec(f"helm:{run}"), HelmRuns)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no HELM run folder"):
        list(HelmRuns(empty).units(None))
