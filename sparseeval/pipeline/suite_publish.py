"""Publishing the suite as one set of `pipeline.publish` (one gate rule, one ledger).

suite_status      nothing to do (the live suite is up to date, or this candidate was refused)
suite_candidate   fit and write the candidate (`suite_recipe`), and its gate against the live
                  suite (`suite_gate`)
suite_line        what the suite step came to, in one line
refresh_suite     the steps above and `publish.publish_now` in plain Python
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from sparseeval.consume.suite_set import SUITE, joint_item
from sparseeval.method import metrics
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.suite import AVERAGE
from sparseeval.pipeline import gate, publish
from sparseeval.pipeline.artifacts import read_once
from sparseeval.pipeline.records import Candidate, GateResult, MatrixInfo
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_recipe import (
    SuiteFit,
    aligned_matrices,
    fit_suite,
    matrices_key,
    matrix_info,
    members_about,
    suite_key,
    write_suite,
)


def suite_status(matrices: Mapping[str, MatrixInfo], settings: Settings) -> str | None:
    """Why nothing is to be fitted (the live suite is up to date, or this one was refused).

    Unchanged matrices are recognised without reading them (the live suite's `matrices_key`).
    """
    live = _live_suite(settings.published_dir)
    manifest = live.average.manifest if live is not None else {}
    same = (manifest.get("suite") or {}).get("matrices_key") == matrices_key(matrices, settings)
    if live is not None and (
        same or manifest.get("data_fingerprint") == suite_key(matrices, settings)
    ):
        return f"suite: v{live.version} is up to date (same models, answers and settings)"
    if why := publish.already_refused(settings.artifacts_dir, SUITE, suite_key(matrices, settings)):
        return f"suite: not published ({why})"
    return None


def suite_candidate(
    matrices: Mapping[str, MatrixInfo],
    settings: Settings,
    progress: Callable[[str], None] | None = None,
) -> tuple[Candidate, GateResult]:
    """Fit the suite and write it as a candidate; its gate against the live suite.

    The gate: the candidate's suite-average MAE on its test models must not exceed the
    live suite's on the same models.
    """
    key, aligned = suite_key(matrices, settings), aligned_matrices(matrices, settings)
    fit = fit_suite(aligned, settings, progress, data_fingerprint=key)
    folder = write_suite(settings.published_dir, fit, settings,
                         matrices_key=matrices_key(matrices, settings),
                         matrix_paths={b: m.path for b, m in matrices.items()},
                         about=members_about(matrices))  # fmt: skip
    return publish.candidate(folder, SUITE, key), suite_gate(
        _live_suite(settings.published_dir), aligned, fit, settings.gate
    )


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


def suite_line(outcome: publish.Outcome, gate: GateResult) -> str:
    """The suite step's line: what was published (and how it compares), or why not."""
    if outcome.version is None:
        return f"suite: {outcome.line}"
    on_hub = f" and {outcome.hub_commit[:12]} on the Hub" if outcome.hub_commit else ""
    than = f" ({gate.reason})" if gate.figures.get("live_mae") is not None else ""
    return (
        f"suite: published v{outcome.version}{on_hub}, {gate.figures['n_benchmarks']} benchmarks, "
        f"suite-average test MAE {gate.figures['candidate_mae']:.3f} points{than}"
    )


def refresh_suite(
    matrices: Mapping[str, MatrixInfo | str | Path],
    settings: Settings,
    progress: Callable[[str], None] | None = None,
    mirror: Callable[[int], str] | None = None,
) -> str:
    """Refit and publish the suite when its data changed and the candidate is no worse.

    matrices: {benchmark: `MatrixInfo` or matrix file}. The steps of the refresh flow in
    plain Python (`suite_status`, `suite_candidate`, `publish.publish_now`): nothing is
    fitted when the live suite was built from the same matrices and settings, or this
    candidate was refused before (the ledger); `mirror(version)`, when given, pushes the
    accepted candidate to the Hub before it becomes live. Returns one line.
    """
    infos = {b: m if isinstance(m, MatrixInfo) else matrix_info(b, m) for b, m in matrices.items()}
    if line := suite_status(infos, settings):
        return line
    cand, gate = suite_candidate(infos, settings, progress)
    push = (lambda c: mirror(c.version)) if mirror is not None else None
    return suite_line(publish.publish_now(settings, cand, gate, push), gate)


def _live_suite(published_dir):
    from sparseeval.consume.layout import AnchorSetError, latest_version
    from sparseeval.consume.suite_set import load_suite

    version = latest_version(published_dir, SUITE)
    if version is None:
        return None
    try:
        return read_once("suite", Path(published_dir) / SUITE, f"v{version}",
                         lambda: load_suite(published_dir))  # fmt: skip
    except AnchorSetError:
        return None  # unreadable or tampered: the candidate replaces it


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
