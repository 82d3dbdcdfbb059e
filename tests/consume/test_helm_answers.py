"""`predict` reads a model's answers from its HELM run folders (issue [3/5]).

The run folders are written by `tests.pipeline.test_helm_source.write_run`, in the shape of
HELM's `helm-run` output as kept in github.com/evaleval/every_eval_ever `tests/data/helm/`
(that module says which keys it copies).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sparseeval.cli import main
from sparseeval.consume.answers.helm_answers import CONTENT_HASH, HelmError, read_rows, read_spec
from sparseeval.consume.answers.responses import read_responses_files
from sparseeval.method.synthetic import make_synthetic
from tests.pipeline.test_helm_source import write_run

SET = SimpleNamespace(benchmark="mmlu", items=["philosophy:id1", "anatomy:id1"], item_sources={})


def test_one_models_runs_are_its_answers_unperturbed_first_trial(tmp_path):
    write_run(tmp_path / "gpt2", "openai/gpt2", "philosophy", {"id1": 1.0, "id2": 0.0})
    write_run(tmp_path / "gpt2", "openai/gpt2", "anatomy", {"id1": 0.0})
    one = (
        tmp_path / "gpt2" / "mmlu:subject=philosophy,method=multiple_choice_joint,model=openai_gpt2"
    )
    # the perturbed and second-trial entries of id1 (both 0.0) are not read
    assert read_responses_files([one], SET) == {"philosophy:id1": "1"}
    assert read_responses_files([tmp_path / "gpt2"], SET) == {
        "philosophy:id1": "1", "anatomy:id1": "0"
    }  # fmt: skip
    spec = read_spec(one)
    assert (spec.model, spec.benchmark, spec.item("id2")) == (
        "openai/gpt2",
        "mmlu",
        "philosophy:id2",
    )
    assert read_rows(spec).skipped == 2


def test_a_release_of_several_models_is_refused_naming_them(tmp_path):
    write_run(tmp_path, "openai/gpt2", "philosophy", {"id1": 1.0})
    write_run(tmp_path, "eleutherai/pythia-1b", "philosophy", {"id1": 0.0})
    with pytest.raises(HelmError, match=r"runs of 2 models \(eleutherai/pythia-1b, openai/gpt2\):"
                       " pass the run folders of one model"):  # fmt: skip
        read_responses_files([tmp_path], SET)


def test_other_questions_under_the_same_ids_are_refused_unless_told(tmp_path):
    run = write_run(tmp_path, "openai/gpt2", "philosophy", {"id1": 1.0})
    (_, _, _, digest), = read_rows(read_spec(run)).rows  # fmt: skip
    assert digest.startswith(f"{CONTENT_HASH}:")
    same = SimpleNamespace(benchmark="mmlu", items=["philosophy:id1"],
                           item_sources={"philosophy:id1": {"hash": digest}})  # fmt: skip
    assert read_responses_files([run], same) == {"philosophy:id1": "1"}
    other = SimpleNamespace(
        benchmark="mmlu",
        items=["philosophy:id1"],
        item_sources={"philosophy:id1": {"hash": f"{CONTENT_HASH}:{'0' * 64}"}},
    )
    with pytest.raises(HelmError, match=r"1 answered item.* have other content than the set's"):
        read_responses_files([run], other)
    assert read_responses_files([run], other, {"ignore_hash_mismatch": True}) == {
        "philosophy:id1": "1"
    }


def test_a_run_still_running_is_said(tmp_path):
    run = write_run(tmp_path, "openai/gpt2", "philosophy", {"id1": 1.0})
    (run / "per_instance_stats.json").unlink()
    with pytest.raises(HelmError, match=r"no per_instance_stats\.json yet"):
        read_responses_files([run], SET)


def fit_on_the_first_160(tmp_path, m):
    """`fit --out tmp_path/fit` (benchmark mmlu, 8 anchors) on the first 160 models of `m`,
    its items named as HELM's MMLU philosophy instances (`philosophy:id{j}`); `m`."""
    items = [f"philosophy:id{j}" for j in range(m.values.shape[1])]
    wide = tmp_path / "wide.csv"
    rows = [",".join([mid, *(str(int(v > 0)) for v in m.values[i])])
            for i, mid in enumerate(m.model_ids[:160])]  # fmt: skip
    wide.write_text("\n".join([",".join(["model", *items]), *rows]) + "\n")
    assert main(["fit", str(wide), "--anchors", "8", "--out", str(tmp_path / "fit"),
                 "--benchmark", "mmlu", "--quiet"]) == 0  # fmt: skip
    return m


def test_predict_from_a_helm_run_folder_gives_the_estimate_of_the_same_answers_as_csv(
    tmp_path, capsys
):
    """A set fit on 160 models (`fit --out`), then a new model's HELM run folder and the same
    answers as a CSV: one estimate."""
    m = fit_on_the_first_160(tmp_path, make_synthetic(161, 30, seed=2))
    new = {f"id{j}": float(m.values[160, j] > 0) for j in range(30)}
    run = write_run(tmp_path / "new", "org/new-model", "philosophy", new)
    csv = tmp_path / "new.csv"
    csv.write_text("item,correct\n" + "".join(f"philosophy:{i},{int(v)}\n" for i, v in new.items()))
    said = []
    for answers in (run, csv):
        capsys.readouterr()
        assert main(["predict", "--anchor-set", str(tmp_path / "fit"), "--benchmark", "mmlu",
                     "--responses", str(answers), "--json"]) == 0  # fmt: skip
        said.append(capsys.readouterr().out)
    from_helm, from_csv = (json.loads(s) for s in said)
    keys = ("value", "low", "high", "n_answered", "correction")
    assert [from_helm[k] for k in keys] == [from_csv[k] for k in keys]
    assert from_helm["n_answered"] == 8 and np.isfinite(from_helm["value"])
