"""Tasks of the fit step: a benchmark's matrix, and its fit at one anchor budget.

The cache is the artifacts on disk, keyed by content (`artifacts.matrix_key`, `fit_key`):
each task looks for its files under its key and reuses them, else builds them. Nothing is
persisted in Prefect's result storage (no pickles; a new Prefect home loses nothing, and
files deleted from the home are rebuilt).
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from sparseeval.pipeline import recipe
from sparseeval.pipeline.progress import PROGRESS, saying, throttled
from sparseeval.pipeline.records import FitInfo, MatrixInfo, Waiting
from sparseeval.pipeline.settings import MatrixSection, PathsSection, Settings


@task(name="build-matrix", cache_policy=NO_CACHE, task_run_name="build-matrix-{benchmark}")
def build_matrix(
    paths: PathsSection, matrix: MatrixSection, benchmark: str, store_state: str
) -> MatrixInfo:
    """The benchmark's ±1 matrix as `artifacts/matrix/{benchmark}.{fingerprint}.npz` (reused if
    there); it depends on the `matrix` section alone (its cache key: `artifacts.matrix_key`)."""
    out = recipe.matrix_step(paths, matrix, benchmark, store_state)
    get_run_logger().info("matrix %s (%s)", out.summary, "built" if out.built else "cached")
    return out


@task(name="fit-benchmark", cache_policy=NO_CACHE, task_run_name="fit-{matrix.benchmark}-k{budget}")
def fit_benchmark(
    settings: Settings, matrix: MatrixInfo, budget: int, force: bool = False
) -> FitInfo | Waiting:
    """Split -> adaptive init -> AIS/CIS refinement -> final predictor -> test metrics.

    `budget` is the number of anchors;
    `force` retrains even when the artifact exists.
    Too few models is no failure: a `Waiting` result says how many there are and how many
    it takes (the task completes).
    """
    log = get_run_logger()
    label = fit_label(matrix, budget, settings.selection.max_anchor_share)
    # every line to the run's log; to the console a fit's lines once it has run 15 s, then
    # its selection's lines one per 15 s at most (a quick fit says nothing there)
    console = throttled(PROGRESS.info, at_once=False, thin=("",))

    def emit(m: str) -> None:
        log.info("%s: %s", label, m)
        console(f"{label}: {m}")

    try:  # a phase that runs long is said again (the MLP's training says nothing itself)
        with saying(emit, "splitting the models") as say:
            out = recipe.fit_step(matrix, settings.replace(n_anchors=budget), say, force)
    except recipe.NotEnoughModels as exc:
        log.info("waiting for more models (%s)", exc)
        return Waiting(matrix.benchmark, str(exc))
    log.info(fit_line(out))
    return out


def fit_label(matrix: MatrixInfo, budget: int, share: float = 1.0) -> str:
    """`arc k100`, or `arc k100 (33 anchors)` when the pool caps the budget (`fit_step`
    fits 33 anchors on 100 items, at most a third by default)."""
    from sparseeval.pipeline.recipe import budget_that_fits

    try:
        fitted = budget_that_fits(budget, matrix.n_items, share)
    except ValueError:  # too few items: fit_step says so
        fitted = budget
    return f"{matrix.benchmark} k{budget}" + (f" ({fitted} anchors)" if fitted != budget else "")


def fit_line(fit: FitInfo) -> str:
    """`arc: nnridge 100 anchors, test MAE 1.234 points, Kendall tau 0.912 (trained in 12s)`;
    a reused fit says `(reused: trained in 12s on an earlier run)`."""
    test = fit.test_metrics
    took = f"trained in {fit.seconds:.0f}s"
    return (
        f"{fit.benchmark}: {fit.predictor} {fit.n_anchors} anchors, test MAE {test['mae']:.3f}"
        f" points, Kendall tau {test['kendall_tau']:.3f}"
        + (f" ({took})" if fit.trained else f" (reused: {took} on an earlier run)")
    )


__all__ = [
    "build_matrix",
    "fit_benchmark",
    "fit_label",
    "fit_line",
]
