"""The consumer path (predict, compare, export-lm-eval) needs NumPy only.

`test_consumer_path_imports_nothing_heavy` runs everywhere. `test_light_venv` runs when
`SPARSEEVAL_LIGHT_PYTHON` names the Python of a venv with the base install only
(`pip install .`): `.ci/run` makes one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import evaluate
from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.versions import new_version, set_latest, write_version

HEAVY = ("prefect", "torch", "duckdb", "polars", "scipy", "sklearn", "matplotlib")


@pytest.fixture(scope="module")
def light_set(tmp_path_factory):
    """An ARC set with an MLP reader (item ids are lm-eval doc ids) and two answer files."""
    root = tmp_path_factory.mktemp("light") / "published"
    m = make_synthetic(300, 60, seed=4)
    sp = split_models(m.model_ids, n_test=60, n_valid=60, seed=4)
    est = SparseEval(n_anchors=8, refine_steps=1, epochs=40, ensemble=1, predictor="mlp",
                     progress=lambda s: None)  # fmt: skip
    ids = [str(j) for j in range(60)]
    est.fit(
        m.values[sp.train],
        m.y[sp.train],
        X_valid=m.values[sp.valid],
        y_valid=m.y[sp.valid],
        item_ids=ids,
    )
    pred = est.predict(m.values[sp.test])
    decided = new_version("arc", est, data_fingerprint=m.fingerprint(), split_sizes=sp.sizes(),
                          metrics={"test": evaluate(pred, m.y[sp.test])},
                          settings={"interval_level": 0.9})  # fmt: skip
    write_version(root, decided)
    set_latest(root, "arc", 1)
    files = []
    for n, row in enumerate(m.values[sp.test[:2]]):
        f = root.parent / f"answers{n}.csv"
        f.write_text("item,correct\n" + "".join(f"{j},{int(row[j] > 0)}\n" for j in est.anchors_))
        files.append(f)
    expected = est.predict(m.values[sp.test[:1]])[0]
    files.append(_publish_suite(root))
    return root, files, expected


def _publish_suite(root):
    """A tiny suite beside the ARC set, and a file answering every suite anchor correctly."""
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite

    settings = Settings.of(n_anchors=6, n_test=40, n_valid=40, n_calib=40, refine_steps=1,
                        epochs=40, ensemble=1)  # fmt: skip
    fit = fit_suite(make_leaderboard(240, {"arc": 40, "gsm8k": 30}, seed=1), settings)
    write_suite(root, fit, settings)
    set_latest(root, "suite", 1)
    f = root.parent / "suite.csv"
    ids = [f"{b}/{i}" for b in fit.suite.benchmarks_ for i in fit.suite.estimators_[b].anchor_ids_]
    f.write_text("item,correct\n" + "".join(f"{i},1\n" for i in ids))
    return f


def _consumer_script(root, files) -> str:
    """Predict, compare and export through the library and the CLI; print what was imported."""
    a, b, suite = map(str, files)
    return f"""
import json, sys
import sparseeval
from sparseeval.cli import main
aset = sparseeval.load_anchor_set({str(root)!r}, "arc")
answers = dict(line.split(",") for line in open({a!r}).read().split()[1:])
est = aset.predict(answers)
diff = aset.compare(answers, answers)
rc = [main(["predict", "--anchor-set", {str(root)!r}, "--benchmark", "arc",
            "--responses", {a!r}, "--compare-to", {b!r}]),
      main(["export-lm-eval", "--anchor-set", {str(root)!r}, "--benchmark", "arc",
            "--out", {str(root.parent / "samples.json")!r}]),
      main(["predict", "--anchor-set", {str(root)!r}, "--benchmark", "suite",
            "--responses", {suite!r}])]
s = sparseeval.load_suite({str(root)!r})
average = s.predict({{b: {{i: 1 for i in s.items(b)}} for b in s.benchmarks}})["average"]
print(json.dumps({{"value": est.value, "diff": diff.value, "rc": rc, "average": average.value,
                  "heavy": sorted(m for m in {HEAVY!r} if m in sys.modules)}}))
"""


def _run(python: str, code: str) -> dict:
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_consumer_path_imports_nothing_heavy(light_set):
    root, files, expected = light_set
    out = _run(sys.executable, _consumer_script(root, files))
    assert out["rc"] == [0, 0, 0]
    assert out["heavy"] == []
    assert 0 <= out["average"] <= 1
    assert abs(out["value"] - expected) < 1e-6  # NumPy reader == the torch-trained estimator
    assert out["diff"] == 0.0
    assert json.loads((root.parent / "samples.json").read_text()) == {
        "arc_challenge": sorted(int(line.split(",")[0]) for line in
                                files[0].read_text().split()[1:])
    }  # fmt: skip


LIGHT = os.environ.get("SPARSEEVAL_LIGHT_PYTHON")


@pytest.mark.skipif(not LIGHT, reason="SPARSEEVAL_LIGHT_PYTHON (a base-install venv) not set")
def test_light_venv(light_set):
    root, files, expected = light_set
    have = subprocess.run([LIGHT, "-c", "import torch"], capture_output=True)
    assert have.returncode != 0, "the light venv must not have torch"
    out = _run(LIGHT, _consumer_script(root, files))
    assert out["rc"] == [0, 0, 0] and abs(out["value"] - expected) < 1e-6
    for argv in (["refresh"], ["matrix"], ["fit", "--synthetic", "100", "20"]):
        proc = subprocess.run([LIGHT, "-m", "sparseeval", *argv], capture_output=True, text=True,
                              cwd=root.parent, timeout=60)  # fmt: skip
        err = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(err) == 1, proc.stderr
        assert "[pipeline]'" in err[0] and "'sparseeval[pipeline]'" not in err[0]


def test_a_folder_named_sparseeval_does_not_shadow_the_console_script(tmp_path):
    """`sparseeval` run beside a clone named `sparseeval` still uses the installed package."""
    (tmp_path / "sparseeval").mkdir()  # like the folder above a clone of this repository
    script = Path(sys.executable).with_name("sparseeval")
    proc = subprocess.run([str(script), "--version"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.startswith("sparseeval "), proc.stderr


@pytest.mark.skipif(not LIGHT, reason="SPARSEEVAL_LIGHT_PYTHON (a base-install venv) not set")
def test_a_folder_named_sparseeval_does_not_shadow_an_installed_package(tmp_path):
    """A regular install (the wheel) wins over a `sparseeval` folder in the working directory."""
    (tmp_path / "sparseeval").mkdir()
    code = "import sparseeval; print(hasattr(sparseeval, 'load_anchor_set'))"
    proc = subprocess.run([LIGHT, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.stdout.strip() == "True", proc.stderr
