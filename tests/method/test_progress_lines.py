"""Long work says what it is doing: a line per phase of a fit and of the suite's readers."""

from __future__ import annotations

from sparseeval.method.estimator import SparseEval
from sparseeval.method.synthetic import make_leaderboard, make_synthetic
from sparseeval.pipeline.progress import throttled
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_recipe import fit_suite

TINY = dict(n_anchors=6, refine_steps=1, epochs=30, patience=5, ensemble=1)


def test_a_fit_says_when_it_trains_and_refits_the_final_predictor():
    m = make_synthetic(160, 40, seed=3)
    lines: list[str] = []
    est = SparseEval(**TINY, progress=lines.append)
    est.fit(m.values[:120], m.y[:120], X_valid=m.values[120:], y_valid=m.y[120:])
    trains = [i for i, line in enumerate(lines) if line.startswith("training the final predictor")]
    refits = [i for i, line in enumerate(lines) if line.startswith("refitting ")]
    assert trains and "nnridge, mlp, blend" in lines[trains[0]] and "120 models" in lines[trains[0]]
    assert refits and refits[0] > trains[0] and "160 training and validation" in lines[refits[0]]


def test_the_suite_says_each_benchmarks_reader(tmp_path):
    settings = Settings.of(home=tmp_path, n_test=50, n_valid=50, n_calib=50, **TINY)
    lines: list[str] = []
    fit_suite(make_leaderboard(240, {"arc": 40, "gsm8k": 30}, seed=1), settings, lines.append)
    assert "arc: training its reader of every anchor (1/2)" in lines
    assert "gsm8k: training its reader of every anchor (2/2)" in lines
    assert any(line.startswith("arc: training the final predictor") for line in lines)
    assert any(line.startswith("gsm8k: refitting ") for line in lines)
    assert any(line.startswith("calibrating the readers' intervals on ") for line in lines)
    assert any(line.startswith("fitting the readers' pool checks") for line in lines)


def test_throttled_thins_only_the_frequent_lines_and_can_wait_for_the_first(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("sparseeval.pipeline.recipe.time.monotonic", lambda: clock[0])
    said: list[str] = []
    say = throttled(said.append, seconds=15)
    for line in ("init kmeans", "refine step 1", "final predictor: mlp", "refine step 2"):
        say(line)
    assert said == ["init kmeans", "final predictor: mlp"]
    clock[0] += 16  # a suite's benchmark-named lines are thinned alike
    for line in ("arc: refine step 3", "arc: refine step 4", "arc: final predictor: mlp"):
        say(line)
    assert said[2:] == ["arc: refine step 3", "arc: final predictor: mlp"]
    later: list[str] = []
    quiet = throttled(later.append, seconds=15, thin=("",), at_once=False)
    quiet("arc k100: init kmeans")  # a quick fit: nothing
    clock[0] += 16
    quiet("arc k100: refine step 9")
    quiet("arc k100: refine step 10")
    assert later == ["arc k100: refine step 9"]
