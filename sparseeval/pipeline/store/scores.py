"""Reported scores: the number a source itself reports per (model, benchmark), as a target.

Stored in `reported_scores` (an accuracy in [0, 1], its definition in words, a `ref_id`
into `source_refs`), with replaced values in `reported_score_history`; newer ingests
replace older values. A unit stages its scores as the frame `score_frame` (`SCORE_SCHEMA`,
listed in `Unit.frames`) in the same transaction as its per-item rows; `merge_scores`
validates them (sql/scores_validate.sql: a score that is not a number, below 0 or above
its scale, of an unknown benchmark, or conflicting within one source is quarantined with
its reason, never stored) and merges them (sql/scores_merge.sql).

Sources of reported scores: lm-eval results JSON (`lm_eval_run`) and `scores:FILE`
(`ScoresFile`, below).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from sparseeval.consume.answers.ids import MAX_MODEL_LEN, IdError, canonical_id
from sparseeval.consume.benchmarks import records
from sparseeval.pipeline.store.db import Store, execute, fetch
from sparseeval.pipeline.store.unit import conform

SCORE_FRAME = "score_frame"
SCORE_SCHEMA = {
    "model": pl.String,
    "benchmark": pl.String,
    "score": pl.String,
    "scale": pl.Float64,  # 100: the score is in percent; 1: a fraction
    "definition": pl.String,
    "line": pl.Int64,
    "ref_no": pl.Int32,
    "refusal": pl.String,  # the stager's own reason to quarantine the row (else null)
}


def v1_definitions() -> dict[str, str]:
    """{benchmark: the Open LLM Leaderboard v1's reported score in words} (DESIGN.md,
    "Reported score"), from the benchmarks' records."""
    return {b.name: b.v1.definition for b in records() if b.v1}


@dataclass
class ScoreCounts:
    """What a unit's reported scores did: read = stored + quarantined + duplicates."""

    n_read: int = 0
    n_new: int = 0
    n_updated: int = 0
    n_unchanged: int = 0
    n_quarantined: int = 0
    n_duplicates: int = 0
    n_contradicted: int = 0  # of the quarantined: contradicted by the model's own items

    def note(self) -> str:
        """`reported scores: read 6; new 5, ..., quarantined 1` ('' when none were read)."""
        if not self.n_read:
            return ""
        return (
            f"reported scores: read {self.n_read:,}; new {self.n_new:,}, updated"
            f" {self.n_updated:,}, unchanged {self.n_unchanged:,}, quarantined"
            f" {self.n_quarantined:,}{self._why()}, duplicates {self.n_duplicates:,}"
        )

    def _why(self) -> str:
        n = self.n_contradicted
        return f" ({n:,} contradicted by the model's own items)" if n else ""


def stage_scores(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame | None) -> None:
    """Register `frame` (the `SCORE_SCHEMA` layout; missing columns null) as `score_frame`,
    its model ids canonical by the rule result rows follow (`consume.answers.ids`): every score
    path (scores files, lm-eval and Hub results) goes through here."""
    con.register(SCORE_FRAME, canonical_models(conform(frame, SCORE_SCHEMA)))


def canonical_models(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with each model id canonical; a row whose id has no canonical form (a
    control or format character, too long) gets that reason as its `refusal`."""
    ids = frame["model"].drop_nulls().unique().to_list()
    canon, why = {}, {}
    for raw in ids:
        try:
            canon[raw] = canonical_id(raw, "model id", MAX_MODEL_LEN)
        except IdError as exc:
            why[raw] = str(exc)
    if all(canon.get(i) == i for i in ids):
        return frame
    model = pl.col("model")
    return frame.with_columns(
        model=model.replace_strict(canon, default=model, return_dtype=pl.String),
        refusal=pl.coalesce(
            "refusal", model.replace_strict(why, default=None, return_dtype=pl.String)
        ),
    )


def merge_scores(con: duckdb.DuckDBPyConnection, params: dict) -> ScoreCounts:
    """Validate, quarantine and merge the staged `score_frame` (inside the unit's transaction).

    Runs after the unit's per-item rows are merged, so its own items count in the check of
    scores that the model's items contradict (`contradiction`)."""
    from sparseeval.pipeline.store.contradiction import register_contradictions

    register_contradictions(con)
    execute(con, "scores_validate", {})
    ((n_read, n_bad, n_dup, n_matched, n_changed, n_contra),) = fetch(con, "scores_counts", {})
    if n_read:
        execute(con, "scores_merge", params)
    n_good = n_read - n_bad - n_dup
    return ScoreCounts(
        n_read, n_good - n_matched, n_changed, n_matched - n_changed, n_bad, n_dup, n_contra
    )


def reported_scores(store: Store, benchmark: str | None = None) -> pl.DataFrame:
    """The stored reported scores (model, benchmark, score in [0, 1], definition, source,
    source_ref, run_id) of one benchmark, or of all."""
    return store.query("reported_scores", {"benchmark": benchmark})


__all__ = [
    "SCORE_FRAME",
    "SCORE_SCHEMA",
    "ScoreCounts",
    "canonical_models",
    "merge_scores",
    "reported_scores",
    "stage_scores",
    "v1_definitions",
]
