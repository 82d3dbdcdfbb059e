"""The suite as one set of the publish unit (`pipeline.publish`): one gate rule, one ledger.

write_suite      the fitted suite (`suite_recipe.fit_suite`) as `published/suite/vN/`
                 (`sparseeval.consume.sets.suite_set` reads it), with each member's item curves,
                 what each member estimates (`members_about`) and its models (models.json)
suite_status     why nothing is to be fitted tonight (up to date, or refused before)
suite_candidate  fit, write and gate the suite (`assess.suite_gate`): the unit's write step
suite_line       what publishing it came to, in one line
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sparseeval.consume.answers.responses import BINARY
from sparseeval.consume.scoring.flags import KEY as POOL_KEY
from sparseeval.consume.scoring.next_items import KEY as CURVES_KEY
from sparseeval.consume.sets.models import MODELS_FILE, models_text
from sparseeval.consume.sets.suite_set import SUITE, joint_item
from sparseeval.method import metrics
from sparseeval.method.predictors import BlendPredictor
from sparseeval.method.suite import AVERAGE
from sparseeval.pipeline import artifacts, publish, suite_recipe, versions
from sparseeval.pipeline.artifacts import read_once
from sparseeval.pipeline.assess import suite_gate
from sparseeval.pipeline.identity import anchor_sources
from sparseeval.pipeline.manifest import anchor_means, derived_sources, interval
from sparseeval.pipeline.records import Candidate, GateResult, MatrixInfo
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.suite_recipe import SuiteFit, aligned_matrices, matrices_key, suite_key


def write_suite(
    root: str | Path,
    fit: SuiteFit,
    settings: Settings,
    signing_key=None,
    matrices_key: str = "",
    matrix_paths: Mapping[str, str] | None = None,
    about: Mapping[str, Mapping[str, Any]] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> Path:
    """Write the fitted suite as a new, unpromoted version of `{root}/suite` (`set_latest` it;
    the suite has no budget of its own: one set, `{root}/suite/v{N}`).

    matrices_key: `matrices_key` of the matrices it was fit on (lets a later run see it is
    up to date without reading them); matrix_paths: {benchmark: its matrix file}, whose
    items' identity the members' `item_sources` carry (`pipeline.identity`); about:
    {benchmark: {"target", "provenance"}} (`members_about`): what each member estimates and
    where its data came from, recorded per member and for the suite average; provenance:
    the suite's own (`Store.provenance` of every member: a source holding several of them
    counted once; default: the members' added up).
    """
    about = dict(about or {})
    suite = fit.suite
    items = [joint_item(b, i) for b in suite.benchmarks_ for i in suite.estimators_[b].anchor_ids_]
    level = {"interval_level": settings.drift.interval_level}

    def reader(folder: str, predictor, b: str, own: bool) -> dict:
        pred, name = (fit.own_test_pred if own else fit.test_pred)[b], f"{b}/{kind(own)}"
        inputs = {"test_pred": pred, "test_true": fit.test_true[b]} | fit.test_flags.get(name, {})
        pool, prefix = fit.pool_checks.get(name), "own_" if own else ""
        calib = SimpleNamespace(
            calibration_residuals_=getattr(suite, f"{prefix}calibration_residuals_")[b],
            calibration_predictions_=getattr(suite, f"{prefix}calibration_predictions_")[b],
            calibration_source_=suite.calibration_source_,
        )
        k = len(suite.estimators_[b].anchors_) if own else len(items)
        out = {"folder": folder, "interval": interval(calib, level, inputs, pool),
               "anchor_means": anchor_means(predictor, k), POOL_KEY: pool}  # fmt: skip
        if own:
            ids = [str(i) for i in suite.estimators_[b].anchor_ids_]
            path = (matrix_paths or {}).get(b)
            out["item_sources"] = (path and anchor_sources(path, ids, b)) or derived_sources(ids, b)
        return out

    members, described, curves = {}, {}, member_curves(fit, matrix_paths, about)
    for b in suite.benchmarks_:
        joint, own = f"members/{b}/joint", f"members/{b}/own"
        members[joint] = suite.readers_[b]
        members[own] = suite.estimators_[b].predictor_
        described[b] = {
            "items": [str(i) for i in suite.estimators_[b].anchor_ids_],
            "reader": suite.reader_names_[b],
            "valid_mae": suite.valid_scores_[b],
            "joint": reader(joint, suite.readers_[b], b, False),
            "own": reader(own, members[own], b, True),
            **about.get(b, {}),
        }
        if (scale := getattr(suite.estimators_[b], "item_scale_", BINARY)) != BINARY:
            described[b]["item_scale"] = scale  # said only when graded: binary sets as before
        if b in curves:
            described[b]["own"][CURVES_KEY] = curves[b].manifest_entry() | {"folder": f"items/{b}"}
    n = len(suite.benchmarks_)
    average = SimpleNamespace(
        anchor_ids_=items,
        predictor_=BlendPredictor([suite.readers_[b] for b in suite.benchmarks_], [1 / n] * n),
        predictor_name_="suite average (mean of the joint readers)",
        calibration_residuals_=suite.calibration_residuals_[AVERAGE],
        calibration_predictions_=suite.calibration_predictions_[AVERAGE],
        calibration_source_=suite.calibration_source_,
    )
    decided = versions.new_version(
        SUITE, average,
        data_fingerprint=fit.data_fingerprint,
        split_sizes=fit.split_sizes,
        metrics={"test": metrics.evaluate(fit.test_pred[AVERAGE], fit.test_true[AVERAGE])},
        settings=settings,
        report_inputs={"test_pred": fit.test_pred[AVERAGE], "test_true": fit.test_true[AVERAGE]}
        | fit.test_flags.get(AVERAGE, {}),
        members=members,
        member_curves={f"items/{b}": c for b, c in curves.items()},
        files={MODELS_FILE: models_text(fit.models or {"test": fit.test_ids})},
        extra={"suite": {"benchmarks": list(suite.benchmarks_), "members": described,
                         "test_metrics": fit.test_metrics(), "matrices_key": matrices_key},
               POOL_KEY: fit.pool_checks.get(AVERAGE)} | suite_about(about, provenance),
    )  # fmt: skip
    return versions.write_version(root, decided, flat=True, signing_key=signing_key)


def kind(own: bool) -> str:
    """A member reader's kind: "own" (its benchmark's anchors) or "joint" (every anchor)."""
    return "own" if own else "joint"


def member_curves(fit: SuiteFit, matrix_paths, about) -> dict[str, Any]:
    """{benchmark: its items' curves}, with their sources and whether they are its target."""
    out = {}
    for b, c in fit.curves.items():
        path = (matrix_paths or {}).get(b)
        sources = path and anchor_sources(path, c.items, b)
        target = (about or {}).get(b, {}).get("target") or {}
        item_mean = target.get("kind", "items") == "items"  # unknown: the mean it was fit on
        out[b] = replace(c, item_mean=item_mean, sources=sources or None)
    return out


def members_about(matrices: Mapping[str, MatrixInfo]) -> dict[str, dict[str, Any]]:
    """{benchmark: {"target", "provenance"}} of the matrices (what `write_suite` records)."""
    return {b: {"target": dict(m.target), "provenance": dict(m.provenance)}
            for b, m in matrices.items() if m.target or m.provenance}  # fmt: skip


def suite_about(
    about: Mapping[str, Mapping[str, Any]], provenance: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The suite average's `target` and `provenance`: the mean of the members' targets, and
    `provenance` or else every member's sources added up (synthetic when any member is).
    {} when nothing is known."""
    if not about:
        return {}
    targets = {b: (a.get("target") or {}).get("definition") for b, a in about.items()}
    words = "; ".join(f"{b}: {t}" for b, t in targets.items() if t)
    kinds: dict[str, dict[str, Any]] = {}
    for a in about.values():
        for kind, k in ((a.get("provenance") or {}).get("kinds") or {}).items():
            into = kinds.setdefault(kind, {"n_results": 0, "n_sources": 0, "sources": []})
            into["n_results"] += int(k.get("n_results", 0))
            into["n_sources"] += int(k.get("n_sources", 0))
            into["sources"] += list(k.get("sources", []))[: 20 - len(into["sources"])]
    synthetic = any((a.get("provenance") or {}).get("synthetic") for a in about.values())
    definition = f"the mean of the {len(about)} benchmarks' estimates" + (
        f" ({words})" if words else ""
    )
    return {"target": {"kind": "suite average", "definition": definition},
            "provenance": dict(provenance or {"synthetic": synthetic, "kinds": kinds})}  # fmt: skip


def suite_status(matrices: Mapping[str, MatrixInfo], settings: Settings) -> str | None:
    """Why nothing is to be fitted (the live suite is up to date, this one was refused, or it
    repeated the live suite).

    Unchanged matrices are recognised without reading them (the live suite's `matrices_key`).
    """
    live = _live_suite(settings.paths.published_dir)
    manifest = live.average.manifest.to_dict() if live is not None else {}
    same = (manifest.get("suite") or {}).get("matrices_key") == matrices_key(matrices, settings)
    if live is not None and (
        same or manifest.get("data_fingerprint") == suite_key(matrices, settings)
    ):
        return f"suite: v{live.version} is up to date (same models, answers and settings)"
    key = suite_key(matrices, settings)
    if why := artifacts.already_refused(settings.paths.artifacts_dir, SUITE, key):
        return f"suite: not published ({why})"
    if why := artifacts.unchanged_before(
        settings.paths.artifacts_dir, SUITE, key, live and live.version
    ):
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
    fit = suite_recipe.fit_suite(aligned, settings, progress, data_fingerprint=key)
    folder = write_suite(settings.paths.published_dir, fit, settings,
                         matrices_key=matrices_key(matrices, settings),
                         matrix_paths={b: m.path for b, m in matrices.items()},
                         about=members_about(matrices),
                         provenance=suite_provenance(matrices, settings))  # fmt: skip
    gate = suite_gate(_live_suite(settings.paths.published_dir), aligned, fit, settings.drift.gate)
    return publish.candidate(folder, SUITE, key), with_member_checks(gate, folder)


def suite_provenance(matrices: Mapping[str, MatrixInfo], settings: Settings) -> dict | None:
    """Where the suite's results came from, from the store (None without one)."""
    from sparseeval.pipeline.store import Store

    if not Path(settings.paths.store_path).exists():
        return None
    with Store.open(settings.paths.store_path, read_only=True) as store:
        return store.provenance(*matrices)


def with_member_checks(gate: GateResult, folder: Path) -> GateResult:
    """The gate's result with each member reader's coverage check (`gate.coverage_check`, run
    as the suite was written, on the interval a user gets): figures["member_coverage"]
    {"b/joint" | "b/own": {coverage_before, action}} and, when some were widened, the reason
    says which."""
    manifest = json.loads((Path(folder) / "manifest.json").read_text())
    members = manifest["suite"]["members"].items()
    checks = {f"{b}/{k}": (m[k]["interval"].get("coverage_check") or {})
              for b, m in members for k in ("joint", "own")}  # fmt: skip
    figures = {name: {"coverage_before": c.get("coverage_before"), "action": c.get("action")}
               for name, c in checks.items() if c}  # fmt: skip
    widened = [n for n, c in figures.items() if c["action"] == "widened"]
    reason = gate.reason + (f"; readers widened to nominal coverage: {', '.join(widened)}"
                            if widened else "")  # fmt: skip
    return replace(gate, reason=reason, figures=gate.figures | {"member_coverage": figures})


def suite_line(outcome: publish.Outcome) -> str:
    """The suite step's line: what was published (and how it compares), or why not."""
    gate = outcome.gate
    if outcome.version is None or gate is None:
        return f"suite: {outcome.line}"
    on_hub = f" and {outcome.hub_commit[:12]} on the Hub" if outcome.hub_commit else ""
    than = f" ({gate.reason})" if gate.figures.get("live_mae") is not None else ""
    return (
        f"suite: published v{outcome.version}{on_hub}, {gate.figures['n_benchmarks']} benchmarks, "
        f"suite-average test MAE {gate.figures['candidate_mae']:.3f} points{than}"
    )


def _live_suite(published_dir):
    from sparseeval.consume.sets.layout import AnchorSetError, latest_version
    from sparseeval.consume.sets.suite_set import load_suite

    version = latest_version(published_dir, SUITE)
    if version is None:
        return None
    try:
        return read_once("suite", Path(published_dir) / SUITE, f"v{version}",
                         lambda: load_suite(published_dir))  # fmt: skip
    except AnchorSetError:
        return None  # unreadable or tampered: the candidate replaces it


__all__ = [
    "kind",
    "member_curves",
    "members_about",
    "suite_about",
    "suite_candidate",
    "suite_line",
    "suite_provenance",
    "suite_status",
    "with_member_checks",
    "write_suite",
]
