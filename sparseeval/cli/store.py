"""`sparseeval ingest` and `sparseeval matrix`: the results store from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sparseeval.cli.common import (
    EXIT_PARTIAL,
    EXIT_USER_ERROR,
    UserError,
    number,
    write_atomic,
)
from sparseeval.consume.errors import SparseEvalError, first_line

INGEST_EPILOG = """examples:
  sparseeval ingest results.parquet                 # long table: model,benchmark,item,correct
  sparseeval ingest arc_responses.csv --benchmark arc   # wide table: model + one column per item
  sparseeval ingest wide:arc=arc_responses.csv      # the same, the benchmark named in the spec
  sparseeval ingest scores:open-llm-leaderboard.csv # reported scores in percent: model (or
                                       # name) + arc, gsm8k, ... columns, or model,benchmark,score
  sparseeval ingest lm_eval_out/                    # lm-eval folder written with --log_samples
  sparseeval ingest --hub v1 --hub-model meta-llama/Llama-2-7b-hf   # Open LLM Leaderboard details
  sparseeval ingest --hub v2 --hub-all --json       # every v2 details repo (token: HF_TOKEN)

Ingesting the same content twice changes nothing and says so; bad rows go to quarantine.
"""
MATRIX_EPILOG = """examples:
  sparseeval matrix                      # list benchmarks with their counts
  sparseeval matrix arc                  # summary of the arc matrix and its fingerprint
  sparseeval matrix mmlu --max-missing 0.05 --export mmlu.npz   # also .csv (wide, 0/1)
"""


def user_errors() -> tuple[type[BaseException], ...]:
    """What these commands say in one line: user errors, the store's and its paths' trouble
    (a plain ValueError is a bug: `cli.main` keeps its traceback)."""
    import duckdb

    return (SparseEvalError, OSError, duckdb.Error)


def add_store_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register the `ingest` and `matrix` subcommands (each sets `func(args) -> exit code`)."""
    _add_ingest(subparsers)
    _add_matrix(subparsers)


