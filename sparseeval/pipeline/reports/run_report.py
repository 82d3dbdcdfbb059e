"""The run report of one refresh: a Markdown summary, a metrics table and a one-line summary."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sparseeval.pipeline.artifacts import code_version
from sparseeval.pipeline.records import BenchmarkResult, RunSummary


def metrics_rows(run: RunSummary) -> list[dict[str, Any]]:
    """One row per benchmark for a table artifact."""
    rows = []
    for r in run.results:
        test = r.fit.test_metrics if r.fit else {}
        rows.append(
            {
                "benchmark": r.label,
                "models": r.matrix.n_models if r.matrix else None,
                "items": r.matrix.n_items if r.matrix else None,
                "trained": "cached" if r.fit_cached else ("yes" if r.fit else "no"),
                "predictor": r.fit.predictor if r.fit else None,
                "test MAE": _round(test.get("mae")),
                "Kendall tau": _round(test.get("kendall_tau")),
                "drift check": drift_cell(r),
                "published": r.published_version,
            }
        )
    return rows


def _round(v: Any, nd: int = 3) -> Any:
    return round(v, nd) if isinstance(v, float) else v


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "-"


def render_report(run: RunSummary) -> str:
    """A Markdown report of one refresh: what ran, what was cached, drift, decisions."""
    s = run.settings
    lines = [
        f"# SparseEval refresh {run.started}",
        "",
        f"- ingest: {run.ingest.line() if run.ingest.units else 'no sources'}",
        f"- benchmarks: {len(run.results)}; trained {run.n_trained},"
        f" cached {run.n_cached}; published {run.n_published}",
        f"- code version `{code_version()}`; settings n_anchors={s.get('n_anchors')}"
        f", refine_steps={s.get('refine_steps')}, seed={s.get('seed')}",
        *([f"- {run.suite}"] if run.suite else []),
        *([f"- {run.waiting}"] if run.waiting else []),
        *([f"- failed: {run.failure_line()}"] if run.failed else []),
        *([f"- {run.dropped_line()}"] if run.dropped_events else []),
        "",
        "| benchmark | models x items | training | test MAE (points) | Kendall tau"
        " | drift check (live set on new models) | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in run.results:
        test = r.fit.test_metrics if r.fit else {}
        shape = f"{r.matrix.n_models} x {r.matrix.n_items}" if r.matrix else "? x ?"
        training = "cached" if r.fit_cached else ("trained" if r.fit else "-")
        lines.append(
            f"| {r.label} | {shape} | {training} | {_fmt(test.get('mae'))}"
            f" | {_fmt(test.get('kendall_tau'))} | {drift_cell(r)} | {r.outcome} |"
        )
    lines += ["", "## What arrived", "", run.ingest.markdown().rstrip(), "", "## Decisions", ""]
    for r in run.results:
        lines.append(f"- **{r.label}**: {r.outcome}")
        if r.matrix and r.matrix.set_aside:  # trained on the rest: the operator decides
            lines.append(f"  - {r.matrix.set_aside}")
        if r.decision and "window: " in r.decision.reason:  # the window drift was judged on
            lines.append(f"  - drift check: {r.decision.reason}")
        if r.gate and r.gate.reason:
            lines.append(f"  - gate: {r.gate.reason}")
        if r.published_path:
            lines.append(f"  - files: `{r.published_path}`")
    lines += ["", "Test MAE: the candidate's held-out test split (never seen in training)."]
    return "\n".join(lines) + "\n"


def drift_cell(r: BenchmarkResult) -> str:
    """The drift check in a few words: first version, no new models, none or drift (MAE)."""
    d = r.decision
    if d is None:
        return "-"
    if r.live is None:
        return "first version"
    mae, n = d.figures.get("fresh_mae"), d.figures.get("n_fresh", 0)
    if not n or mae is None:
        return "no new models"
    return f"{'DRIFT' if d.drift else 'none'}: MAE {mae:.2f} on {n} new models"


def notable(r: BenchmarkResult) -> str | None:
    """One clause for a result a person must hear about (drift, refusal, publish, failure)."""
    if r.error:
        return f"{r.label}: failed ({r.error})"
    if r.fit is None:
        return f"{r.label}: {r.outcome}"
    if r.published_version is not None:
        if r.live is None:  # a first version: the head's count says it
            return None
        why = r.decision.reason if r.decision else ""
        return f"{r.label}: published v{r.published_version} ({why})"
    if r.decision and r.decision.drift:
        mae = r.decision.figures.get("fresh_mae")
        head = f"{r.label}: drift (MAE {mae:.2f} on {r.n_fresh} new models)"
        g = r.gate.figures if r.gate else {}
        if r.gate and not r.gate.accept and "candidate_mae_heldout" in g:
            cand, live = g["candidate_mae_heldout"], g["live_mae_heldout"]
            return f"{head}; candidate refused ({cand:.2f} > live {live:.2f})"
        return f"{head}; {r.outcome}"
    return None


def summary_line(run: RunSummary) -> str:
    """`everything was cached ...` or `N benchmarks: trained a, ...`, then what needs notice."""
    n = len(run.results)
    notes = [f"ingest failed: {s['source']} ({s['message']})"
             for s in run.ingest.sources if s.get("failed")]  # fmt: skip
    notes += [x for x in map(notable, run.results) if x]
    waits = [u for s in run.ingest.sources for u in s.get("waiting", [])]
    if run.waiting:
        notes.insert(0, run.waiting)
    elif waits:
        notes.append(f"waiting: {waits[0]}" + (f" and {len(waits) - 1} more" if waits[1:] else "")
                     + " still being written (read on a later run)")  # fmt: skip
    if run.waiting and not run.results:
        head = "nothing fitted"
    elif run.n_trained == 0 and not notes:
        head = f"everything was cached ({n} benchmarks): nothing trained, nothing published"
    else:
        head = (
            f"{n} benchmarks: trained {run.n_trained}, cached {run.n_cached},"
            f" published {run.n_published}"
        )
    suite = [run.suite] if run.suite else []
    dropped = [run.dropped_line()] if run.dropped_events else []
    return "; ".join([head, *notes, *suite, *dropped, f"report: {run.report_path}"])


def write_report(reports_dir: str | Path, markdown: str, stamp: str | None = None) -> Path:
    """Write `refresh-{stamp}.md` and `refresh-latest.md` (each replaced atomically)."""
    folder = Path(reports_dir)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = stamp or datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = folder / f"refresh-{stamp}.md"
    for target in (path, folder / "refresh-latest.md"):
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(markdown)
        os.replace(tmp, target)
    return path


__all__ = [
    "drift_cell",
    "metrics_rows",
    "notable",
    "render_report",
    "summary_line",
    "write_report",
]
