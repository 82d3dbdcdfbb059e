"""What a night's tasks came to: each benchmark's result from its task states, the line
that says it, and the Prefect events about it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from prefect.events import emit_event

from sparseeval.consume.errors import environment_fault
from sparseeval.pipeline.recipe import cap_reason
from sparseeval.pipeline.records import BenchmarkResult, FitInfo, MatrixInfo, Waiting
from sparseeval.pipeline.settings import SettingsError


def error_of(state) -> str:
    """A failed state's exception as one line (an environment fault, e.g. a full disk, as
    `consume.errors.environment_fault` says it: what to do, not a Python class)."""
    exc = state.result(raise_on_failure=False)
    if not isinstance(exc, BaseException):
        return str(state.message)
    return environment_fault(exc) or f"{type(exc).__name__}: {exc}"


def benchmarks_to_run(wanted: list[str] | None, states: dict[str, str]) -> list[str]:
    """The benchmarks named (all in the store when none); an unknown name is an error."""
    names = list(wanted or states)
    unknown = [b for b in names if b not in states]
    if unknown:
        raise SettingsError(
            f"no results in the store for benchmark(s) {', '.join(unknown)}"
            f" (have: {', '.join(states) or 'none'})"
        )
    return names


def collect(benchmark: str, matrix_state, fit_state, budget: int | None) -> BenchmarkResult:
    """One benchmark's (and budget's) result from its matrix and fit task states."""
    r = BenchmarkResult(benchmark, budget=budget)
    if not matrix_state.is_completed():
        return replace(r, error=f"matrix: {error_of(matrix_state)}")
    matrix: MatrixInfo = matrix_state.result()
    r = replace(r, matrix=matrix, matrix_cached=matrix_state.name == "Cached" or not matrix.built)
    if not fit_state.is_completed():
        return replace(r, error=f"fit: {error_of(fit_state)}")
    fit: FitInfo | Waiting = fit_state.result()
    if isinstance(fit, Waiting):  # a benchmark still filling up: wait, not fail
        return replace(r, fit_state="waiting", outcome=f"waiting for more models ({fit.reason})")
    cached = fit_state.name == "Cached" or not fit.trained  # reused from artifacts on disk
    return replace(r, fit=fit, fit_cached=cached, fit_state="Cached" if cached else fit_state.name)


def fit_said(r: BenchmarkResult, budget: int | None = None, share: float = 1.0) -> str:
    """What a fit came to, for the progress line; it says when `budget` (the anchors asked
    for) did not fit the items, and why `auto` left models out or fell back to items."""
    if r.error or r.fit is None:
        return r.error or r.outcome
    test, fit = r.fit.test_metrics, r.fit
    how = "cached" if r.fit_cached else f"trained in {fit.seconds:.0f}s"
    asked = budget and budget != fit.n_anchors
    why = cap_reason(1.0 if fit.n_anchors == r.matrix.n_items - 1 else share)
    capped = f" (of {budget} asked: {why})" if asked else ""
    note = (r.matrix.target or {}).get("note")
    return (
        f"{r.matrix.n_models:,} models x {r.matrix.n_items:,} items, {fit.n_anchors}"
        f" anchors{capped}, {_saving(fit.n_anchors, r.matrix.n_items)}, test MAE"
        f" {test['mae']:.2f} points ({how})"
        + (f"; target {note}" if note else "")
        + _saves_little(fit.n_anchors, r.matrix.n_items)
    )


def _saving(n_anchors: int, n_items: int) -> str:
    """`3.3x cheaper than all items`: what answering only the anchors saves."""
    return f"{n_items / n_anchors:.1f}x cheaper than all items"


def _saves_little(n_anchors: int, n_items: int) -> str:
    """A hint when the anchors are over half the items (under 2x cheaper), else ''."""
    if 2 * n_anchors <= n_items or n_items < 6:
        return ""
    k = n_items // 3
    return f"; saves little: --anchors {k} would read a third of the items ({n_items / k:.1f}x)"


def with_sibling_budgets(results: list[BenchmarkResult]) -> list[BenchmarkResult]:
    """Each fit's budget table also shows SparseEval at the run's other budgets."""
    own = {(r.benchmark, r.budget): [row for row in r.fit.budget_rows
                                     if row["method"] == "sparseeval"]
           for r in results if r.fit and r.budget is not None}  # fmt: skip
    out = []
    for r in results:
        extra = [row for (b, k), rows in own.items() if b == r.benchmark and k != r.budget
                 for row in rows]  # fmt: skip
        if extra:
            r = replace(r, fit=replace(r.fit, budget_rows=[*r.fit.budget_rows, *extra]))
        out.append(r)
    return out


def event(name: str, r: BenchmarkResult, payload: dict[str, Any]) -> None:
    """A Prefect event about one benchmark (`sparseeval.{name}`)."""
    emit_event(
        event=f"sparseeval.{name}",
        resource={"prefect.resource.id": f"sparseeval.benchmark.{r.benchmark}",
                  "prefect.resource.name": r.benchmark},
        payload={"budget": r.budget, **payload},
    )  # fmt: skip
