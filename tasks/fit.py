"""Tasks of the fit step: a benchmark's matrix, and its fit at one anchor budget (both cached)."""

from __future__ import annotations

from prefect import get_run_logger, task
from sparseeval.tasks.policies import fit_cache_key, matrix_cache_key

from sparseeval.pipeline import recipe
from sparseeval.pipeline.records import FitInfo, MatrixInfo
from sparseeval.pipeline.settings import Settings


@task(
    name="build-matrix",
    cache_key_fn=matrix_cache_key,
    persist_result=True,
    task_run_name="build-matrix-{benchmark}",
)
def build_matrix(settings: Settings, benchmark: str, store_state: str) -> MatrixInfo:
    """The benchmark's ±1 matrix as `artifacts/matrix/{fingerprint}.npz`."""
    out = recipe.matrix_step(settings, benchmark)
    get_run_logger().info("matrix %s", out.summary)
    return out


@task(
    name="fit-benchmark",
    cache_key_fn=fit_cache_key,
    persist_result=True,
    task_run_name="fit-{matrix.benchmark}-k{budget}",
)
def fit_benchmark(
    settings: Settings, matrix: MatrixInfo, budget: int, force: bool = False
) -> FitInfo:
    """Split -> adaptive init -> AIS/CIS refinement -> final predictor -> test metrics.

    `budget` is the number of anchors; `force` retrains even when the artifact exists.
    """
    log = get_run_logger()
    say = lambda m: log.info("%s k%d: %s", matrix.benchmark, budget, m)  # noqa: E731
    out = recipe.fit_step(matrix, settings.replace(n_anchors=budget), say, force)
    log.info(fit_line(out))
    return out


def fit_line(fit: FitInfo) -> str:
    """`arc: nnridge 100 anchors, test MAE 1.234 points, Kendall tau 0.912 (trained in 12s)`."""
    test = fit.test_metrics
    how = "trained" if fit.trained else "reused artifact"
    return (
        f"{fit.benchmark}: {fit.predictor} {fit.n_anchors} anchors, test MAE {test['mae']:.3f}"
        f" points, Kendall tau {test['kendall_tau']:.3f} ({how} in {fit.seconds:.0f}s)"
    )
