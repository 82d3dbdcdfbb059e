"""Publishing decides: whether a benchmark's candidate may go live, and the suite's gate.

`assess` is the whole decision for one benchmark: it reads the matrix and the live set
once, scores the live set on the models that arrived since it was published
(`drift.drift_figures`), decides whether to publish (no set yet, or drift; never a set fit
on the data the live one saw, nor one the gate refused before: the ledger) and, if so,
compares the candidate with the live set on the same held-out models (`compare_candidate`,
with the rules of `gate`). `suite_gate` is the suite's: its average against the live
suite's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sparseeval.consume.sets.anchorset import AnchorSet
from sparseeval.consume.sets.suite_set import joint_item
from sparseeval.method import metrics
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.suite import AVERAGE
from sparseeval.pipeline import gate
from sparseeval.pipeline.artifacts import already_refused, matrix_of, unchanged_before
from sparseeval.pipeline.drift import (
    arrivals,
    drift_decision,
    drift_figures,
    drift_nights,
    model_rows,
    paired_window,
    record_drift,
    same_data,
)
from sparseeval.pipeline.publish import live_anchor_set
from sparseeval.pipeline.recipe import evaluation_of, fitted_of
from sparseeval.pipeline.records import (
    DriftDecision,
    FitInfo,
    GateResult,
    LiveSet,
    MatrixInfo,
    set_name,
)
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_recipe import SuiteFit


def compare_candidate(
    aset: AnchorSet | None,
    fit: FitInfo,
    matrix: ResponseMatrix,
    fresh: Sequence[str],
    mode: str = "paired",
) -> GateResult:
    """Live set vs candidate on models neither was trained on.

    Held-out models: the candidate's test split (with stable splits and the same seed the
    live set never trained on them either). The fresh ones among them (arrived since the
    live set was published) are compared too. mode "paired" (`gate.decide`): refused only
    when worse beyond noise on either group; "strict": any worse MAE on either refuses.
    """
    if aset is None:
        return GateResult(True, "no live set to compare with")
    test_ids = sorted(evaluation_of(fit)["test_ids"].tolist())
    fresh_ids = sorted(set(map(str, fresh)) & set(test_ids))
    figures: dict[str, Any] = {"n_heldout": len(test_ids), "n_fresh_heldout": len(fresh_ids)}
    candidate = fitted_of(fit)
    groups = []
    for name, ids in (("heldout", test_ids), ("fresh_heldout", fresh_ids)):
        if ids:
            rows = model_rows(matrix, ids)
            live_pred = aset.predict_matrix(matrix.values[rows], matrix.item_ids)
            cand_pred = candidate.predict(matrix.values[rows])
            groups.append(gate.compare_group(name, live_pred, cand_pred, matrix.y[rows]))
    for g in groups:
        figures[f"live_mae_{g.name}"] = g.live_mae
        figures[f"candidate_mae_{g.name}"] = g.candidate_mae
        figures[f"noise_{g.name}"] = g.noise
    if mode == "paired":
        accept, why = gate.decide(groups)
        return GateResult(accept, why.replace("_", " "), figures)
    accept, reasons = True, []
    for g in groups:
        ok, why = gate.gate_decision(g.live_mae, g.candidate_mae)
        accept &= ok
        reasons.append(f"{g.name.replace('_', ' ')} ({g.n} models): {why}")
    return GateResult(accept, "; ".join(reasons) or "nothing to compare on", figures)


def assess(
    settings: Settings,
    matrix_info: MatrixInfo,
    fit: FitInfo,
    live: LiveSet | None,
    fresh: Sequence[str],
    requested: str | None = None,
    budget: int | None = None,
) -> tuple[DriftDecision, GateResult | None]:
    """Drift decision and, when a candidate may be published, its gate (one read of each file).

    requested: a reason to publish regardless of drift (a retrain by hand); the gate and
    the same-data rule still apply: a candidate fit on the live set's data, or one the
    gate refused before (the set's ledger), or one that repeated the live set (its ledger
    of unchanged candidates), is not published, and the decision says why.
    budget: one of several published budgets.
    """
    bench, name = matrix_info.benchmark, set_name(matrix_info.benchmark, budget)
    matrix = matrix_of(matrix_info)
    aset = (
        live_anchor_set(settings.paths.published_dir, bench, live.version, budget) if live else None
    )
    figures = {}
    if aset is not None and fresh:
        figures = drift_figures(aset, matrix, fresh[-settings.drift.drift_window :])
        figures["n_new_since"] = len(set(map(str, fresh)) & set(map(str, matrix.model_ids)))
        order = arrivals(settings.paths.store_path, bench)
        figures |= paired_window(aset, fit, matrix, order, settings.drift.drift_paired_models)
    decision = drift_decision(bench, live, figures, settings)
    if record_drift(settings.paths.artifacts_dir, name, live, figures, decision.drift):
        figures["drift_nights"] = drift_nights(settings.paths.artifacts_dir, name, live.version)
    if decision.drift:
        figures["drift_reason"] = decision.reason  # kept when a refusal becomes the reason
    if (changed := new_budget(live, fit)) and not requested:
        requested = changed
    if requested and live is not None:
        decision = DriftDecision(bench, decision.drift, True, requested, figures)
    if not decision.publish:
        return decision, None
    if changed:  # another number of anchors: the operator's choice, not the live set's rival
        return decision, GateResult(True, f"{changed}: not compared with the live set", figures)
    if why := same_data(live, fit):
        return DriftDecision(bench, decision.drift, False, why, figures), None
    if why := already_refused(settings.paths.artifacts_dir, name, fit.key):
        if nights := figures.get("drift_nights"):
            why += f" (refused {nights} nights in a row)"
        return DriftDecision(bench, decision.drift, False, why, figures), None
    if why := unchanged_before(settings.paths.artifacts_dir, name, fit.key, live and live.version):
        return DriftDecision(bench, decision.drift, False, why, figures), None
    return decision, compare_candidate(aset, fit, matrix, fresh, settings.drift.gate)


def new_budget(live: LiveSet | None, fit: FitInfo) -> str | None:
    """`a new budget: 33 anchors (live v2 reads 99)` when the fit reads another number of
    anchors than the live set (the budget or `max_anchor_share` changed), else None."""
    if live is None or live.n_anchors is None or live.n_anchors == fit.n_anchors:
        return None
    return f"a new budget: {fit.n_anchors} anchors (live v{live.version} reads {live.n_anchors})"


def suite_gate(
    live, aligned: Mapping[str, ResponseMatrix], fit: SuiteFit, mode: str = "paired"
) -> GateResult:
    """The candidate's suite-average test MAE against the live suite's on the same models.

    mode "paired" (`gate.decide`): refused only when worse beyond noise; "strict": when worse.
    """
    truth = fit.test_true[AVERAGE]
    cand_mae = metrics.mae_points(fit.test_pred[AVERAGE], truth)
    live_pred = _live_average_pred(live, aligned, fit) if live is not None else None
    live_mae = None if live_pred is None else metrics.mae_points(live_pred, truth)
    figures = {"candidate_mae": cand_mae, "live_mae": live_mae,
               "n_benchmarks": len(fit.suite.benchmarks_)}  # fmt: skip
    if live_mae is None:
        return GateResult(True, "no live suite to compare with", figures)
    if mode == "paired":
        g = gate.compare_group("suite average", live_pred, fit.test_pred[AVERAGE], truth)
        figures["noise"] = g.noise
        accept = gate.decide([g])[0]
        why = (f"candidate suite-average MAE {cand_mae:.3f} vs live v{live.version}"
               f" {live_mae:.3f} points on {g.n} test models (difference {g.difference:+.3f}"
               f" ± {g.noise:.3f}: {g.verdict})")  # fmt: skip
        return GateResult(accept, why if accept else "refused: " + why, figures)
    if cand_mae > live_mae:
        why = (f"refused: candidate suite-average MAE {cand_mae:.3f} > live v{live.version}"
               f" {live_mae:.3f} points on {len(truth)} test models")  # fmt: skip
        return GateResult(False, why, figures)
    return GateResult(True, f"live v{live.version}: {live_mae:.3f}", figures)


def _live_average_pred(live, aligned: Mapping[str, ResponseMatrix], fit: SuiteFit):
    """The live suite's average predictions on the candidate's test models (in the order of
    `fit.test_ids`), or None if it cannot read them.

    `aligned`: the matrices over the models every benchmark has (`common_models`).
    """
    if set(live.benchmarks) != set(fit.suite.benchmarks_):
        return None
    test_ids = set(fit.test_ids)
    first = next(iter(aligned.values()))
    rows = np.array([i for i, m in enumerate(first.model_ids) if m in test_ids], dtype=np.int64)
    values = np.hstack([aligned[b].values[rows] for b in live.benchmarks])
    ids = [joint_item(b, i) for b in live.benchmarks for i in aligned[b].item_ids]
    try:
        pred = live.average.predict_matrix(values, ids)
    except Exception:
        return None  # the live anchors are not all in today's matrices
    return pred


__all__ = [
    "assess",
    "compare_candidate",
    "new_budget",
    "suite_gate",
]
