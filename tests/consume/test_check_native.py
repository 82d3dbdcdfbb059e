"""`check --responses` reads the models' own results: Inspect logs, Every Eval Ever samples
files and HELM runs, each model named as its results name it (issue [3/5] item 1).

The fixtures are the ones the readers' own tests make and cite: real Inspect logs written
offline by inspect-ai (`tests.inspect_fixtures`), EEE records in the datastore's layout
(`tests.pipeline.test_eee_source.write_eee`), HELM run folders in `helm-run`'s shape
(`tests.pipeline.test_helm_source.write_run`).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sparseeval.cli import main
from sparseeval.consume.answers.responses import ResponsesError, read_models_answers
from sparseeval.method.synthetic import make_synthetic
from tests.consume.test_helm_answers import fit_on_the_first_160
from tests.pipeline.test_eee_source import BENCH, write_eee
from tests.pipeline.test_helm_source import write_run


def test_each_models_results_are_its_answers(tmp_path):
    from tests.inspect_fixtures import mc_task, write_log

    logs = tmp_path / "logs"
    write_log(logs / "a", mc_task())
    write_log(logs / "b", mc_task(), model="fixed/m2", answers={"3+3": "B"})
    toy = SimpleNamespace(benchmark="toy_mc", items=["q1", "q2"], item_sources={})
    assert read_models_answers([logs], toy) == {
        "fixed/m1": {"q1": "1", "q2": "0"}, "fixed/m2": {"q1": "1", "q2": "1"},
    }  # fmt: skip
    eee = tmp_path / "eee"
    write_eee(eee, "org/a", {"s1": 1.0, "s2": 0.0})
    b = write_eee(eee, "org/b", {"s1": 0.0, "s2": 0.0})
    bench = SimpleNamespace(benchmark=BENCH, items=["s1", "s2"], item_sources={})
    assert read_models_answers([eee], bench) == {"org/a": {"s1": "1", "s2": "0"},
                                                 "org/b": {"s1": "0", "s2": "0"}}  # fmt: skip
    assert read_models_answers([b], bench) == {"org/b": {"s1": "0", "s2": "0"}}
    helm = tmp_path / "runs" / "v1"
    write_run(helm, "openai/gpt2", "philosophy", {"id1": 1.0})
    write_run(helm, "openai/gpt2", "anatomy", {"id1": 0.0})
    write_run(helm, "eleutherai/pythia-1b", "philosophy", {"id1": 0.0})
    mmlu = SimpleNamespace(benchmark="mmlu", items=["philosophy:id1", "anatomy:id1"],
                           item_sources={})  # fmt: skip
    assert read_models_answers([helm], mmlu) == {
        "openai/gpt2": {"philosophy:id1": "1", "anatomy:id1": "0"},
        "eleutherai/pythia-1b": {"philosophy:id1": "0"},
    }
    (empty := tmp_path / "empty").mkdir()
    with pytest.raises(ResponsesError, match="empty: no Inspect log, Every Eval Ever samples"):
        read_models_answers([empty], mmlu)


def test_check_on_helm_runs_reports_as_on_the_same_answers_as_a_table(tmp_path, capsys):
    """A set fit on 160 models (`fit --out`); 20 new models' HELM runs (a release folder)
    against the same answers as a long CSV: the same report."""
    m = fit_on_the_first_160(tmp_path, make_synthetic(180, 30, seed=5))
    release, long, scores = tmp_path / "runs" / "v1", ["model,item,correct"], ["model,score"]
    for i in range(160, 180):
        model = f"org/{m.model_ids[i]}"
        answers = {f"id{j}": float(m.values[i, j] > 0) for j in range(30)}
        write_run(release, model, "philosophy", answers)
        long += [f"{model},philosophy:{k},{int(v)}" for k, v in answers.items()]
        scores.append(f"{model},{100 * np.mean(list(answers.values())):.4f}")
    (tmp_path / "long.csv").write_text("\n".join(long) + "\n")
    (tmp_path / "scores.csv").write_text("\n".join(scores) + "\n")
    said = []
    for responses in (release, tmp_path / "long.csv"):
        capsys.readouterr()
        assert main(["check", "--anchor-set", str(tmp_path / "fit"), "--benchmark", "mmlu",
                     "--scores", str(tmp_path / "scores.csv"), "--responses", str(responses),
                     "--json"]) == 0  # fmt: skip
        said.append(json.loads(capsys.readouterr().out))
    from_helm, from_table = said
    assert from_helm["n"] == 20 and from_helm == from_table
