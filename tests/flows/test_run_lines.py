"""Lines a run prints say what happened: a reused fit does not read as a slow reuse."""

from __future__ import annotations

import contextlib

from sparseeval.tasks.fit import fit_line

from sparseeval.pipeline.records import FitInfo


def _fit(trained: bool) -> FitInfo:
    test = {"mae": 1.234, "kendall_tau": 0.9}
    return FitInfo("arc", "k", "/m", "fp", "/x.npz", 1, 20, "nnridge", {}, {}, test, [],
                   [0.1, 0.9], 109.4, "v", trained=trained)  # fmt: skip


def test_a_fit_line_says_how_long_training_took_and_whether_it_was_reused():
    assert fit_line(_fit(True)).endswith("Kendall tau 0.900 (trained in 109s)")
    assert fit_line(_fit(False)).endswith("(reused: trained in 109s on an earlier run)")


def test_a_long_phase_of_a_fit_repeats_what_it_is_doing(monkeypatch, caplog, tmp_path):
    """A phase that prints nothing for a while (an MLP's training) is said again every
    `progress.EVERY` seconds in the run's log, with how long it has run."""
    import logging
    import time
    from types import SimpleNamespace

    from sparseeval.tasks import fit as fit_tasks

    from sparseeval.pipeline import progress, recipe
    from sparseeval.pipeline.settings import Settings

    def slow_fit(matrix, settings, say, force):
        say("training the final predictor (mlp) on 120 models")
        time.sleep(0.5)
        raise recipe.NotEnoughModels("arc: stopped by the test")

    monkeypatch.setattr(progress, "EVERY", 0.05)
    monkeypatch.setattr(fit_tasks, "get_run_logger", lambda: logging.getLogger("test.fit"))
    monkeypatch.setattr(recipe, "fit_step", slow_fit)
    caplog.set_level(logging.INFO, logger="test.fit")
    fit = Settings.of(home=tmp_path)
    matrix = SimpleNamespace(benchmark="arc", n_items=200)
    fit_tasks.fit_benchmark.fn(fit, matrix, 8)
    said = [r.getMessage() for r in caplog.records if r.name == "test.fit"]
    still = [s for s in said if s.startswith("arc k8: still training the final predictor")]
    assert len(still) >= 2 and still[0].endswith("s so far)"), said


def test_a_fit_whose_pool_caps_the_budget_says_how_many_anchors_it_fits(monkeypatch, caplog):
    """100 anchors on 100 items fit 99, or 33 at most a third (`recipe.settings_that_fit`):
    its lines said `k100`."""
    import logging
    from types import SimpleNamespace

    from sparseeval.tasks import fit as fit_tasks

    from sparseeval.pipeline import recipe
    from sparseeval.pipeline.settings import Settings

    def stopped_fit(matrix, settings, say, force):
        say("selecting anchors")
        raise recipe.NotEnoughModels("arc: stopped by the test")

    monkeypatch.setattr(fit_tasks, "get_run_logger", lambda: logging.getLogger("test.fit"))
    monkeypatch.setattr(recipe, "fit_step", stopped_fit)
    caplog.set_level(logging.INFO, logger="test.fit")
    cases = ((100, 1, "arc k100 (99 anchors)"), (101, 1, "arc k100"),
             (100, 1 / 3, "arc k100 (33 anchors)"), (300, 1 / 3, "arc k100"))  # fmt: skip
    for n_items, share, label in cases:
        caplog.clear()
        matrix = SimpleNamespace(benchmark="arc", n_items=n_items)
        fit_tasks.fit_benchmark.fn(Settings.of(max_anchor_share=share), matrix, 100)
        said = [r.getMessage() for r in caplog.records if r.name == "test.fit"]
        assert f"{label}: selecting anchors" in said, said


def test_a_long_refit_of_the_suite_repeats_what_it_is_doing(monkeypatch, caplog, tmp_path):
    """The suite's refit of its shared reader printed nothing for 391 s in a real-data run."""
    import logging
    import time

    from sparseeval.tasks import publish as publish_tasks

    from sparseeval.pipeline import progress, suite_publish
    from sparseeval.pipeline.settings import Settings

    def slow_suite(matrices, settings, say):
        say("refitting the shared reader on training and validation models")
        time.sleep(0.5)
        return "candidate", "gate"

    monkeypatch.setattr(progress, "EVERY", 0.05)
    monkeypatch.setattr(publish_tasks, "get_run_logger", lambda: logging.getLogger("test.suite"))
    monkeypatch.setattr(suite_publish, "suite_candidate", slow_suite)
    caplog.set_level(logging.INFO, logger="test.suite")
    with contextlib.suppress(AttributeError):  # the fake candidate has no version
        publish_tasks.write_suite_candidate.fn(Settings.of(home=tmp_path), {})
    said = [r.getMessage() for r in caplog.records if r.name == "test.suite"]
    still = [s for s in said if s.startswith("suite: still refitting the shared reader")]
    assert len(still) >= 2 and still[0].endswith("s so far)"), said
