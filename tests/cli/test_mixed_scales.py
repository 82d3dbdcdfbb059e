"""Scores mixing fractions and percents (issue 46): never stored or read 100x off. The
`scores:` ingest quarantines the fraction-looking rows with a reason, `fit --targets` and
`check --scores` refuse the file in one line; a weak model's real sub-1% scores still pass.
"""

from __future__ import annotations

import pytest

from sparseeval.cli import main
from sparseeval.consume.scales import fractions_among_percents
from sparseeval.pipeline.store import Store, ingest
from sparseeval.pipeline.store.score_files import ScoresFile
from tests.helpers import published, tiny_fit, wide_csv


def _mixed_rows(n: int = 24, fractions: int = 16) -> list[tuple[str, float]]:
    """`n` scores of models m000.., the first `fractions` written as fractions."""
    return [(f"m{i:03d}", (30 + 2.5 * i) / (100 if i < fractions else 1)) for i in range(n)]


def test_low_percents_beside_their_neighbours_are_not_fractions():
    gsm8k_like = [0.0, 0.08, 0.45, 0.76, 1.06, 1.9, 3.2, 12.0, 55.0]  # a weak model's 0.76%
    assert fractions_among_percents(gsm8k_like) == []
    assert fractions_among_percents([0.3, 0.6, 0.9]) == []  # all fractions: one scale
    assert fractions_among_percents([0.2, 0.4, 0.6, 12.0]) == []  # too few percents to tell
    assert fractions_among_percents([62.0, 0.62, 48.0, 51.0, 70.0, 33.0]) == [1]


def test_a_scores_file_mixing_scales_quarantines_the_fractions(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("model,benchmark,score\n"
                    + "".join(f"{m},arc,{s}\n" for m, s in _mixed_rows()))  # fmt: skip
    with Store.open(tmp_path / "s.duckdb") as store:
        (r,) = ingest(store, ScoresFile(path))
        stored = store.con.execute("SELECT min(score), count(*) FROM reported_scores").fetchone()
        reasons = store.con.execute("SELECT DISTINCT reason FROM quarantine").fetchall()
    assert (r.scores.n_new, r.scores.n_quarantined) == (8, 16)
    assert stored == (pytest.approx(0.70), 8)  # the percents, as fractions; none 100x off
    assert reasons and all("is at most 1 among percents" in x for (x,) in reasons)


def test_fit_targets_and_check_scores_refuse_a_mixed_file(tmp_path, capsys):
    data, _ = wide_csv(tmp_path / "arc.csv", 24, 6)
    scores = tmp_path / "scores.csv"
    scores.write_text("model,score\n" + "".join(f"{m},{s}\n" for m, s in _mixed_rows()))
    rc = main(["fit", str(data), "--targets", str(scores), "--anchors", "3", "--out",
               str(tmp_path / "fit")])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "16 of 24 scores are at most 1 among percents" in err, err
    assert not (tmp_path / "fit").exists()
    root = published(tmp_path / "pub", "arc", tiny_fit())
    rc = main(["check", "--anchor-set", str(root), "--benchmark", "arc", "--scores",
               str(scores), "--responses", str(data)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "fractions mixed with percents?" in err and len(err.splitlines()) == 1
