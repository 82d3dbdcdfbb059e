"""Drift of the live anchor set on newly arrived models: its figures and what they call for.

A recipe: it computes (the live set's error on fresh models, whether that is drift, the
history of checks); publishing decides (`gate.assess` reads these and gates a candidate).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.sets.anchorset import AnchorSet, load_anchor_set
from sparseeval.consume.sets.fields import drift_row_problem
from sparseeval.method import metrics
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.pipeline import artifacts, gate
from sparseeval.pipeline.artifacts import artifact_path, load_matrix
from sparseeval.pipeline.records import DriftDecision, FitInfo, LiveSet
from sparseeval.pipeline.settings import Settings


def fresh_models(store_path: str | Path, benchmark: str, live: LiveSet) -> list[str]:
    """Models whose first result in `benchmark` arrived after the live set's data was read.

    Exact when the set was published by this pipeline (it records the last ingest run its
    matrix saw); otherwise models first seen after the manifest's `created` time.
    """
    from sparseeval.pipeline.store import Store

    with Store.open(store_path, read_only=True) as store:
        if live.last_run is not None:
            return store.models_first_seen_after(run_id=int(live.last_run), benchmark=benchmark)
        after = datetime.fromisoformat(str(live.created))
        if after.tzinfo is None:
            after = after.replace(tzinfo=UTC)
        return store.models_first_seen_after(after=after, benchmark=benchmark)


def model_rows(matrix: ResponseMatrix, model_ids: Sequence[str] | None) -> np.ndarray:
    """Row indices of `model_ids` in `matrix` (all rows when None)."""
    if model_ids is None:
        return np.arange(matrix.shape[0])
    wanted = set(map(str, model_ids))
    return np.flatnonzero([str(m) in wanted for m in matrix.model_ids])


def score_set(aset: AnchorSet, matrix: ResponseMatrix, model_ids=None) -> dict[str, Any]:
    """Metrics of a published anchor set on some models of `matrix` (all when None)."""
    rows = model_rows(matrix, model_ids)
    if len(rows) == 0:
        return {"n": 0}
    pred = aset.predict_matrix(matrix.values[rows], matrix.item_ids)
    true = matrix.y[rows]
    out: dict[str, Any] = {"n": len(rows), "mae": metrics.mae_points(pred, true)}
    return out | (metrics.evaluate(pred, true) if len(rows) >= 3 else {})


def evaluate_published(
    published_dir, benchmark: str, matrix_path, model_ids=None, version="latest"
) -> dict[str, Any]:
    """Score a published set on models of a matrix file (the 'evaluate' flow)."""
    aset = load_anchor_set(published_dir, benchmark, version)
    return score_set(aset, load_matrix(matrix_path), model_ids)


def drift_figures(aset: AnchorSet, matrix: ResponseMatrix, fresh: Sequence[str]) -> dict:
    """The live set's error on fresh models, and how many fall outside the known range.

    The known range is that of the true accuracies of models that were there before
    the set was published (the models it could have been trained on).
    """
    fresh_set = set(map(str, fresh))
    is_fresh = np.array([str(m) in fresh_set for m in matrix.model_ids], dtype=bool)
    out: dict[str, Any] = {"n_fresh": int(is_fresh.sum())}
    if not is_fresh.any():
        return out
    scores = score_set(aset, matrix, matrix.model_ids[is_fresh])
    out |= {f"fresh_{k}": v for k, v in scores.items() if k != "n"}
    y = matrix.y
    if (~is_fresh).any():
        lo, hi = float(y[~is_fresh].min()), float(y[~is_fresh].max())
        out["out_of_range_frac"] = float(np.mean((y[is_fresh] < lo) | (y[is_fresh] > hi)))
    return out


def arrivals(store_path: str | Path, benchmark: str) -> list[str]:
    """Every model of `benchmark`, in the order its first result arrived (oldest first)."""
    from sparseeval.pipeline.store import Store

    with Store.open(store_path, read_only=True) as store:
        return store.models_first_seen_after(run_id=-1, benchmark=benchmark)


def paired_window(
    aset: AnchorSet, fit: FitInfo, matrix: ResponseMatrix, order: Sequence[str], n: int
) -> dict[str, Any]:
    """Live set vs the night's candidate, paired, on the newest `n` arrivals among the
    candidate's held-out test models (with stable splits the live set never trained on them
    either): {} when fewer than `n` are held out or `n` is 0."""
    from sparseeval.pipeline.recipe import evaluation_of, fitted_of

    test = set(map(str, evaluation_of(fit)["test_ids"].tolist()))
    newest = [m for m in reversed(order) if m in test][:n]
    if not n or len(newest) < n:
        return {}
    rows = model_rows(matrix, newest)
    live = aset.predict_matrix(matrix.values[rows], matrix.item_ids)
    g = gate.compare_group("window", live, fitted_of(fit).predict(matrix.values[rows]),
                           matrix.y[rows])  # fmt: skip
    back = len(order) - min(order.index(m) for m in newest)
    return {"paired_n": g.n, "paired_live_mae": g.live_mae, "paired_candidate_mae":
            g.candidate_mae, "paired_difference": g.difference, "paired_noise": g.noise,
            "paired_arrivals": back}  # fmt: skip


def window_line(figures: dict[str, Any]) -> str:
    """The window drift was judged on, in words ("" when there was none)."""
    parts = []
    if n := figures.get("n_fresh"):
        since = figures.get("n_new_since", n)
        parts.append(f"newest {n} of {since} new models" if since > n else f"{n} new models")
    if k := figures.get("paired_n"):
        parts.append(f"paired test on the newest {k} held-out models (among the newest"
                     f" {figures['paired_arrivals']} arrivals)")  # fmt: skip
    return "window: " + "; ".join(parts) if parts else ""


def _paired_reason(figures: dict[str, Any]) -> str | None:
    """Why the paired test calls it drift: the candidate beats the live set beyond noise on
    the newest held-out models (else None)."""
    d, noise = figures.get("paired_difference"), figures.get("paired_noise", 0.0)
    if d is None or d >= -noise:
        return None
    return (f"live MAE {figures['paired_live_mae']:.2f} vs candidate"
            f" {figures['paired_candidate_mae']:.2f} on the newest {figures['paired_n']} held-out"
            f" models (difference {d:+.2f} beyond noise {noise:.2f})")  # fmt: skip


def drift_decision(
    benchmark: str, live: LiveSet | None, figures: dict[str, Any], settings: Settings
) -> DriftDecision:
    """Pure: should a new version be published? (No set yet, or drift on fresh models.)

    Judged on a window of the newest arrivals (`window_line`). Drift when, on at least
    `min_new_models` fresh models (the newest `drift_window`), the published set's MAE
    exceeds `drift_mae_points`, or `drift_mae_ratio` times its published test MAE, or more
    than `drift_out_of_range_frac` of them lie outside the known accuracy range; or when the
    night's candidate beats it beyond noise on the newest `drift_paired_models` held-out
    models (`paired_window`). A threshold <= 0 turns its criterion off.
    """
    s = settings.drift
    if live is None:
        return DriftDecision(benchmark, False, True, "no published anchor set yet", figures)
    n = int(figures.get("n_fresh", 0))
    if n == 0:
        why = "no new models in its matrix since publishing"
        return DriftDecision(benchmark, False, False, why, figures)
    if n < s.min_new_models:
        why = f"only {n} new model(s) since publishing (< min_new_models {s.min_new_models})"
        return DriftDecision(benchmark, False, False, why, figures)
    mae = float(figures.get("fresh_mae", 0.0))
    oor = float(figures.get("out_of_range_frac", 0.0))
    base = live.test_mae
    reasons = []
    if s.drift_mae_points > 0 and mae > s.drift_mae_points:
        reasons.append(f"MAE {mae:.2f} > {s.drift_mae_points:g} points on {n} new models")
    if s.drift_mae_ratio > 0 and base and mae > s.drift_mae_ratio * base:
        reasons.append(
            f"MAE {mae:.2f} > {s.drift_mae_ratio:g} x published test MAE {base:.2f}"
            f" on {n} new models"
        )
    if s.drift_out_of_range_frac > 0 and oor > s.drift_out_of_range_frac:
        reasons.append(f"{oor:.0%} of {n} new models outside the training range")
    if paired := _paired_reason(figures):
        reasons.append(paired)
    window = f" ({w})" if (w := window_line(figures)) else ""
    if reasons:
        return DriftDecision(benchmark, True, True, "drift: " + "; ".join(reasons) + window,
                             figures)  # fmt: skip
    why = f"no drift: MAE {mae:.2f} points on {n} new models, {oor:.0%} outside range{window}"
    return DriftDecision(benchmark, False, False, why, figures)


def same_data(live: LiveSet | None, fit: FitInfo) -> str | None:
    """Why not to publish `fit`: the live set was fit on this very data (else None)."""
    if live is not None and live.data_fingerprint == fit.matrix_fingerprint:
        return f"live v{live.version} was fit on this data"
    return None


def _history_path(artifacts_dir: str | Path, name: str) -> Path:
    return artifact_path(artifacts_dir, "published", f"{name}-drift.jsonl")


def record_drift(
    artifacts_dir: str | Path, name: str, live: LiveSet | None, figures: dict, drift: bool
) -> bool:
    """Append one drift check (live version, MAE on fresh models, drifted?) to the history.

    name: the set's name (`records.set_name`: the benchmark, or `arc-k50` for one budget).
    Whether a row was written (not without a live set and scored fresh models).
    """
    if not live or not figures.get("n_fresh") or figures.get("fresh_mae") is None:
        return False
    path = _history_path(artifacts_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "version": live.version,
        "mae": float(figures["fresh_mae"]),
        "n_models": int(figures["n_fresh"]),
        "drift": bool(drift),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
    return True


def drift_history(artifacts_dir: str | Path, name: str) -> list[dict[str, Any]]:
    """Every drift check recorded for a set (see `record_drift`), oldest first."""
    path = _history_path(artifacts_dir, name)
    if not path.is_file():
        return []
    rows = []
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            row = "damaged"
        if row is not None and drift_row_problem(row):
            artifacts.missed(path, artifacts.CacheMiss(f"line {n} is not a drift check; skipped"))
        elif row is not None:
            rows.append(row)
    return rows


def drift_nights(artifacts_dir: str | Path, name: str, version: int) -> int:
    """How many checks in a row, up to the last, found live `version` in drift.

    Rows of other versions, and older rows without a `drift` field, end the run.
    """
    n = 0
    for row in reversed(drift_history(artifacts_dir, name)):
        if row.get("version") != version or not row.get("drift", False):
            break
        n += 1
    return n


__all__ = [
    "arrivals",
    "drift_decision",
    "drift_figures",
    "drift_history",
    "drift_nights",
    "evaluate_published",
    "fresh_models",
    "model_rows",
    "paired_window",
    "record_drift",
    "same_data",
    "score_set",
    "window_line",
]
