"""The suite reuses each benchmark's own fit when it saw the same inputs (same result)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparseeval.method import selection
from sparseeval.method.estimator import SparseEval
from sparseeval.method.model_files import load_estimator
from sparseeval.method.suite import SuiteSparseEval
from sparseeval.method.synthetic import make_leaderboard
from sparseeval.pipeline.artifacts import load_matrix, save_matrix
from sparseeval.pipeline.recipe import fit_step, split_step
from sparseeval.pipeline.records import MatrixInfo
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_recipe import fit_suite, same_fit_inputs

ITEMS = {"arc": 40, "gsm8k": 30, "mmlu": 50}
SETTINGS = dict(n_anchors=6, n_test=50, n_valid=50, n_calib=50, refine_steps=2, epochs=40,
                patience=5, ensemble=2)  # fmt: skip
QUIET = {"progress": lambda s: None}


@pytest.fixture
def selections(monkeypatch) -> list[int]:
    """Counts anchor selections (`AnchorSelector.fit` calls)."""
    calls = []
    real = selection.AnchorSelector.fit

    def counted(self, *args, **kwargs):
        calls.append(self.n_anchors)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(selection.AnchorSelector, "fit", counted)
    return calls


def suite_arrays(suite: SuiteSparseEval, X: dict) -> dict[str, np.ndarray]:
    """Everything a fitted suite learned or predicts, as arrays (readers as their state)."""
    out = {f"pred/{k}": v for k, v in suite.predict(X).items()}
    for b in suite.benchmarks_:
        own = suite.estimators_[b]
        out |= {f"anchors/{b}": own.anchors_, f"own/{b}": own.predict(X[b]),
                f"calib/{b}": suite.calibration_residuals_[b],
                f"owncalib/{b}": suite.own_calibration_residuals_[b],
                f"reader/{b}": np.array(suite.reader_names_[b]),
                f"scores/{b}": np.array(json.dumps(suite.valid_scores_[b]))}  # fmt: skip
        config, arrays = suite.readers_[b].state()
        out |= {f"state/{b}": np.array(json.dumps(config))}
        out |= {f"state/{b}/{k}": v for k, v in arrays.items()}
    return out


def assert_identical(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    different = [k for k in a if not (a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]))]
    assert different == []


def test_suite_with_fitted_estimators_equals_fitting_them(selections):
    lb = make_leaderboard(200, ITEMS, seed=5)
    tr, va, te = np.arange(0, 120), np.arange(120, 160), np.arange(160, 200)
    rows = lambda r: ({b: m.values[r] for b, m in lb.items()},  # noqa: E731
                      {b: m.y[r] for b, m in lb.items()})  # fmt: skip
    template = SparseEval(refine_steps=2, epochs=40, patience=5, ensemble=2, **QUIET)
    ids = {b: m.item_ids for b, m in lb.items()}
    plain = SuiteSparseEval(6, template, **QUIET).fit(*rows(tr), *rows(va), item_ids=ids)
    assert len(selections) == 3 and plain.reused_ == []
    own = {b: plain.benchmark_template(m.shape[1], m.scale).fit(
               m.values[tr], m.y[tr], X_valid=m.values[va], y_valid=m.y[va], item_ids=m.item_ids)
           for b, m in lb.items()}  # fmt: skip
    del selections[:]
    reused = SuiteSparseEval(6, template, **QUIET).fit(*rows(tr), *rows(va), item_ids=ids,
                                                       fitted=own)  # fmt: skip
    assert selections == [] and reused.reused_ == list(ITEMS)
    assert_identical(suite_arrays(plain, rows(te)[0]), suite_arrays(reused, rows(te)[0]))
    arc = lb["arc"]
    other_settings = SparseEval(n_anchors=6, refine_steps=3, **QUIET)
    other = {
        "arc": other_settings.fit(
            arc.values[tr], arc.y[tr], X_valid=arc.values[va], y_valid=arc.y[va]
        ),
        "gsm8k": own["arc"],  # another benchmark's fit
    }
    del selections[:]
    mixed = SuiteSparseEval(6, template, **QUIET).fit(*rows(tr), *rows(va), item_ids=ids,
                                                      fitted=other)  # fmt: skip
    assert mixed.reused_ == [] and len(selections) == 3


def benchmark_fits(lb: dict, settings: Settings) -> dict:
    """Each benchmark fitted by the pipeline's own step (saved under artifacts/model/).

    Rows sorted by model id, as the store builds a matrix: every benchmark then has the
    same rows in the same order, the suite's own alignment.
    """
    loaded = {}
    for b, m in lb.items():
        m = m.rows(np.argsort(m.model_ids.astype(str)))
        fp = m.fingerprint()
        path = save_matrix(m, settings.paths.artifacts_dir / "matrix" / f"{fp}.npz", fingerprint=fp)
        info = MatrixInfo(b, str(path), fp, m.shape[0], m.shape[1], 1, "")
        fit_step(info, settings, progress=lambda s: None)
        loaded[b] = load_matrix(path)
    return loaded


def fit_arrays(fit) -> dict[str, np.ndarray]:
    test = {b: x for b, x in fit.test_true.items()}
    out = {f"test_pred/{k}": v for k, v in fit.test_pred.items()}
    out |= {f"test_true/{k}": v for k, v in test.items()}
    out |= {f"own_test/{k}": v for k, v in fit.own_test_pred.items()}
    return (
        out
        | {k: np.asarray(v) for k, v in fit.suite.calibration_residuals_.items()}
        | {f"own_calib/{k}": v for k, v in fit.suite.own_calibration_residuals_.items()}
    )


def test_fit_suite_reuses_the_benchmark_fits_bit_for_bit(tmp_path, selections):
    settings = Settings.of(home=tmp_path, **SETTINGS)
    loaded = benchmark_fits(make_leaderboard(260, ITEMS, seed=6), settings)
    del selections[:]
    reused = fit_suite(loaded, settings)  # finds each benchmark's fit by its key
    assert selections == [] and reused.suite.reused_ == list(ITEMS)
    refitted = fit_suite(loaded, settings, benchmark_fits={})  # nothing to reuse
    assert len(selections) == 3 and refitted.suite.reused_ == []
    assert reused.data_fingerprint == refitted.data_fingerprint
    assert_identical(fit_arrays(reused), fit_arrays(refitted))
    X = {b: m.values for b, m in loaded.items()}
    assert_identical(suite_arrays(reused.suite, X), suite_arrays(refitted.suite, X))


def test_a_fit_of_other_inputs_or_without_the_state_is_not_reused(tmp_path, selections):
    settings = Settings.of(home=tmp_path, **SETTINGS)
    loaded = benchmark_fits(make_leaderboard(260, ITEMS, seed=6), settings)
    folders = {
        p.parent.name: p.parent for p in (tmp_path / "artifacts/model").glob("*/anchors.json")
    }
    assert len(folders) == 3
    # another split: cross-fitted calibration keeps every training model, the suite does not
    cross = settings.replace(calibration="cross")
    benchmark_fits({"arc": loaded["arc"]}, cross)
    (cross_fit,) = set((tmp_path / "artifacts/model").iterdir()) - set(folders.values())
    arc = loaded["arc"]
    suite_split = split_step(arc, settings, "suite")  # the suite splits as "split" does
    assert not same_fit_inputs(cross_fit, arc, arc.fingerprint(), suite_split)
    del selections[:]
    assert fit_suite({b: loaded[b] for b in ("arc", "gsm8k")}, cross).suite.reused_ == []
    assert len(selections) == 2
    # a fit saved before the reuse state was written (no validation residuals)
    for folder in folders.values():
        meta = json.loads((folder / "anchors.json").read_text())
        meta.pop("valid_residuals")
        (folder / "anchors.json").write_text(json.dumps(meta))
        template = SparseEval.from_config(settings.values())
        assert load_estimator(folder, template) is None
    assert fit_suite(loaded, settings).suite.reused_ == []
