"""Lines a run prints say what happened: a reused fit does not read as a slow reuse."""

from __future__ import annotations

from sparseeval.tasks.fit import fit_line

from sparseeval.pipeline.records import FitInfo


def _fit(trained: bool) -> FitInfo:
    test = {"mae": 1.234, "kendall_tau": 0.9}
    return FitInfo("arc", "k", "/m", "fp", "/x.npz", 1, 20, "nnridge", {}, {}, test, [],
                   [0.1, 0.9], 109.4, "v", trained=trained)  # fmt: skip


def test_a_fit_line_says_how_long_training_took_and_whether_it_was_reused():
    assert fit_line(_fit(True)).endswith("Kendall tau 0.900 (trained in 109s)")
    assert fit_line(_fit(False)).endswith("(reused: trained in 109s on an earlier run)")
