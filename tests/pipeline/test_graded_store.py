"""Graded items in the store, the matrix and the method: a score in [0, 1] per result is kept
(it used to be quarantined as `not a correctness value`), read as 2*score - 1."""

from __future__ import annotations

import numpy as np
import pytest

from sparseeval.consume.scoring.flags import person_fit
from sparseeval.method.estimator import SparseEval
from sparseeval.method.matrix import MatrixError, ResponseMatrix, to_signs
from sparseeval.pipeline.store import LongTable, Store, build_matrix, ingest


def long_csv(path, rows: list[tuple[str, str, str, str]]):
    path.write_text("model,benchmark,item,correct\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def graded_rows(n_models: int = 12, n_items: int = 4) -> list[tuple[str, str, str, str]]:
    """`arc` rows whose scores rise with the model; every item has one graded score."""
    rows = []
    for m in range(n_models):
        for i in range(n_items):
            score = min(1.0, round((m + 1) / (n_models + 1) + 0.05 * i, 2))
            rows.append((f"org/m{m}", "arc", f"q{i}", f"{score:g}"))
    return rows


def test_the_store_keeps_a_graded_score_and_thresholds_correct(store: Store, tmp_path):
    answers = [("0", "0.43"), ("1", "1"), ("2", "0.5"), ("3", "0")]
    path = long_csv(tmp_path / "g.csv", [("org/a", "arc", i, v) for i, v in answers])
    (r,) = ingest(store, LongTable(path))
    assert r.status == "ok" and r.n_new == 4 and r.n_quarantined == 0
    got = store.con.execute("SELECT item, correct, score FROM results_view ORDER BY item")
    assert got.fetchall() == [("0", False, 0.43), ("1", True, None), ("2", True, 0.5),
                              ("3", False, None)]  # fmt: skip
    answers = [("0", "1.5"), ("1", "-0.2"), ("2", "nan"), *((str(i), "0.9") for i in range(3, 7))]
    bad = long_csv(tmp_path / "b.csv", [("org/b", "arc", i, v) for i, v in answers])
    (r,) = ingest(store, LongTable(bad), keep_going=True)
    assert r.n_new == 4
    reasons = sorted(store.quarantine(r.run_id)["reason"].to_list())
    assert reasons == ["not a correctness value: -0.2", "not a correctness value: 1.5",
                       "not a correctness value: nan"]  # fmt: skip


def test_a_changed_graded_score_is_an_update_and_conflicts_are_quarantined(store, tmp_path):
    ingest(store, LongTable(long_csv(tmp_path / "a.csv", [("org/a", "arc", "0", "0.6")])))
    (r,) = ingest(store, LongTable(long_csv(tmp_path / "b.csv", [("org/a", "arc", "0", "0.7")])))
    assert r.n_updated == 1  # still right at 0.5, yet another score: a new value
    hist = store.history("org/a", "arc", "0")
    assert hist.select("score", "current").rows() == [(0.7, True), (0.6, False)]
    twice = [("org/b", "arc", "0", "0.3"), ("org/b", "arc", "0", "0.4"),
             ("org/c", "arc", "0", "0.3"), ("org/c", "arc", "0", "0.3")]  # fmt: skip
    (r,) = ingest(store, LongTable(long_csv(tmp_path / "c.csv", twice)))
    assert r.n_new == 1 and r.n_duplicates >= 1
    raw = sorted(store.quarantine(r.run_id)["raw"].to_list())
    assert raw == ["org/b,arc,0,0.3", "org/b,arc,0,0.4"]


def test_a_store_written_before_graded_scores_opens_and_builds(tmp_path):
    path = tmp_path / "old.duckdb"
    rows = [(f"org/m{m}", "arc", f"q{i}", str((m + i) % 2)) for m in range(12) for i in range(3)]
    with Store.open(path) as store:
        ingest(store, LongTable(long_csv(tmp_path / "a.csv", rows)))
        # the store as the release before wrote it: no score columns, its schema's fingerprint
        store.con.execute("DROP VIEW results_view")
        store.con.execute("ALTER TABLE results DROP COLUMN score")
        store.con.execute("ALTER TABLE result_history DROP COLUMN score")
        store.con.execute("UPDATE meta SET value = 'older' WHERE key = 'schema_fingerprint'")
    with Store.open(path, read_only=True) as old:  # read-only: not migrated, still builds
        matrix, _ = build_matrix(old, "arc")
        assert matrix.scale == "binary" and matrix.values.dtype == np.int8
    with Store.open(path) as store:  # opened for writing: migrated
        nulls = store.con.sql("SELECT count(*) FROM results WHERE score IS NULL").fetchall()
        assert nulls == [(36,)]
        ingest(store, LongTable(long_csv(tmp_path / "g.csv", [("org/m0", "arc", "q0", "0.25")])))
        matrix, _ = build_matrix(store, "arc")
    assert matrix.scale == "graded" and matrix.values.dtype == np.float32
    assert matrix.values[0, 0] == pytest.approx(-0.5)
    assert set(np.unique(matrix.values[1:])) == {-1, 1}


def test_the_matrix_carries_the_scale_and_keeps_half_credit_apart_from_missing(store, tmp_path):
    rows = [*graded_rows(), ("org/m0", "arc", "q4", "0.5")]  # one model has q4: set aside
    ingest(store, LongTable(long_csv(tmp_path / "g.csv", rows)))
    matrix, summary = build_matrix(store, "arc", max_missing_model_frac=0.3)
    assert matrix.scale == "graded" and matrix.shape == (12, 4) and summary.cells_missing == 11
    expected = np.array([[2 * float(r[3]) - 1 for r in graded_rows() if r[0] == m]
                         for m in matrix.model_ids])  # fmt: skip
    assert np.allclose(matrix.values, expected, atol=1e-6)
    assert np.allclose(matrix.y, (expected.mean(1) + 1) / 2, atol=1e-6)  # the mean score
    again = ResponseMatrix.from_array((expected + 1) / 2, matrix.model_ids, matrix.item_ids,
                                      scale="graded")  # fmt: skip
    assert again.fingerprint() == matrix.fingerprint()
    assert ResponseMatrix.from_array(expected > 0).fingerprint() != matrix.fingerprint()


def test_to_signs_reads_graded_values_and_refuses_a_score_out_of_range():
    half = np.array([[0.0, 1.0], [-1.0, 0.0]])  # scores 0.5, 1, 0, 0.5: half credit only
    with pytest.raises(MatrixError, match="not a mix of 0 and -1"):
        to_signs(half)  # as a binary answer it is a mix: `scale` says what it is
    assert to_signs(half, scale="graded").dtype == np.float32
    assert np.allclose(to_signs(np.array([[0.2, -1.0]])), [[0.2, -1.0]])
    assert to_signs(np.array([[0.0, 1.0]])).dtype == np.int8  # 0/1: binary as always
    with pytest.raises(MatrixError, match=r"must be 0/1, boolean or -1/\+1; found 0\.3"):
        to_signs(np.array([[0.3, 1.0]]), scale="binary")
    with pytest.raises(MatrixError, match=r"graded values must lie in \[0, 1\]; found -0\.5"):
        ResponseMatrix.from_array(np.full((10, 2), -0.5), scale="graded")


def test_person_fit_reads_a_graded_answer_as_its_share_of_right():
    """l_z is affine in each answer's score (its expectation and variance do not depend on the
    answers), so a graded answer lands where its share of right puts it between wrong and right."""
    a, b = np.array([0.0, 1.0, -1.0]), np.array([1.0, 2.0, 0.5])

    def lz(s1: float, s2: float) -> float:  # scores of the first two anchors, third unanswered
        return float(person_fit([[2 * s1 - 1, 2 * s2 - 1, np.nan]], [0.5], a, b)[0])

    base = lz(0, 0)
    expected = base + 0.6 * (lz(1, 0) - base) + 0.3 * (lz(0, 1) - base)
    assert lz(0.6, 0.3) == pytest.approx(expected)
    assert lz(0.6, 0.3) != pytest.approx(lz(1, 0))  # not thresholded at 0.5


def test_sparseeval_fits_graded_values_and_says_the_scale(tmp_path):
    rng = np.random.default_rng(0)
    ability = rng.normal(size=(160, 1))
    score = 1 / (1 + np.exp(-(ability - rng.normal(size=(1, 30)))))
    scores = np.clip(score + rng.normal(scale=0.1, size=score.shape), 0, 1)
    X = 2 * scores - 1
    est = SparseEval(n_anchors=5, refine_steps=1, epochs=30, ensemble=1, predictor="ridge",
                     progress=lambda s: None)  # fmt: skip
    est.fit(X[:120], scores[:120].mean(1), X_valid=X[120:], y_valid=scores[120:].mean(1))
    assert est.item_scale_ == "graded"
    assert np.abs(est.predict(X[120:]) - scores[120:].mean(1)).mean() < 0.05
    with pytest.raises(MatrixError, match="must be 0/1, boolean or -1/"):
        SparseEval(n_anchors=5, item_scale="binary").fit(X[:120], scores[:120].mean(1))
