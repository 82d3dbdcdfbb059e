"""A fit saves its pool check and the published manifest carries it (`consume.scoring.flags`)."""

from __future__ import annotations

import json
from pathlib import Path

from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import KEY, PoolCheck
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.artifacts import save_matrix
from sparseeval.pipeline.publish import write_candidate
from sparseeval.pipeline.recipe import POOL_FILE, fit_step, load_evaluation, pool_check_of
from sparseeval.pipeline.records import MatrixInfo
from sparseeval.pipeline.settings import Settings

SETTINGS = dict(n_anchors=6, n_test=40, n_valid=40, n_calib=40, refine_steps=0, epochs=20,
                patience=5, ensemble=1, predictor="ridge")  # fmt: skip


def test_fit_saves_the_pool_check_and_the_candidate_publishes_it(tmp_path):
    settings = Settings.of(home=tmp_path, **SETTINGS)
    m = make_synthetic(200, 30, seed=4)
    fp = m.fingerprint()
    path = save_matrix(m, settings.paths.artifacts_dir / "matrix" / f"{fp}.npz", fingerprint=fp)
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
    flagged = int((evaluation["test_flag_range"] | evaluation["test_flag_pattern"]
                   | evaluation["test_flag_saturated"]).sum())  # fmt: skip
    n = fit.split_sizes["test"]
    report = (Path(cand.path) / "report.md").read_text()
    assert f"{flagged} of {n} test models" in report and "unlike the training pool" in report
    flags = json.loads((Path(cand.path) / "metrics.json").read_text())["flags"]
    assert flags["flagged"] == flagged and flags["n_test"] == n and flags["widen"] == 3.0
    assert flags["saturated"] == int(evaluation["test_flag_saturated"].sum())
    (Path(fit.model_dir) / POOL_FILE).unlink()  # a fit saved before there were checks
    assert pool_check_of(fit) is None


def test_a_refresh_candidate_lists_its_models_and_reports_the_newest(tmp_path):
    from sparseeval.consume.sets.models import read_models
    from sparseeval.pipeline.reports.arrivals import recent_blocks, recent_flags, recent_summary

    settings = Settings.of(home=tmp_path, **SETTINGS)
    m = make_synthetic(200, 30, seed=5)
    fp = m.fingerprint()
    path = save_matrix(m, settings.paths.artifacts_dir / "matrix" / f"{fp}.npz", fingerprint=fp)
    fit = fit_step(MatrixInfo("arc", str(path), fp, *m.shape, 1, ""), settings, lambda s: None)
    cand = write_candidate(settings, fit)
    models = read_models(cand.path)
    evaluation = load_evaluation(fit.model_dir)
    assert models["test"] == sorted(evaluation["test_ids"].tolist())
    assert {r: len(v) for r, v in models.items()} == fit.split_sizes
    assert "models.json" in json.loads((Path(cand.path) / "manifest.json").read_text())["files"]
    # the newest: the test models that arrived last (by first appearance), beside the others
    ids = evaluation["test_ids"].tolist()
    order = list(reversed(ids))
    recent = recent_flags(order, {x: (2 if i < 8 else 1) for i, x in enumerate(order)}, ids)
    assert sum(recent) == round(0.2 * len(ids)) and recent[0] and not recent[-1]
    assert recent_flags(order, dict.fromkeys(order, 1), ids) is None  # one run: no order
    inputs = {"test_pred": evaluation["test_pred"], "test_true": evaluation["test_true"],
              "test_recent": recent}  # fmt: skip
    manifest = json.loads((Path(cand.path) / "manifest.json").read_text())
    conf = ConformalInterval.from_dict(manifest["interval"])
    summary = recent_summary(conf, inputs)
    assert summary["n_recent"] == sum(recent) and summary["n_test"] == len(ids)
    (_, (_, text)) = recent_blocks(summary, 0.9)
    assert f"On the {sum(recent)} test models that arrived last" in text


def test_the_newest_test_models_come_from_the_stores_first_appearance(tmp_path):
    from sparseeval.pipeline.publish import _recent
    from sparseeval.pipeline.store import Store, ingest
    from sparseeval.pipeline.store.kinds import source_from_spec

    settings = Settings.of(home=tmp_path, **SETTINGS)
    with Store.open(settings.paths.store_path) as store:
        for batch in ("old", "new"):
            rows = "".join(f"{batch}{i},1,0\n" for i in range(5))
            (tmp_path / f"{batch}.csv").write_text("model,q1,q2\n" + rows)
            ingest(store, source_from_spec(f"wide:arc={tmp_path / f'{batch}.csv'}"))
    ids = [f"old{i}" for i in range(5)] + [f"new{i}" for i in range(5)]
    assert _recent(settings, "arc", ids) == [False] * 8 + [True] * 2
    assert _recent(settings, "arc", ids[:5]) is None  # all from one run
