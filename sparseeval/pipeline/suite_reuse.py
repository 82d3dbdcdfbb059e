"""Reuse each benchmark's own fit in the suite when it saw the very same inputs (bit for bit)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.suite import SuiteSparseEval
from sparseeval.pipeline.recipe import FitSplit
from sparseeval.pipeline.settings import AnySettings


def reusable_fits(
    matrices: Mapping[str, ResponseMatrix],
    aligned: Mapping[str, ResponseMatrix],
    prints: Mapping[str, str],
    split: FitSplit,
    settings: AnySettings,
    suite: SuiteSparseEval,
    folders: Mapping[str, str | Path] | None = None,
) -> dict:
    """{benchmark: its own saved fit as an estimator} for those whose inputs are the suite's.

    prints: the aligned matrices' fingerprints. A fit saved without the state a reuse
    needs, or with other estimator parameters, is not reused (`model_files.load_estimator`).
    """
    from sparseeval.method.model_files import load_estimator

    out = {}
    for b, m in aligned.items():
        if folders is not None:
            folder = folders.get(b)
        elif m is matrices[b]:  # aligned unchanged: the benchmark's own matrix, maybe fitted
            folder = _own_fit_folder(b, prints[b], settings)
        else:
            folder = None  # other models than the benchmark's own fit saw
        if folder is None or not same_fit_inputs(folder, m, prints[b], split):
            continue
        est = load_estimator(folder, suite.benchmark_template(m.shape[1], m.scale))
        if est is not None:
            out[b] = est
    return out


def _own_fit_folder(benchmark: str, matrix_fingerprint: str, settings: AnySettings) -> Path | None:
    """Where `recipe.fit_step` saved this matrix's fit at the suite's budget, if it did (and
    its seal holds: `recipe.cached_fit`)."""
    from sparseeval.pipeline.artifacts import artifact_path, fit_key
    from sparseeval.pipeline.recipe import cached_fit

    key = fit_key(benchmark, matrix_fingerprint, settings.replace(n_anchors=max(settings.budgets)))
    folder = artifact_path(settings.artifacts_dir, "model", key)
    return folder if cached_fit(folder, key, matrix_fingerprint) else None


def same_fit_inputs(folder: str | Path, matrix: ResponseMatrix, matrix_fingerprint: str,
                    split: FitSplit) -> bool:  # fmt: skip
    """Whether the fit in `folder` saw this matrix (same fingerprint: ids, answers, targets)
    with these training and validation models (model ids compared in order)."""
    from sparseeval.pipeline.recipe import load_evaluation
    from sparseeval.pipeline.records import FitInfo

    folder = Path(folder)
    if FitInfo.load(folder / "summary.json").matrix_fingerprint != matrix_fingerprint:
        return False
    saved = load_evaluation(folder)
    return all(
        np.array_equal(saved[f"{part}_ids"], np.asarray(matrix.model_ids[rows], dtype=str))
        for part, rows in (("train", split.train), ("valid", split.valid))
    )


__all__ = [
    "reusable_fits",
    "same_fit_inputs",
]
