"""Real data in the store: `target = auto` leaves out the one model without a reported score,
and a scores file's ingest line counts scores only."""

from __future__ import annotations

import pytest

from sparseeval.pipeline.store import LongTable, ScoresFile, Store, build_matrix, ingest


def _store(store, tmp_path, n_models: int, unscored: int) -> None:
    """arc: 3 items, model i right on items below i mod 4; the last `unscored` without score."""
    rows = ["model,benchmark,item,correct"] + [
        f"m{i:02d},arc,{j},{int(j < i % 4)}" for i in range(n_models) for j in range(3)
    ]
    (tmp_path / "long.csv").write_text("\n".join(rows) + "\n")
    lines = ["model,benchmark,score,definition"] + [
        f"m{i:02d},arc,{i},leaderboard arc acc_norm" for i in range(n_models - unscored)
    ]
    (tmp_path / "scores.csv").write_text("\n".join(lines) + "\n")
    ingest(store, LongTable(tmp_path / "long.csv"))
    ingest(store, ScoresFile(tmp_path / "scores.csv"))


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


def test_auto_leaves_out_the_few_models_without_a_score(store, tmp_path):
    _store(store, tmp_path, n_models=40, unscored=1)
    m, s = build_matrix(store, "arc", target="auto")
    assert s.target == "reported" and m.shape == (39, 3) and "m39" not in m.model_ids
    assert m.targets.tolist() == pytest.approx([i / 100 for i in range(39)])
    assert s.target_note == "auto: models without a reported score: 1 of 40 left out (e.g. m39)"
    assert s.models_dropped == 0  # the missing-results policy dropped none
    assert "left out" in s.line()


def test_auto_falls_back_to_items_when_many_lack_a_score(store, tmp_path):
    _store(store, tmp_path, n_models=40, unscored=3)  # 7.5% > AUTO_MAX_UNSCORED
    m, s = build_matrix(store, "arc", target="auto")
    assert s.target == "items" and m.shape == (40, 3)
    assert s.target_note == (
        "auto: models without a reported score: 3 of 40, so the target is the items' mean"
    )


def test_auto_without_any_score_says_so(store, tmp_path):
    _store(store, tmp_path, n_models=20, unscored=20)
    _, s = build_matrix(store, "arc", target="auto")
    assert s.target == "items"
    assert s.target_note == "auto: no model has a reported score, so the target is the items' mean"


def test_a_scores_file_says_what_it_read_in_scores_alone(store, tmp_path):
    _store(store, tmp_path, n_models=4, unscored=0)
    (tmp_path / "more.csv").write_text("model,benchmark,score\nm00,arc,50\nm01,arc,60\n")
    (r,) = ingest(store, ScoresFile(tmp_path / "more.csv"))
    assert r.line().startswith(f"{tmp_path / 'more.csv'}: reported scores: read 2; new 0,")
    assert "read 0" not in r.line()
