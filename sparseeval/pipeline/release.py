"""The pipeline's side of publishing: the live set's record, and writing a candidate version.

The ledger `artifacts/published/{benchmark}-v{N}.json` notes what each version this
pipeline published was built from (data fingerprint, last ingest run its matrix saw).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparseeval.consume.layout import latest_version, read_manifest, resolve_version_dir
from sparseeval.method.model_files import load_fitted
from sparseeval.pipeline.artifacts import artifact_path
from sparseeval.pipeline.recipe import load_evaluation
from sparseeval.pipeline.records import Candidate, FitInfo, LiveSet
from sparseeval.pipeline.settings import Settings


def set_name(benchmark: str, budget: int | None = None) -> str:
    """`arc`, or `arc-k50` for one of several budgets: names the set in artifact files."""
    return benchmark if budget is None else f"{benchmark}-k{int(budget)}"


def _ledger(artifacts_dir: str | Path, name: str, version: int) -> Path:
    return artifact_path(artifacts_dir, "published", f"{name}-v{int(version)}.json")


def live_set(
    published_dir: str | Path,
    benchmark: str,
    artifacts_dir: str | Path | None = None,
    budget: int | None = None,
) -> LiveSet | None:
    """The live published version of a benchmark (version, created, metrics), or None."""
    version = latest_version(published_dir, benchmark, budget)
    if version is None:
        return None
    man = read_manifest(resolve_version_dir(published_dir, benchmark, version, budget))
    name = set_name(benchmark, budget)
    ledger = _ledger(artifacts_dir, name, version) if artifacts_dir else None
    noted = json.loads(ledger.read_text()) if ledger and ledger.is_file() else {}
    if noted.get("data_fingerprint") != man.get("data_fingerprint"):
        noted = {}  # not ours (e.g. another home published it)
    return LiveSet(
        version, man.get("created"), man.get("data_fingerprint"), _test_mae(man),
        man.get("n_anchors"), noted.get("last_run"),
    )  # fmt: skip


def _test_mae(manifest: dict[str, Any]) -> float | None:
    """The test MAE (points) from a manifest's metrics, whatever its nesting."""
    m = manifest.get("metrics") or {}
    for path in (("test", "mae"), ("test_mae",), ("mae",)):
        cur: Any = m
        for k in path:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if isinstance(cur, int | float):
            return float(cur)
    return None


def write_candidate(
    published_dir: str | Path,
    fit: FitInfo,
    settings: Settings,
    drift_rows: list[dict[str, Any]] = (),
    budget: int | None = None,
) -> Candidate:
    """Write the fitted model as a new (not yet live) published version; note it in the ledger."""
    from sparseeval.pipeline.versions import write_version

    evaluation = load_evaluation(fit.model_dir)
    path = write_version(
        published_dir,
        fit.benchmark,
        load_fitted(fit.model_dir),
        data_fingerprint=fit.matrix_fingerprint,
        split_sizes=fit.split_sizes,
        metrics={"test": fit.test_metrics, "valid": {"mae": fit.valid_scores.get(fit.predictor)}},
        settings=settings.to_dict() | {"code_version": fit.code_version},
        report_inputs={
            "test_pred": evaluation["test_pred"].tolist(),
            "test_true": evaluation["test_true"].tolist(),
            "drift_rows": list(drift_rows),
            "budget_rows": fit.budget_rows,
        },
        budget=budget,
    )
    version = int(path.name[1:])
    ledger = _ledger(settings.artifacts_dir, set_name(fit.benchmark, budget), version)
    ledger.parent.mkdir(parents=True, exist_ok=True)
    note = {"data_fingerprint": fit.matrix_fingerprint, "last_run": fit.last_run}
    ledger.write_text(json.dumps(note))
    return Candidate(fit.benchmark, str(published_dir), str(path), version, budget)


def _refusals(artifacts_dir: str | Path, name: str) -> Path:
    return artifact_path(artifacts_dir, "published", f"{name}-refused.json")


def refused_before(artifacts_dir: str | Path, name: str, fit_key: str) -> str | None:
    """The gate's reason if this very fit (same data, settings, code) was refused before."""
    path = _refusals(artifacts_dir, name)
    return json.loads(path.read_text()).get(fit_key) if path.is_file() else None


def note_refusal(artifacts_dir: str | Path, name: str, fit_key: str, reason: str) -> None:
    """Remember a refused fit, so later runs with nothing new do not gate it again."""
    path = _refusals(artifacts_dir, name)
    seen = json.loads(path.read_text()) if path.is_file() else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(seen | {fit_key: reason}))
    tmp.replace(path)
