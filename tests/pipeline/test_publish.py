"""Published anchor sets: versioned atomic writes, latest pointer, verified loading, scoring."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import polars as pl
import pytest

from sparseeval.consume.answers.responses import ResponsesError
from sparseeval.consume.sets.anchorset import AnchorSet, load_anchor_set
from sparseeval.consume.sets.layout import (
    SCHEMA_VERSION,
    AnchorSetError,
    latest_version,
    list_versions,
)
from sparseeval.consume.sets.layout import seal as _seal
from sparseeval.method.estimator import SparseEval
from sparseeval.method.splits import split_models
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.versions import (
    discard_version,
    new_version,
    render_report_of,
    set_latest,
    write_version,
)
from tests.helpers import publish_fit, tiny_fit

B = "gsm8k"


@pytest.fixture(scope="module")
def fitted():
    return tiny_fit(seed=0, n_test=80, n_valid=80)


def publish(root, fitted, **kw):
    return publish_fit(root, B, fitted, **kw)


def answers(m, est, row: int, coding: str = "01") -> dict:
    cols = {str(i): j for j, i in enumerate(m.item_ids)}
    signs = m.values[row, [cols[i] for i in est.anchor_ids_]]
    if coding == "pm1":
        vals = [int(s) for s in signs]
    elif coding == "bool":
        vals = [bool(s > 0) for s in signs]
    else:
        vals = [int(s > 0) for s in signs]
    return dict(zip(est.anchor_ids_, vals, strict=True))


def test_write_is_versioned_and_does_not_move_latest(tmp_path, fitted):
    v1 = publish(tmp_path, fitted)
    assert v1 == tmp_path / B / "k8" / "v1" and (v1 / "manifest.json").is_file()
    assert latest_version(tmp_path, B, 8) is None
    with pytest.raises(AnchorSetError, match="no latest"):
        load_anchor_set(tmp_path, B)
    set_latest(tmp_path, B, 1)
    v2 = publish(tmp_path, fitted)
    assert v2.name == "v2" and latest_version(tmp_path, B, 8) == 1
    assert load_anchor_set(tmp_path, B).version == 1
    with pytest.raises(AnchorSetError, match="v2 was never promoted"):  # a candidate (issue 13)
        load_anchor_set(tmp_path, B, version="v2")
    set_latest(tmp_path, B, 2)
    assert load_anchor_set(tmp_path, B, version="v1").version == 1  # was promoted once
    assert load_anchor_set(tmp_path, B).version == 2
    assert list_versions(tmp_path, B, 8) == [1, 2]
    # nothing temporary is left behind
    assert sorted(p.name for p in (tmp_path / B / "k8").iterdir()) == ["latest", "v1", "v2"]
    pointer = json.loads((tmp_path / B / "k8" / "latest").read_text())
    assert pointer["version"] == 2 and pointer["path"] == "v2"


def test_discard_rolls_back_and_never_reuses_numbers(tmp_path, fitted):
    publish(tmp_path, fitted)
    set_latest(tmp_path, B, 1)
    publish(tmp_path, fitted)
    with pytest.raises(AnchorSetError, match="live"):
        discard_version(tmp_path, B, 1)
    discard_version(tmp_path, B, 2, reason="quality gate failed")
    assert list_versions(tmp_path, B, 8) == [1] and latest_version(tmp_path, B, 8) == 1
    assert publish(tmp_path, fitted).name == "v3"


def test_failed_write_leaves_nothing(tmp_path, fitted):
    _m, _sp, est = fitted

    class Broken:
        anchor_ids_ = est.anchor_ids_
        calibration_residuals_ = est.calibration_residuals_

        class predictor_:
            @staticmethod
            def state():
                raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        decided = new_version(
            B, Broken(), data_fingerprint="x", split_sizes={}, metrics={}, settings={}
        )
        write_version(tmp_path, decided)
    assert list((tmp_path / B / "k8").iterdir()) == []


def test_manifest_contents(tmp_path, fitted):
    m, _sp, est = fitted
    sources = {i: ("gsm8k", k) for k, i in enumerate(est.anchor_ids_)}
    folder = publish(tmp_path, fitted, item_sources=sources)
    man = json.loads((folder / "manifest.json").read_text())
    assert man["schema_version"] == SCHEMA_VERSION and man["version"] == 1
    assert man["benchmark"] == B and man["items"] == list(est.anchor_ids_)
    assert man["data_fingerprint"] == m.fingerprint()
    assert man["split_sizes"] == {"train": 140, "valid": 80, "test": 80}
    assert set(man["metrics"]["test"]) >= {"mae", "kendall_tau"}
    assert man["settings"]["interval_level"] == 0.9 and man["library_version"]
    assert man["item_sources"][est.anchor_ids_[2]] == {"task": "gsm8k", "doc_id": 2}
    iv = man["interval"]
    assert iv["level"] == 0.9 and iv["n_calibration"] == 80 and iv["halfwidth"] > 0
    assert 0.75 <= iv["test_coverage"] <= 1.0 and iv["n_test"] == 80
    assert iv["calibrated_on"] == "validation"
    assert "are optimistic" in (folder / "report.md").read_text()
    for rel in ("predictor/predictor.json", "predictor/weights.npz", "report_inputs.json"):
        assert len(man["files"][rel]) == 64, rel
    # the report is rendered after the sealed payload, from it: there, and not listed
    for rel in ("report.md", "report.html", "metrics.json", "plots/predicted_vs_true.png"):
        assert (folder / rel).is_file() and rel not in man["files"], rel
    assert not any(str(p).endswith(".pkl") for p in folder.rglob("*"))


def test_report_names_the_models_the_intervals_were_calibrated_on(tmp_path):
    m, sp, est = tiny_fit(n_test=60, n_valid=60)
    calib = sp.train[:40]
    est.calibrate(m.values[calib], m.y[calib])
    folder = publish_fit(tmp_path, B, (m, sp, est))
    man = json.loads((folder / "manifest.json").read_text())
    assert man["interval"]["calibrated_on"] == "calibration"
    assert man["interval"]["n_calibration"] == 40
    report = (folder / "report.md").read_text()
    assert "40 held-out calibration models" in report and "optimistic" not in report


def test_predict_matches_estimator_for_every_input_form(tmp_path, fitted):
    m, sp, est = fitted
    publish(tmp_path, fitted)
    set_latest(tmp_path, B, 1)
    aset = load_anchor_set(tmp_path, B)
    assert aset.items == list(est.anchor_ids_)
    row = int(sp.test[0])
    expected = float(est.predict(m.values[row : row + 1])[0])
    d = answers(m, est, row)
    forms = [
        d,
        answers(m, est, row, "pm1"),
        answers(m, est, row, "bool"),
        pl.DataFrame({"item": list(d), "correct": list(d.values())}),
        [d[i] for i in aset.items],
        np.array([d[i] for i in aset.items]) * 2 - 1,
        d | {"not-an-anchor": 1},  # extra items are ignored
    ]
    for form in forms:
        est_ = aset.predict(form)
        assert est_.value == pytest.approx(expected, abs=1e-6)
        assert est_.low <= est_.value <= est_.high and est_.level == 0.9
        assert est_.n_answered == 8 and not est_.imputed
    assert "% (90% interval" in str(aset.predict(d))


def test_missing_and_bad_answers(tmp_path, fitted):
    m, sp, est = fitted
    publish(tmp_path, fitted)
    set_latest(tmp_path, B, 1)
    aset = load_anchor_set(tmp_path, B, version=1)
    d = answers(m, est, int(sp.test[1]))
    gone = aset.items[2], aset.items[5]
    partial = {k: v for k, v in d.items() if k not in gone}
    with pytest.raises(ResponsesError, match=f"2 of 8 anchors missing.*{gone[0]}.*{gone[1]}"):
        aset.predict(partial)
    full, imp = aset.predict(d), aset.predict(partial, allow_missing=True)
    assert imp.imputed and imp.missing == gone and imp.n_answered == 6
    assert imp.high - imp.low >= full.high - full.low - 1e-9
    nan_form = {**partial, gone[0]: None, gone[1]: float("nan")}
    assert aset.predict(nan_form, allow_missing=True).value == pytest.approx(imp.value)
    with pytest.raises(ResponsesError, match="no answers"):
        aset.predict({}, allow_missing=True)
    with pytest.raises(ResponsesError, match=r"graded score \(0.5\), but this set's items are"):
        aset.predict(d | {aset.items[0]: 0.5})
    with pytest.raises(ResponsesError, match="expected 0/1"):
        aset.predict(d | {aset.items[0]: 2})
    with pytest.raises(ResponsesError, match="expected 8"):
        aset.predict([1, 0, 1])
    with pytest.raises(ResponsesError, match="item and correct"):
        aset.predict(pl.DataFrame({"id": ["a"], "ok": [1]}))


def test_predict_matrix_and_compare(tmp_path, fitted):
    m, sp, est = fitted
    publish(tmp_path, fitted)
    set_latest(tmp_path, B, 1)
    aset = load_anchor_set(tmp_path, B, version=1)
    X = m.values[sp.test]
    np.testing.assert_allclose(aset.predict_matrix(X, m.item_ids), est.predict(X), atol=1e-6)
    np.testing.assert_allclose(
        aset.predict_matrix((X > 0).astype(int), m.item_ids), est.predict(X), atol=1e-6
    )
    low, high = aset.intervals(aset.predict_matrix(X, m.item_ids))
    assert np.all(low <= high)
    with pytest.raises(ResponsesError, match="missing from the matrix columns"):
        aset.predict_matrix(X[:, 1:], m.item_ids[1:])
    a, b = answers(m, est, int(sp.test[0])), answers(m, est, int(sp.test[1]))
    diff = aset.compare(a, b)
    assert (diff.a, diff.b) == (aset.predict(a), aset.predict(b))
    assert diff.resolvable == aset.conformal.diff_halfwidth > aset.conformal.halfwidth


class ShareCorrect:
    """A predictor known by hand: the share of anchors answered right."""

    def predict(self, XA):
        return (np.asarray(XA).mean(axis=1) + 1) / 2


def hand_set(halfwidth: float, diff_halfwidth: float | None) -> AnchorSet:
    interval = {"level": 0.9, "halfwidth": halfwidth, "diff_halfwidth": diff_halfwidth}
    manifest = {"benchmark": B, "version": 3, "items": ["q1", "q2", "q3", "q4"]}
    return AnchorSet(manifest | {"interval": interval, "predictor": {}}, ShareCorrect())


def test_compare_known_answer():
    diff = hand_set(0.125, 0.25).compare({"q1": 1, "q2": 1, "q3": 1, "q4": 0}, [1, 0, 0, 0])
    a = {"value": 0.75, "low": 0.625, "high": 0.875, "level": 0.9, "benchmark": B, "version": 3,
         "n_anchors": 4, "n_answered": 4, "missing": [], "imputed": False, "target": "",
         "synthetic": False, "data": "", "flags": [], "correction": None, "note": "",
         "saturated": ""}  # fmt: skip
    b = a | {"value": 0.25, "low": 0.125, "high": 0.375}
    assert json.loads(json.dumps(diff.to_dict())) == {
        "value": 0.5, "low": 0.25, "high": 0.75, "level": 0.9, "resolvable": 0.25,
        "significant": True, "a": a, "b": b,
    }  # fmt: skip
    assert str(diff) == (
        "+50.0 points (90% interval +25.0 to +75.0); smallest resolvable difference 25.0 points"
    )


def test_compare_without_a_difference_halfwidth_is_unbounded_and_not_significant():
    diff = hand_set(0.125, None).compare([1, 1, 0, 0], [1, 0, 0, 0])
    d = json.loads(json.dumps(diff.to_dict()))
    assert {k: d[k] for k in ("value", "low", "high", "resolvable", "significant")} == {
        "value": 0.25, "low": -1.0, "high": 1.0, "resolvable": None, "significant": False,
    }  # fmt: skip


def test_mlp_predictor_round_trips(tmp_path):
    m = make_synthetic(200, 40, seed=3)
    sp = split_models(m.model_ids, n_test=40, n_valid=50, seed=3)
    est = SparseEval(
        n_anchors=6, refine_steps=0, epochs=30, ensemble=1, predictor="mlp", progress=lambda s: None
    ).fit(
        m.values[sp.train],
        m.y[sp.train],
        X_valid=m.values[sp.valid],
        y_valid=m.y[sp.valid],
        item_ids=m.item_ids,
    )
    decided = new_version(
        "arc",
        est,
        data_fingerprint=m.fingerprint(),
        split_sizes=sp.sizes(),
        metrics={},
        settings=Settings.of(),
    )
    write_version(tmp_path, decided)
    set_latest(tmp_path, "arc", 1)
    aset = load_anchor_set(tmp_path / "arc" / "k6" / "v1", "arc")
    X = m.values[sp.test]
    np.testing.assert_allclose(aset.predict_matrix(X, m.item_ids), est.predict(X), atol=1e-5)


# --------------------------------------------------------------------------- tampering


@pytest.fixture
def published(tmp_path, fitted):
    folder = publish(tmp_path, fitted)
    set_latest(tmp_path, B, 1)
    return tmp_path, folder


def test_writing_a_version_writes_what_was_decided(tmp_path, fitted):
    """`new_version` decides (the interval, its coverage check); `write_version` only writes:
    an interval changed between the two is published as given."""
    m, sp, est = fitted
    pred = est.predict(m.values[sp.test])
    decided = new_version(B, est, data_fingerprint="x", split_sizes=sp.sizes(), metrics={},
                          settings={"interval_level": 0.9},
                          report_inputs={"test_pred": pred, "test_true": m.y[sp.test]})  # fmt: skip
    assert "coverage_check" in decided.manifest["interval"]  # decided before any write
    interval = decided.manifest["interval"] | {"halfwidth": 0.123}
    decided = dataclasses.replace(decided, manifest=decided.manifest | {"interval": interval})
    man = json.loads((write_version(tmp_path, decided) / "manifest.json").read_text())
    assert man["interval"] == interval
    assert {k: man[k] for k in decided.manifest} == decided.manifest


def test_the_report_is_rendered_after_the_set_and_its_failure_loses_nothing(
    tmp_path, fitted, monkeypatch, caplog
):
    from sparseeval.pipeline.reports import anchor_report

    def broken(*args, **kwargs):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(anchor_report, "render_report", broken)
    with caplog.at_level("WARNING", logger="sparseeval.progress"):
        folder = publish(tmp_path, fitted)
    assert "written without its report (RuntimeError: no fonts)" in caplog.text
    assert [p.name for p in folder.parent.iterdir()] == ["v1"]  # no temporary folder left
    assert not (folder / "report.html").exists()
    set_latest(tmp_path, B, 1)
    assert load_anchor_set(tmp_path, B).version == 1  # the set stands without its report
    monkeypatch.undo()
    assert render_report_of(folder) and (folder / "report.html").is_file()
    assert load_anchor_set(tmp_path, B).version == 1  # and with it, unlisted


def test_only_the_reports_own_files_may_sit_unlisted(published):
    root, folder = published
    (folder / "plots" / "run.sh").write_text("echo hi")
    with pytest.raises(AnchorSetError, match=r"plots/run.sh \(not listed in the manifest\)"):
        load_anchor_set(root, B)
    (folder / "plots" / "run.sh").unlink()
    (folder / "report.html").unlink()
    (folder / "report.html").symlink_to(folder / "report.md")
    with pytest.raises(AnchorSetError, match=r"report.html \(symlink\)"):
        load_anchor_set(root, B)


def test_tampered_weights_are_refused(published):
    root, folder = published
    w = folder / "predictor" / "weights.npz"
    data = bytearray(w.read_bytes())
    data[-20] ^= 0xFF
    w.write_bytes(bytes(data))
    with pytest.raises(AnchorSetError, match=r"predictor/weights.npz \(checksum mismatch\)"):
        load_anchor_set(root, B)


def test_truncated_and_missing_files_are_refused(published):
    root, folder = published
    inputs = folder / "report_inputs.json"
    inputs.write_bytes(inputs.read_bytes()[:100])
    (folder / "predictor" / "predictor.json").unlink()
    with pytest.raises(
        AnchorSetError,
        match=r"predictor.json \(missing\), report_inputs.json \(checksum mismatch\)",
    ):
        load_anchor_set(root, B)


def test_edited_or_truncated_manifest_is_refused(published):
    root, folder = published
    path = folder / "manifest.json"
    original = path.read_text()
    man = json.loads(original)
    man["items"] = list(reversed(man["items"]))
    path.write_text(json.dumps(man))
    with pytest.raises(AnchorSetError, match="modified after publishing"):
        load_anchor_set(root, B)
    path.write_text(original[: len(original) // 2])
    with pytest.raises(AnchorSetError, match="damaged or truncated"):
        load_anchor_set(root, B)


def test_newer_schema_is_refused(published):
    root, folder = published
    path = folder / "manifest.json"
    man = json.loads(path.read_text())
    man["schema_version"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(_seal(man)))
    with pytest.raises(AnchorSetError, match=r"newer than this sparseeval.*upgrade"):
        load_anchor_set(root, B)


def test_wrong_benchmark_and_bad_paths(published, tmp_path):
    root, folder = published
    with pytest.raises(AnchorSetError, match="holds benchmark 'gsm8k', not 'arc'"):
        load_anchor_set(folder, "arc")
    with pytest.raises(AnchorSetError, match="not found"):
        load_anchor_set(root, B, version=7)
    with pytest.raises(AnchorSetError, match="no such folder"):
        load_anchor_set(tmp_path / "nowhere", B)
    with pytest.raises(AnchorSetError, match="'latest', N or vN"):
        load_anchor_set(root, B, version="newest")


def test_concurrent_writer_takes_next_number(tmp_path, fitted, monkeypatch):
    """If another writer renames v1 into place first, this one becomes v2."""
    from sparseeval.pipeline import versions as P

    real = P._next_version
    calls = []

    def racing(bench_dir):
        calls.append(1)
        if len(calls) == 1:
            (bench_dir / "v1").mkdir()
            (bench_dir / "v1" / "x").write_text("someone else")
            return 1
        return real(bench_dir)

    monkeypatch.setattr(P, "_next_version", racing)
    assert publish(tmp_path, fitted).name == "v2"
    assert (tmp_path / B / "k8" / "v1" / "x").read_text() == "someone else"
    assert not [p for p in os.listdir(tmp_path / B / "k8") if p.startswith(".tmp")]
