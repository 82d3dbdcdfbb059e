"""`sparseeval refresh`: run the Prefect refresh flow once, here and now (imports `flows`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sparseeval.cli.common import (
    EXIT_PARTIAL,
    UserError,
    fail,
    parse_budgets,
    quoted,
    report,
)
from sparseeval.consume.errors import first_line

REFRESH_EPILOG = """examples:
  sparseeval refresh                       # first run: fills an empty store from the built-in
                                           # synthetic leaderboard, trains, publishes, reports
  sparseeval refresh                       # again, no new data: all cached, nothing published
  sparseeval refresh --source new.parquet --benchmark arc
  sparseeval refresh --anchors 50 --set n_test=100 --set drift_mae_points=1.5
  sparseeval refresh --task-runner dask --json

Each run prints a one-line summary and the path of its Markdown report. Without a Prefect
server (PREFECT_API_URL unset) Prefect starts a temporary one for the run.
"""


def add_refresh_command(subparsers: argparse._SubParsersAction) -> None:
    """Register `refresh` (sets `func(args) -> exit code`)."""
    p = subparsers.add_parser(
        "refresh",
        help="ingest, retrain what changed, publish on drift (the nightly job, once)",
        description=(
            "Run the refresh flow once: ingest new results, rebuild each benchmark's matrix,"
            " retrain only what changed (cached by content), check drift of the published"
            " anchor sets on newly arrived models and publish a new version when needed."
        ),
        epilog=REFRESH_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--source", action="append", default=[], metavar="SPEC",
        help="a .csv/.parquet long table, wide:BENCH=file.csv, an lm-eval folder,"
        " hub:org/model or synthetic[:n_models=N,seed=S] (repeatable)",
    )  # fmt: skip
    p.add_argument("--benchmark", action="append", default=[], metavar="NAME",
                   help="refresh only these benchmarks (default: all in the store)")  # fmt: skip
    p.add_argument("--anchors", metavar="K[,K...]",
                   help="anchor budget, or several (each published as its own set)")  # fmt: skip
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting, e.g. --set n_test=100 (repeatable)")  # fmt: skip
    p.add_argument("--task-runner", choices=["thread", "dask"], help="where tasks run")
    p.add_argument("--no-fill", action="store_true",
                   help="do not fill an empty store from the synthetic leaderboard")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the run summary as JSON")
    p.add_argument("--verbose", action="store_true", help="also show Prefect's own log lines")
    p.set_defaults(func=run_refresh)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--set takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    if args.task_runner:
        out["task_runner"] = args.task_runner
    if args.anchors:
        parse_budgets(args.anchors)  # one line for `--anchors abc`, before any work
        out["n_anchors"] = args.anchors
    return out


def run_refresh(args: argparse.Namespace) -> int:
    """The `refresh` command; returns the exit code (2: a usage or data error)."""
    try:
        from sparseeval.pipeline.settings import Settings

        overrides = _overrides(args)
        settings = Settings.load(**overrides | ({"home": args.home} if args.home else {}))
        os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        if not args.verbose:  # Prefect's console lines only for errors; ours come instead
            os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "ERROR")
        _show_progress(quiet=args.json)
        from sparseeval.cli.tempserver import stopping_on_sigterm, temporary_server
        from sparseeval.flows.refresh import refresh

        with stopping_on_sigterm(), temporary_server(), _input_errors_in_one_line(args.verbose):
            state = refresh(
                sources=args.source or None,
                benchmarks=args.benchmark or None,
                settings_overrides=overrides or None,
                home=args.home,
                fill_if_empty=not args.no_fill,
                return_state=True,
            )
        run = state.result(raise_on_failure=False)
        if isinstance(run, BaseException):
            raise run
    except BaseException as exc:  # a user error in one line; a bug with its traceback
        from sparseeval.pipeline.stopping import as_stop

        if (stop := as_stop(exc)) is not None:  # SIGTERM, Ctrl-C: no error of the data
            return _stopped(stop, args.json)
        if not isinstance(exc, Exception):
            raise
        if args.json:  # one JSON document all the same
            _json_failure(exc)
        if type(exc).__name__ == "PipelineError":  # some benchmarks failed, the others ran
            fail("refresh", first_line(exc))
            return EXIT_PARTIAL
        return report("refresh", exc)
    from sparseeval.pipeline.reports.run_report import summary_line

    if args.json:
        print(json.dumps(_json_summary(run), indent=2, default=str))
    else:
        print(summary_line(run))
        print(_next_steps(run, settings))
    return 0


def _stopped(stop, as_json: bool) -> int:
    """Say that a signal stopped the run (nothing failed, nothing half-written); its exit
    code, 128 + the signal (143 for SIGTERM)."""
    import sys

    line = f"{stop}: the run ended early; nothing failed and nothing was half-written"
    if as_json:
        print(json.dumps({"status": "stopped", "failures": [], "error": line}, indent=2))
    print(f"sparseeval refresh: {line}", file=sys.stderr)
    return int(stop.code)


def _json_failure(exc: BaseException) -> None:
    """The summary of a failed run on stdout (the run's when there is one, else the error
    alone), so that `--json` always prints one document."""
    run = getattr(exc, "run", None)
    doc = _json_summary(run) if run is not None else {"status": "failed", "failures": []}
    print(json.dumps(doc | {"error": first_line(exc)}, indent=2, default=str))


@contextlib.contextmanager
def _input_errors_in_one_line(verbose: bool) -> Iterator[None]:
    """While the flow runs, the console (this process's and the local Dask workers') shows no
    log record of a user error (the flow's PipelineError included) nor Prefect's "Finished
    in state" lines unless `verbose`: the CLI says it in one line, and the run's log on the
    Prefect server keeps it, traceback included; a bug's record stays (`flows._console`)."""
    from sparseeval.flows._console import one_line_errors

    with one_line_errors(on=not verbose):
        yield


def _show_progress(quiet: bool) -> None:
    """Print the flow's progress lines (`sparseeval.progress`) on stderr, plain."""
    import sys

    from sparseeval.pipeline.progress import PROGRESS as log

    log.propagate = False
    log.setLevel(logging.INFO)
    if not quiet and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        log.addHandler(handler)


def _next_steps(run, settings) -> str:
    """Where the reports are (HTML first) and what a user does next."""
    from sparseeval.consume.sets.layout import AnchorSetError, resolve_version_dir

    pub = settings.paths.published_dir.resolve()
    html = []
    sets = [(r.benchmark, r.budget) for r in run.results] + ([("suite", None)] if run.suite else [])
    for benchmark, budget in sets:
        try:
            folder = resolve_version_dir(pub, benchmark, "latest", budget)
        except AnchorSetError:
            continue
        if (folder / "report.html").is_file():
            html.append(str(folder / "report.html"))
    lines = ["reports (open in a browser): " + (html[0] if html else "none published yet")]
    lines += [f"                              {h}" for h in html[1:]]
    lines.append(f"run summary: {Path(run.report_path).resolve()}")
    if html:
        b = run.results[0].benchmark
        home = settings.paths.home.resolve()  # git-ignored: the filled files stay out of a checkout
        b, answers, every = quoted(b), quoted(home / "answers.csv"), quoted(home / "all.csv")
        at = quoted(pub)  # a home with spaces or `$(...)` in its path pastes as it is
        lines += [
            f"next: sparseeval anchors --benchmark {b} --anchor-set {at} --template {answers}"
            "   # the items a new model must answer, and a blank to fill",
            f"      sparseeval predict --benchmark {b} --anchor-set {at} --responses {answers}",
        ]
        if run.suite and any(h.startswith(str(pub / "suite")) for h in html):
            lines.append(
                f"      sparseeval anchors --benchmark suite --anchor-set {at} --template {every}"
                "   # every benchmark's anchors, read together"
            )
    return "\n".join(lines)


def _json_summary(run) -> dict[str, Any]:
    """The run as one JSON document: status, error (None), failures (each source, unit and
    reason; each failed benchmark), what waits, ingest, one entry per benchmark (published
    version, or the live version a candidate repeated) and the suite's line."""
    keep = ("status", "started", "n_trained", "n_cached", "n_published", "report_path",
            "failed", "failures", "waiting", "dropped_events")  # fmt: skip
    out = {k: getattr(run, k) for k in keep} | {"error": None}
    out["ingest"] = {"line": run.ingest.line(), "sources": list(run.ingest.sources)}
    out["suite"] = run.suite
    out["benchmarks"] = [
        {
            "benchmark": r.benchmark,
            "trained": r.trained,
            "test_mae": r.fit.test_metrics.get("mae") if r.fit else None,
            "drift": r.decision.drift if r.decision else None,
            "published_version": r.published_version,
            "unchanged_from": r.unchanged_from,
            "outcome": r.outcome,
        }
        for r in run.results
    ]
    return out


__all__ = [
    "REFRESH_EPILOG",
    "add_refresh_command",
    "run_refresh",
]
