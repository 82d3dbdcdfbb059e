"""The suite: each benchmark read from every benchmark's anchors, published and read back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.cli import main
from sparseeval.consume.scoring.inference import load_predictor, save_predictor, widen
from sparseeval.consume.sets.layout import AnchorSetError
from sparseeval.consume.sets.suite_set import SUITE, load_suite
from sparseeval.method.estimator import SparseEval
from sparseeval.method.matrix import MatrixError
from sparseeval.method.suite import AVERAGE, SuiteSparseEval
from sparseeval.method.synthetic import make_leaderboard
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_publish import write_suite
from sparseeval.pipeline.suite_recipe import common_models, fit_suite
from sparseeval.pipeline.versions import set_latest
from tests.helpers import FakeMirrorHub, publish_suite_in_flow

QUIET = {"progress": lambda s: None}
FAST = dict(refine_steps=2, epochs=60, patience=10, ensemble=1, **QUIET)
ITEMS = {"arc": 60, "gsm8k": 50, "mmlu": 70}
SETTINGS = dict(n_anchors=8, n_test=60, n_valid=60, n_calib=60, refine_steps=2, epochs=60,
                patience=10, ensemble=1)  # fmt: skip


@pytest.fixture(scope="module")
def leaderboard():
    return make_leaderboard(360, ITEMS, seed=4)


def rows(lb, r):
    return {b: m.values[r] for b, m in lb.items()}, {b: m.y[r] for b, m in lb.items()}


@pytest.fixture(scope="module")
def fitted(leaderboard):
    suite = SuiteSparseEval(8, SparseEval(**FAST))
    suite.fit(*rows(leaderboard, np.arange(180)), *rows(leaderboard, np.arange(180, 240)))
    return suite.calibrate(*rows(leaderboard, np.arange(240, 300)))


def test_each_benchmark_reads_every_anchor_and_the_average_is_their_mean(leaderboard, fitted):
    X, y = rows(leaderboard, np.arange(300, 360))
    pred = fitted.predict(X)
    assert set(pred) == {*ITEMS, AVERAGE}
    assert np.allclose(pred[AVERAGE], np.mean([pred[b] for b in ITEMS], axis=0))
    assert all(n in fitted.valid_scores_["arc"] for n in fitted.reader_names_.values())
    assert set(fitted.valid_scores_["arc"]) == {"own", "joint", "own+joint", "own+joint+shared"}
    width = sum(len(e.anchors_) for e in fitted.estimators_.values())
    assert fitted.joint_input(X).shape == (60, width)
    for b in ITEMS:  # the kept reader has the lowest validation MAE of the candidates
        scores = fitted.valid_scores_[b]
        assert scores[fitted.reader_names_[b]] == min(scores.values())
        assert 100 * np.mean(np.abs(pred[b] - y[b])) < 12  # it reads the benchmark, not noise
    assert set(fitted.calibration_residuals_) == {*ITEMS, AVERAGE}
    assert fitted.calibration_source_ == "calibration"
    Xc, _ = rows(leaderboard, np.arange(240, 300))
    pc = fitted.predict(Xc)  # the estimates an adaptive width follows, the average's too
    for key in (*ITEMS, AVERAGE):
        assert np.allclose(fitted.calibration_predictions_[key], pc[key])
    assert np.allclose(fitted.own_calibration_predictions_["arc"],
                       fitted.estimators_["arc"].predict(Xc["arc"]))  # fmt: skip


def test_one_benchmark_alone_falls_back_to_its_own_reader(leaderboard, fitted):
    X, _ = rows(leaderboard, np.arange(300, 360))
    alone = fitted.predict({"arc": X["arc"]})
    assert set(alone) == {"arc"}
    assert np.array_equal(alone["arc"], fitted.estimators_["arc"].predict(X["arc"]))


def test_bad_suite_input_is_refused(leaderboard, fitted):
    X, y = rows(leaderboard, np.arange(10))
    with pytest.raises(MatrixError, match="unknown benchmark"):
        fitted.predict(X | {"hellaswag": X["arc"]})
    with pytest.raises(MatrixError, match="different numbers of models"):
        SuiteSparseEval(4).fit(X | {"arc": X["arc"][:5]}, y | {"arc": y["arc"][:5]}, X, y)
    with pytest.raises(MatrixError, match="at least two benchmarks"):
        SuiteSparseEval(4).fit({"arc": X["arc"]}, {"arc": y["arc"]}, {"arc": X["arc"]},
                               {"arc": y["arc"]})  # fmt: skip
    with pytest.raises(MatrixError, match="percentages"):
        SuiteSparseEval(4).fit(X, y | {"arc": 100 * y["arc"]}, X, y)


@pytest.mark.parametrize("predictor", ["ridge", "nnridge", "mlp", "blend"])
def test_widened_reader_is_exact(predictor, tmp_path):
    rng = np.random.default_rng(0)
    X = np.where(rng.random((80, 12)) < 0.5, -1.0, 1.0).astype(np.float32)
    y = (X.mean(1) + 1) / 2
    est = SparseEval(predictor=predictor, **FAST)
    p = est._candidates(X, y, wanted=(predictor,))[predictor]
    cols = np.array([3, 4, 5, 9, 10, 11, 12, 13, 14, 15, 16, 17])
    wide = np.where(rng.random((80, 20)) < 0.5, -1.0, 1.0).astype(np.float32)
    wide[:, cols] = X
    reader = widen(p, cols, 20)
    assert np.max(np.abs(reader.predict(wide) - p.predict(X))) < 1e-6
    save_predictor(reader, tmp_path / "r")  # and it saves and loads in the published format
    assert np.max(np.abs(load_predictor(tmp_path / "r").predict(wide) - p.predict(X))) < 1e-6


def test_publish_load_and_predict_like_the_estimator(leaderboard, tmp_path):
    lb = {b: m.rows(np.arange(360 - 15 * i)) for i, (b, m) in enumerate(leaderboard.items())}
    assert len(common_models(lb)["arc"].model_ids) == 330  # models every benchmark has
    settings = Settings.of(home=tmp_path, **SETTINGS)
    fit = fit_suite(lb, settings)
    folder = write_suite(tmp_path, fit, settings)
    with pytest.raises(AnchorSetError):  # not promoted yet: nothing loads
        load_suite(tmp_path)
    set_latest(tmp_path, SUITE, 1)
    suite = load_suite(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["benchmark"] == SUITE and manifest["suite"]["benchmarks"] == list(ITEMS)
    assert "adaptive" in manifest["interval"]  # 60 calibration models: width follows estimate
    described = manifest["suite"]["members"].values()
    assert all("adaptive" in m[r]["interval"] for m in described for r in ("joint", "own"))
    assert {"report.html", "report.md"} <= {p.name for p in folder.iterdir()}
    report = (folder / "report.md").read_text()
    assert "## Per benchmark" in report and "sparseeval.load_suite(" in report
    members = ("members/arc/joint/weights.npz", "members/mmlu/own/predictor.json")
    assert all(rel in manifest["files"] for rel in members)
    assert manifest["pool_check"]["widen"] == 4.0 and suite.average.pool_check is not None
    assert all(suite.joint[b].pool_check and suite.own[b].pool_check for b in ITEMS)
    m = {b: x.rows(np.arange(3)) for b, x in common_models(lb).items()}
    every = {b: dict(zip(x.item_ids, x.values[0], strict=True)) for b, x in m.items()}
    answers = {b: {i: every[b][i] for i in suite.own[b].items} for b in m}  # anchors only
    out = suite.predict(answers)
    expected = fit.suite.predict({b: x.values[:1] for b, x in m.items()})
    for key in (*ITEMS, AVERAGE):
        assert out[key].value == pytest.approx(float(expected[key][0]), abs=1e-6)
        assert out[key].low <= out[key].value <= out[key].high
    alone = suite.predict({"gsm8k": answers["gsm8k"]})
    assert alone["gsm8k"].value == pytest.approx(
        float(fit.suite.estimators_["gsm8k"].predict(m["gsm8k"].values[:1])[0]), abs=1e-6
    )
    with pytest.raises(AnchorSetError, match="has arc, gsm8k, mmlu"):
        suite.predict({"hellaswag": {}})
    # every item answered: each benchmark's own item curves correct it to the exact mean
    assert all(manifest["suite"]["members"][b]["own"]["item_curves"]["n_items"] for b in ITEMS)
    full = suite.predict(every)
    alone = suite.predict({"arc": every["arc"]})["arc"]
    for b, est in [*((b, full[b]) for b in ITEMS), ("arc", alone)]:
        assert est.n_extra and est.value == pytest.approx(float(m[b].y[0]), abs=1e-9)
    more = suite.own["arc"].next_items(answers["arc"], 5)
    assert len(more) == 5 and not set(more) & set(suite.own["arc"].items)
    (folder / "members/arc/joint/weights.npz").write_bytes(b"tampered")
    with pytest.raises(AnchorSetError, match=r"checksum|sha256"):
        load_suite(tmp_path)


@pytest.mark.usefixtures("prefect_harness")
def test_refresh_publishes_once_then_reuses_then_gates(leaderboard, tmp_path):
    from sparseeval.pipeline.artifacts import save_matrix

    settings = Settings.of(home=tmp_path, **SETTINGS)
    paths = {}
    for b, m in leaderboard.items():
        paths[b] = tmp_path / f"{b}.npz"
        save_matrix(m, paths[b], fingerprint=m.fingerprint())
    pub = tmp_path / "published"
    first = publish_suite_in_flow(paths, settings)
    assert first.startswith("suite: published v1, 3 benchmarks")
    assert publish_suite_in_flow(paths, settings).startswith("suite: v1 is up to date")
    worse = Settings.of(home=tmp_path, **(SETTINGS | {"n_anchors": 2}))  # two anchors: worse
    third = publish_suite_in_flow(paths, worse)
    assert "refused: candidate suite-average MAE" in third, third
    again = publish_suite_in_flow(paths, worse)  # the same candidate is not fitted again
    assert again.startswith("suite: not published (this candidate was already refused"), again
    assert load_suite(pub).version == 1 and (pub / SUITE / ".discarded-v2").exists()


def test_cli_predict_suite(leaderboard, tmp_path, capsys):
    settings = Settings.of(home=tmp_path, **SETTINGS)
    write_suite(tmp_path, fit_suite(leaderboard, settings), settings)
    set_latest(tmp_path, SUITE, 1)
    suite = load_suite(tmp_path)
    files = []
    for b in ITEMS:
        path = tmp_path / f"{b}.csv"
        path.write_text("item,correct\n" + "".join(f"{i},1\n" for i in suite.items(b)))
        files.append(f"{b}={path}")
    base = ["predict", "--anchor-set", str(tmp_path), "--benchmark", "suite"]
    assert main([*base, "--responses", *files]) == 0
    out = capsys.readouterr().out
    assert "every benchmark's anchors" in out and "average" in out
    assert main([*base, "--responses", files[0], "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"arc"}
    template = tmp_path / "all.csv"
    assert main(["anchors", "--anchor-set", str(tmp_path), "--benchmark", "suite",
                 "--template", str(template)]) == 0  # fmt: skip
    capsys.readouterr()
    template.write_text(template.read_text().replace(",\n", ",0\n"))
    assert main([*base, "--responses", str(template)]) == 0
    assert "average" in capsys.readouterr().out
    assert main([*base, "--responses", f"nope={tmp_path / 'arc.csv'}"]) == 2
    assert "has arc, gsm8k, mmlu" in capsys.readouterr().err


def test_a_shared_reader_publishes_one_output_at_a_time(tmp_path):
    from sparseeval.method.predictors import MLPPredictor

    rng = np.random.default_rng(1)
    X = np.where(rng.random((200, 16)) < 0.5, -1.0, 1.0).astype(np.float32)
    Y = np.stack([(X[:, :8].mean(1) + 1) / 2, (X[:, 8:].mean(1) + 1) / 2], axis=1)
    net = MLPPredictor(epochs=40, seed=2).fit(X, Y)
    assert net.predict(X).shape == (200, 2)
    with pytest.raises(ValueError, match="one output at a time"):
        net.state()
    for j in range(2):
        save_predictor(net.output(j), tmp_path / f"o{j}")
        got = load_predictor(tmp_path / f"o{j}").predict(X)
        assert np.max(np.abs(got - net.predict(X)[:, j])) < 1e-6


@pytest.mark.usefixtures("prefect_harness")
def test_refresh_mirrors_the_suite_before_it_goes_live_and_a_failed_mirror_keeps_it_out(
    leaderboard, tmp_path, monkeypatch
):
    from types import SimpleNamespace

    from sparseeval.pipeline import publish
    from sparseeval.pipeline.artifacts import save_matrix
    from sparseeval.pipeline.mirror import mirror_version

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    class RevisionedMirrorHub(FakeMirrorHub):  # commits answer with an oid, as HfApi's do
        def dataset_info(self, repo_id):
            return SimpleNamespace(sha=f"{len(self.commits):040d}")

        def create_commit(self, repo_id, operations, **kw):
            super().create_commit(repo_id, operations, **kw)
            return SimpleNamespace(oid=f"{len(self.commits):040d}")

    hub = RevisionedMirrorHub(tmp_path / "hub")
    paths = {}
    for b, m in leaderboard.items():
        paths[b] = tmp_path / f"{b}.npz"
        save_matrix(m, paths[b], fingerprint=m.fingerprint())
    pub = tmp_path / "published"
    settings = Settings.of(home=tmp_path, hub_repo="acme/sets", **SETTINGS)

    def broken(cand, hub_repo, client=None):
        raise ValueError("hub unreachable")

    monkeypatch.setattr(publish, "mirror", broken)  # what the flow's mirror task calls
    line = publish_suite_in_flow(paths, settings)
    assert line.startswith("suite: not published (mirror to acme/sets failed"), line
    with pytest.raises(AnchorSetError):
        load_suite(pub)  # nothing went live

    def push(cand, hub_repo, client=None):
        return mirror_version(pub, SUITE, cand.version, hub_repo, client=hub)

    monkeypatch.setattr(publish, "mirror", push)
    line = publish_suite_in_flow(paths, settings)
    assert line.startswith("suite: published v2 and "), line
    from_hub = load_suite("acme/sets", hub_client=hub)  # the consumer reads it from the Hub
    assert from_hub.version == 2 and from_hub.benchmarks == list(ITEMS)
