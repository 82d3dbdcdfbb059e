"""Refresh on an existing Dask cluster beside the local runners: the same cold refresh of a
synthetic leaderboard with the thread runner, and on a scheduler + N workers started as
separate processes on 127.0.0.1 (`dask_address`, the home on a path all processes see).

    python bench/dask_cluster.py                       # 1,000 models, 2 benchmarks, 30 anchors
    python bench/dask_cluster.py --models 2000 --workers 2

Prints a table: runner, wall seconds, trained and published benchmarks, the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed


def cold_refresh(home: Path, spec: str, overrides: dict) -> tuple[float, object]:
    """One cold `refresh` of the synthetic source `spec` in a fresh `home`; (seconds, summary)."""
    from sparseeval.flows.refresh import refresh

    t0 = time.perf_counter()
    out = refresh(
        sources=[spec], home=str(home), settings_overrides=overrides | {"allow_demo": True}
    )
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--anchors", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="sparseeval-dask-"))
    os.environ.update(
        PREFECT_HOME=str(root / "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_RESULTS_LOCAL_STORAGE_PATH=str(root / "results"), PREFECT_LOGGING_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
    )  # fmt: skip
    os.environ.pop("PREFECT_API_URL", None)
    from distributed import LocalCluster
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    spec = f"synthetic:n_models={args.models},seed=0"
    base = {"n_anchors": args.anchors, "workers": args.workers, "suite": False}
    rows = []
    with prefect_test_harness(server_startup_timeout=120):
        secs, out = cold_refresh(root / "thread", spec, base | {"task_runner": "thread"})
        rows.append(("thread", secs, out, os.getloadavg()[0]))
        os.environ |= {"PREFECT_API_URL": PREFECT_API_URL.value(), "OMP_NUM_THREADS": "1"}
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster:  # fmt: skip
            addr = {"task_runner": "dask", "dask_address": cluster.scheduler_address}
            secs, out = cold_refresh(root / "cluster", spec, base | addr)
            rows.append(
                (f"dask cluster ({args.workers} worker processes)", secs, out, os.getloadavg()[0])
            )
    print(f"cold refresh, {args.models:,} models, {args.anchors} anchors, workers={args.workers}")
    print(f"{'runner':<36} {'wall s':>8} {'trained':>8} {'published':>10} {'load':>6}")
    for name, secs, out, load in rows:  # load: the 1-minute average as each run ended
        print(f"{name:<36} {secs:>8.1f} {out.n_trained:>8} {out.n_published:>10} {load:>6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
