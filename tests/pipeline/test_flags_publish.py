"""A fit saves its pool check and the published manifest carries it (`consume.flags`)."""

from __future__ import annotations

import json
from pathlib import Path

from sparseeval.consume.flags import KEY, PoolCheck
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.artifacts import save_matrix
from sparseeval.pipeline.publish import write_candidate
from sparseeval.pipeline.recipe import POOL_FILE, fit_step, load_evaluation, pool_check_of
from sparseeval.pipeline.records import MatrixInfo
from sparseeval.pipeline.settings import Settings

SETTINGS = dict(n_anchors=6, n_test=40, n_valid=40, n_calib=40, refine_steps=0, epochs=20,
                patience=5, ensemble=1, predictor="ridge")  # fmt: skip


def test_fit_saves_the_pool_check_and_the_candidate_publishes_it(tmp_path):
    settings = Settings(home=tmp_path, **SETTINGS)
    m = make_synthetic(200, 30, seed=4)
    fp = m.fingerprint()
    path = save_matrix(m, settings.artifacts_dir / "matrix" / f"{fp}.npz", fingerprint=fp)
    fit = fit_step(MatrixInfo("arc", str(path), fp, *m.shape, 1, ""), settings, lambda s: None)
    saved = pool_check_of(fit)
    check = PoolCheck.from_dict(saved)
    assert len(check.a) == 6 and check.n_models == fit.split_sizes["train"]
    assert check.low < check.high and check.widen == 3.0
    cand = write_candidate(settings, fit)
    manifest = json.loads((Path(cand.path) / "manifest.json").read_text())
    assert manifest[KEY] == saved
    # the report lists the flag rates of the test models, counted from the fit's own flags
    evaluation = load_evaluation(fit.model_dir)
    flagged = int((evaluation["test_flag_range"] | evaluation["test_flag_pattern"]).sum())
    n = fit.split_sizes["test"]
    report = (Path(cand.path) / "report.md").read_text()
    assert f"{flagged} of {n} test models" in report and "unlike the training pool" in report
    flags = json.loads((Path(cand.path) / "metrics.json").read_text())["flags"]
    assert flags["flagged"] == flagged and flags["n_test"] == n and flags["widen"] == 3.0
    (Path(fit.model_dir) / POOL_FILE).unlink()  # a fit saved before there were checks
    assert pool_check_of(fit) is None
