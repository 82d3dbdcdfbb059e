"""`sparseeval quarantine`: see, drop or release what is held out of the matrices."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sparseeval.cli.common import UserError, number

EPILOG = """what is held out:
  rows      rows the ingest quarantined (bad values, unknown benchmarks), per file and reason
  results   results the build sets aside: items too few models have (a stray item id)
  files     inbox files moved to {inbox}/failed/ (unreadable, or every row quarantined)

examples:
  sparseeval quarantine list                      # all three, with counts and reasons
  sparseeval quarantine drop inbox/new.csv        # forget that file's quarantined rows
  sparseeval quarantine drop --benchmark arc      # delete the results arc sets aside
  sparseeval quarantine drop inbox/failed/x.csv   # delete a set-aside file
  sparseeval quarantine release inbox/failed/x.csv   # put it back: read on the next run

A file whose rows were quarantined for a cause since fixed (`ingest --new-benchmark NAME`)
is read again with `sparseeval ingest FILE --force`; its quarantined rows are replaced.
"""


def add_quarantine_command(subparsers: argparse._SubParsersAction) -> None:
    """Register `quarantine` (sets `func(args) -> exit code`)."""
    p = subparsers.add_parser(
        "quarantine",
        help="list, drop or release quarantined rows, set-aside results and files",
        description="See what is held out of the matrices; drop it or put a file back.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = p.add_subparsers(dest="action", required=True)
    _options(actions.add_parser("list", help="what is held out, with counts and reasons"))
    drop = actions.add_parser("drop", help="forget a source's quarantined rows, delete a"
                              " set-aside file, or the results a benchmark sets aside")  # fmt: skip
    drop.add_argument("target", nargs="?", help="a source file, or a file under failed/")
    drop.add_argument("--benchmark", help="the results this benchmark's build sets aside")
    _options(drop)
    release = actions.add_parser("release", help="put a set-aside file back in its inbox")
    release.add_argument("target", help="a file under an inbox's failed/")
    _options(release)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inbox", action="append", default=[], type=Path, metavar="DIR",
                   help="an inbox to look in (default: the settings' inbox: sources)")  # fmt: skip
    p.add_argument("--store", type=Path, help="store file (default: settings store_path)")
    p.add_argument(
        "--wait", type=number(0), default=10.0, help="seconds to wait for another writer"
    )
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run_quarantine)


def run_quarantine(args: argparse.Namespace) -> int:
    """The `quarantine` command; returns the exit code."""
    from sparseeval.cli.store import store_failure, user_errors
    from sparseeval.pipeline.settings import Settings

    store = args.store
    try:
        settings = Settings.load()
        store = args.store or settings.paths.store_path
        if args.action == "list":
            return _list(args, settings, store)
        print(_change(args, settings, store))
    except user_errors() as exc:
        return store_failure(exc, store if args.store else None)
    return 0


def _list(args: argparse.Namespace, settings: Any, store_path: Path) -> int:
    from sparseeval.pipeline.store import Store
    from sparseeval.pipeline.store import quarantine as q

    rows: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    if Path(store_path).is_file():
        with Store.open(store_path, read_only=True, wait_s=args.wait) as store:
            rows = q.held_rows(store)
            results = q.set_aside(store, settings.matrix.max_missing_model_frac)
    files = q.aside_files(_inboxes(args, settings))
    if args.json:
        print(json.dumps({"rows": rows, "results": results, "files": files}, indent=2))
        return 0
    print(f"rows: {sum(r['rows'] for r in rows):,} quarantined")
    _some(f"  {r['source']}: {r['rows']:,} {r['reason']} (run {r['last_run']})" for r in rows)
    print(f"results: {len(results):,} item(s) set aside by the build")
    _some(f"  {r['benchmark']} item {r['item']}: {r['models']:,} model(s) have it" for r in results)
    print(f"files: {len(files):,} set aside")
    _some(f"  {f['file']}: {f['reason']}" for f in files)
    return 0


def _some(lines: Iterable[str], most: int = 50) -> None:
    """Print at most `most` lines, then how many more there are (`--json` has them all)."""
    rest = list(lines)
    for line in rest[:most]:
        print(line)
    if len(rest) > most:
        print(f"  ... and {len(rest) - most:,} more (--json lists every one)")


def _change(args: argparse.Namespace, settings: Any, store_path: Path) -> str:
    """Drop or release one thing; what was done, in one line."""
    from sparseeval.pipeline.store import Store
    from sparseeval.pipeline.store import quarantine as q

    if args.action == "drop" and args.benchmark:
        with Store.open(store_path, wait_s=args.wait) as store:
            n = q.drop_set_aside(store, args.benchmark, settings.matrix.max_missing_model_frac)
        return f"dropped {n:,} result(s) that {args.benchmark} set aside"
    if not args.target:
        raise UserError(f"quarantine {args.action} needs a file (or --benchmark NAME to drop)")
    target = Path(args.target)
    if args.action == "release":
        return f"released {target}: back at {q.release_file(target)}, read on the next run"
    if target.is_file() and q.FAILED_DIR in target.absolute().parts:
        q.drop_file(target)
        return f"deleted {target} and its reason"
    with Store.open(store_path, wait_s=args.wait) as store:
        n = q.drop_rows(store, [args.target, str(target.absolute())])
    return f"dropped {n:,} quarantined row(s) of {args.target}"


def _inboxes(args: argparse.Namespace, settings: Any) -> list[Path]:
    given = list(args.inbox)
    given += [
        Path(s.partition(":")[2].strip())
        for s in settings.sources.sources
        if s.startswith("inbox:")
    ]
    return given


__all__ = [
    "EPILOG",
    "add_quarantine_command",
    "run_quarantine",
]