def add_anchor_set_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=Path, help="store file (default: settings store_path)")
    p.add_argument(
        "--wait", type=number(0), default=10.0, help="seconds to wait for another writer"
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _add_ingest(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ingest",
        help="read per-item results into the store",
        description="Read per-item results (files, lm-eval folders or the Hub) into the store.",
        epilog=INGEST_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sources_help = "files, folders or specs (wide:BENCH=FILE.csv, scores:FILE.csv, ...)"
    p.add_argument("sources", nargs="*", type=Path, help=sources_help)
    p.add_argument("--format", choices=["auto", "long", "wide", "lm-eval"], default="auto")
    p.add_argument("--benchmark", help="the benchmark of a wide table")
    p.add_argument("--model", help="model of an lm-eval folder (default: its results JSON)")
    p.add_argument("--hub", choices=["v1", "v2"], help="pull Open LLM Leaderboard details")
    p.add_argument("--hub-model", action="append", dest="hub_models", metavar="ORG/MODEL")
    p.add_argument("--hub-all", action="store_true", help="every details repo of --hub-org")
    p.add_argument("--hub-org", default="open-llm-leaderboard")
    p.add_argument(
        "--new-benchmark", action="append", default=[], metavar="NAME",
        help="accept rows of this benchmark name (known ones are built in)",
    )  # fmt: skip
    p.add_argument("--force", action="store_true", help="re-read content already ingested")
    add_anchor_set_args(p)
    p.set_defaults(func=run_ingest)


def _add_matrix(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "matrix",
        help="build a benchmark's ±1 models x items matrix",
        description="Build a benchmark's ±1 matrix from the store; print its summary.",
        epilog=MATRIX_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("benchmark", nargs="?", help="benchmark name (omit to list benchmarks)")
    p.add_argument(
        "--max-missing", type=number(0, 1), help="drop models missing more than this share"
    )
    p.add_argument("--export", type=Path, help="write the matrix (.npz or wide .csv)")
    add_anchor_set_args(p)
    p.set_defaults(func=run_matrix)


def run_ingest(args: argparse.Namespace) -> int:
    """The `ingest` command; returns the exit code."""
    from sparseeval.pipeline.store import Store

    try:
        sources = _sources(args)
        with Store.open(_store_path(args), wait_s=args.wait) as store:
            for name in args.new_benchmark:
                store.add_benchmark(name)
            reports = _ingest_all(store, sources, args.force)
    except user_errors() as exc:
        return store_failure(exc, args.store or Path("the store"))
    if args.json:
        print(json.dumps([r.to_dict() for r in reports], indent=2, default=str))
    else:
        for r in reports:
            print(r.line(), file=sys.stderr if r.status in NOTHING_STORED else sys.stdout)
    failed = [r for r in reports if r.status in NOTHING_STORED]
    if failed and len(failed) == len(reports):
        return EXIT_USER_ERROR  # nothing landed: not "partly failed"
    return EXIT_PARTIAL if failed else 0


NOTHING_STORED = ("failed", "quarantined")  # unit statuses that stored nothing


def _ingest_all(store, sources: list, force: bool) -> list:
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.sources import ingest_each
    from sparseeval.pipeline.store import SourceError

    contain = (SourceError, SparseEvalError, OSError)  # anything else is a bug: it surfaces
    accept = Settings.load().sources.new_benchmarks
    done = ingest_each(store, sources, force, contain=contain, new_benchmarks=accept)
    return [r for _, _, reports in done for r in reports]


def _parse(path: Path, args: argparse.Namespace):
    from sparseeval.pipeline.sources import Unreadable, parse_source

    try:
        return parse_source(str(path), args.format, args.benchmark, args.model)
    except (SparseEvalError, OSError) as exc:
        return Unreadable(path, exc)


def _sources(args: argparse.Namespace) -> list:
    """The sources to ingest: each path given, or `--hub ...` as the `hub:` spec it is
    sugar for (`hub:V:ORG/MODEL,...@DETAILS_ORG`, `hub:V:*@DETAILS_ORG` for --hub-all)."""
    if args.hub:
        if not (args.hub_models or args.hub_all):
            raise UserError("--hub needs --hub-model ORG/MODEL (repeatable) or --hub-all")
        from sparseeval.pipeline.settings import Settings
        from sparseeval.pipeline.sources import parse_source

        names = "*" if args.hub_all else ",".join(args.hub_models)
        spec = f"hub:{args.hub}:{names}@{args.hub_org}"
        return [parse_source(spec, hub_max_repos=Settings.load().sources.hub_max_repos)]
    if not args.sources:
        raise UserError("give files or folders to ingest, or --hub v1|v2")
    return [_parse(p, args) for p in args.sources]


def run_matrix(args: argparse.Namespace) -> int:
    """The `matrix` command; returns the exit code."""
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.store import Store, build_matrix

    try:
        settings = Settings.load()
        with Store.open(_store_path(args, settings), read_only=True, wait_s=args.wait) as store:
            if not args.benchmark:
                return _print_benchmarks(store, args.json)
            frac = (
                settings.matrix.max_missing_model_frac
                if args.max_missing is None
                else args.max_missing
            )
            matrix, summary = build_matrix(
                store, args.benchmark, frac, target=settings.matrix.target
            )
        if args.export:
            export_matrix(matrix, args.export, summary.fingerprint)
    except user_errors() as exc:
        return store_failure(exc, args.store or Path("the store"))
    out: dict[str, Any] = summary.to_dict() | {"export": str(args.export or "")}
    print(json.dumps(out, indent=2) if args.json else summary.line())
    return 0


def _print_benchmarks(store, as_json: bool) -> int:
    table = store.benchmarks()
    if as_json:
        print(json.dumps(table.to_dicts(), indent=2))
    else:
        empty = [row["benchmark"] for row in table.iter_rows(named=True) if not row["n_models"]]
        for row in table.iter_rows(named=True):
            if row["n_models"]:
                print(f"{row['benchmark']:<12} {row['n_models']:>7,} models {row['n_items']:>7,}"
                      " items")  # fmt: skip
        if empty:
            print(f"known, no results yet: {', '.join(empty)}")
    return 0


def export_matrix(matrix: Any, path: Path, fingerprint: str) -> None:
    """Write a matrix as .npz (the one matrix file format, compressed) or a wide 0/1 CSV."""
    if path.suffix == ".npz":
        from sparseeval.pipeline.artifacts import save_matrix

        save_matrix(matrix, path, compress=True, fingerprint=fingerprint)
    elif path.suffix == ".csv":
        import numpy as np
        import polars as pl

        cols = {
            str(i): (matrix.values[:, j] > 0).astype(np.int8) for j, i in enumerate(matrix.item_ids)
        }
        frame = pl.DataFrame({"model": matrix.model_ids.astype(str)} | cols)
        write_atomic(path, frame.write_csv)  # a full disk leaves no half file
    else:
        raise UserError(f"--export {path}: use a .npz or .csv file name")


def _store_path(args: argparse.Namespace, settings=None) -> Path:
    from sparseeval.pipeline.settings import Settings

    return args.store or (settings or Settings.load()).paths.store_path


def store_failure(exc: BaseException, store: Path | None = None) -> int:
    from sparseeval.pipeline.store.integrity import damaged_message, is_damage

    if store is not None and is_damage(exc):  # a query reached a block the file lacks
        exc = UserError(damaged_message(store, exc))
    print(f"error: {first_line(exc)}", file=sys.stderr)
    return 2


__all__ = [
    "INGEST_EPILOG",
    "MATRIX_EPILOG",
    "NOTHING_STORED",
    "add_anchor_set_args",
    "add_store_commands",
    "export_matrix",
    "run_ingest",
    "run_matrix",
    "store_failure",
    "user_errors",
]
