"""A pipeline fit saves every item's curve and its published set serves next items."""

from __future__ import annotations

from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.artifacts import save_matrix
from sparseeval.pipeline.publish import promote, write_candidate
from sparseeval.pipeline.recipe import curves_of, fit_step
from sparseeval.pipeline.records import MatrixInfo
from sparseeval.pipeline.settings import Settings
from tests.pipeline.test_flags_publish import SETTINGS


def test_a_refresh_fit_publishes_curves_and_the_set_corrects_with_them(tmp_path):
    settings = Settings.of(home=tmp_path, **SETTINGS)
    m = make_synthetic(200, 30, seed=4)
    fp = m.fingerprint()
    path = save_matrix(m, settings.paths.artifacts_dir / "matrix" / f"{fp}.npz", fingerprint=fp)
    target = {"kind": "items", "definition": "mean over the 30 items", "note": ""}
    info = MatrixInfo("arc", str(path), fp, *m.shape, 1, "", target=target)
    fit = fit_step(info, settings, lambda s: None)
    assert curves_of(fit).items == tuple(map(str, m.item_ids)) and curves_of(fit).item_mean
    promote(write_candidate(settings, fit))
    aset = load_anchor_set(settings.paths.published_dir, "arc")
    row = dict(zip(map(str, m.item_ids), (m.values[0] > 0).astype(int).tolist(), strict=True))
    answers = {i: row[i] for i in aset.items}
    extra = aset.next_items(answers, 30)
    assert len(extra) == 30 - len(aset.items)
    est = aset.predict(answers | {i: row[i] for i in extra})
    assert abs(est.value - m.y[0]) < 1e-9  # every item answered: the exact mean
