"""Refresh benchmark: cold, warm (no new data) and incremental (new models on one benchmark).

Six synthetic benchmarks shaped like the Open LLM Leaderboard v1 (1,172 / 1,319 / 10,042 /
14,042 / 817 / 1,267 items), 5,000 models, 100 anchors, the default settings otherwise.

    python bench/refresh.py                      # the issue's sizes
    python bench/refresh.py --models 1000 --scale 0.1 --anchors 30 --n-test 0.1 --n-valid 0.1

Prefect runs on its own temporary server; its start-up is timed separately.

Measured: bench/RESULTS.md, section Refresh.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", type=int, default=5000)
    ap.add_argument("--new-models", type=int, default=100)
    ap.add_argument("--new-benchmark", default="arc")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply item counts")
    ap.add_argument("--anchors", type=int, default=100)
    ap.add_argument("--n-test", type=float, default=200, help="count, or a fraction < 1")
    ap.add_argument("--n-valid", type=float, default=200, help="count, or a fraction < 1")
    ap.add_argument("--home", default=None, help="state folder (default: a fresh temp dir)")
    ap.add_argument("--task-runner", default="thread", choices=["thread", "dask"])
    args = ap.parse_args(argv)

    home = Path(args.home or tempfile.mkdtemp(prefix="sparseeval-bench-"))
    shutil.rmtree(home, ignore_errors=True)
    prefect_dir = home / "prefect"
    prefect_dir.mkdir(parents=True)
    os.environ.update(
        PREFECT_HOME=str(prefect_dir),
        PREFECT_RESULTS_LOCAL_STORAGE_PATH=str(prefect_dir / "results"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
    )
    os.environ.pop("PREFECT_API_URL", None)
    from prefect.testing.utilities import prefect_test_harness
    from sparseeval.flows.refresh import refresh

    from sparseeval.method.synthetic import OLLM_V1_ITEMS

    items = {b: max(20, round(n * args.scale)) for b, n in OLLM_V1_ITEMS.items()}
    total = args.models + args.new_models
    spec = f"n_models={total},seed=0"
    if args.scale != 1.0:  # the spec carries only named item sets; scaled runs pass their own
        from sparseeval.pipeline import sources

        sources.DEFAULT_SYNTHETIC_ITEMS.clear()
        sources.DEFAULT_SYNTHETIC_ITEMS.update(items)
        spec += ",items=default"
    else:
        spec += ",items=ollm"
    overrides = {
        "task_runner": args.task_runner,
        "n_test": args.n_test,
        "n_valid": args.n_valid,
        "sources": [],
    }  # the warm run passes no sources: no watched ones either
    rows = []

    t0 = time.perf_counter()
    with prefect_test_harness(server_startup_timeout=120):
        startup = time.perf_counter() - t0
        for name, sources in (
            ("cold", [f"synthetic:{spec},models=0-{args.models}"]),
            ("warm (no new data)", []),
            (
                f"incremental (+{args.new_models} models on {args.new_benchmark})",
                [f"synthetic:{spec},models={args.models}-{total},benchmarks={args.new_benchmark}"],
            ),
        ):
            t = time.perf_counter()
            run = refresh(
                sources=sources,
                home=str(home),
                n_anchors=args.anchors,
                settings_overrides=overrides,
                fill_if_empty=False,
            )
            secs = time.perf_counter() - t
            trained = [r.benchmark for r in run.results if r.trained]
            rows.append(
                (name, secs, run.ingest.seconds, run.n_trained, ",".join(trained) or "-",
                 run.n_published)
            )  # fmt: skip
            print(f"{name}: {secs:.1f}s", file=sys.stderr, flush=True)
            maes = {r.benchmark: round(r.fit.test_metrics["mae"], 2) for r in run.results if r.fit}
            print(f"  test MAE (points): {maes}", file=sys.stderr, flush=True)

    print(
        f"\nrefresh benchmark: {args.models:,} models, {len(items)} benchmarks"
        f" ({', '.join(f'{b} {n:,}' for b, n in items.items())} items), {args.anchors} anchors,"
        f" task runner {args.task_runner}, {os.cpu_count()} CPUs"
    )
    print(f"Prefect temporary server start-up: {startup:.1f}s (not included below)\n")
    head = (
        f"{'run':<38}{'total s':>9}{'ingest s':>10}{'trained':>9}  {'which':<50}{'published':>10}"
    )
    print(head)
    print("-" * len(head))
    for name, secs, ing, n, which, pub in rows:
        print(f"{name:<38}{secs:>9.1f}{ing:>10.1f}{n:>9}  {which:<50}{pub:>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
