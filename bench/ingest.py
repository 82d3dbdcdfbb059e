"""Ingest and matrix-build speed of the results store on synthetic long tables.

    python bench/ingest.py                    # 5,000 x 1,319 (3 repeats) and 5,000 x 14,042 (1)
    python bench/ingest.py --sizes 5000x1319 --repeats 3
    python bench/ingest.py --wide 10x10000 10x30000   # wide CSV tables: models x item columns

Each case writes a long Parquet table (model, benchmark, item, correct), then times, in a
fresh store: first ingest, re-ingest of the same file (skipped by content hash), forced
re-ingest (row-level comparison, no change), and the matrix build; the build runs in a
child process so its peak RSS is its own.

`--wide MODELSxCOLUMNS`: a wide CSV table (`model` + one column per item) ingested into a
fresh store, with the CPU time (user+sys, DuckDB's threads included) of each staging query
(`db.execute` by .sql name): DuckDB's cost per column grows with the column count; and the
ingest's peak RSS, with the store's DuckDB memory bound (`sql/session.sql`) and with DuckDB's
own default (80% of RAM), alternately, `--repeats` times each:

    python bench/ingest.py --wide 20000x2000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from sparseeval.method.synthetic import make_synthetic
from sparseeval.pipeline.store import LongTable, Store, ingest

BUILD_CHILD = """
import json, sys, time
from sparseeval.pipeline.store import Store, build_matrix

def hwm_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak RSS (Linux): a forked child starts with its parent's
base = hwm_mb()
with Store.open(sys.argv[1], read_only=True) as s:
    t = time.perf_counter(); m, summary = build_matrix(s, sys.argv[2]); dt = time.perf_counter() - t
print(json.dumps({"s": dt, "peak_mb": hwm_mb(), "base_mb": base, "shape": m.shape}))
"""


def write_long(path: Path, n_models: int, n_items: int, seed: int = 0) -> int:
    """A synthetic long table as Parquet (dictionary-encoded ids); returns its row count."""
    m = make_synthetic(n_models, n_items, seed=seed)
    rows = np.repeat(np.arange(n_models, dtype=np.uint32), n_items)
    cols = np.tile(np.arange(n_items, dtype=np.uint32), n_models)
    models = pl.Series(list(m.model_ids), dtype=pl.String).cast(pl.Categorical)
    items = pl.Series(list(m.item_ids), dtype=pl.String).cast(pl.Categorical)
    frame = pl.DataFrame({
        "model": models.gather(rows),
        "benchmark": pl.repeat("bench", len(rows), eager=True).cast(pl.Categorical),
        "item": items.gather(cols),
        "correct": (m.values.reshape(-1) > 0).astype(np.int8),
    })  # fmt: skip
    frame.write_parquet(path, row_group_size=1_000_000)
    return frame.height


def run_case(n_models: int, n_items: int, repeats: int, work: Path) -> dict:
    data = work / f"long_{n_models}x{n_items}.parquet"
    n_rows = write_long(data, n_models, n_items)
    first, skip, force, build, peak = [], [], [], [], []
    for r in range(repeats):
        db = work / f"store_{n_models}x{n_items}_{r}.duckdb"
        with Store.open(db) as store:
            store.add_benchmark("bench")
            first.append(_timed(store, data, False, "ok"))
            skip.append(_timed(store, data, False, "skipped"))
            force.append(_timed(store, data, True, "ok"))
        out = subprocess.run(
            [sys.executable, "-c", BUILD_CHILD, str(db), "bench"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        child = json.loads(out.stdout)
        build.append(child["s"])
        peak.append(child["peak_mb"] - child["base_mb"])
        db_mb = db.stat().st_size / 2**20
        db.unlink()
    med = statistics.median
    return {
        "case": f"{n_models:,} x {n_items:,}",
        "rows": n_rows,
        "repeats": repeats,
        "ingest_s": med(first),
        "rows_per_s": n_rows / med(first),
        "skip_s": med(skip),
        "force_s": med(force),
        "build_s": med(build),
        "build_peak_mb": med(peak),
        "build_rss_mb": child["peak_mb"],
        "db_mb": db_mb,
    }


def _timed(store: Store, data: Path, force: bool, expected: str) -> float:
    t = time.perf_counter()
    (report,) = ingest(store, LongTable(data), force=force)
    dt = time.perf_counter() - t
    assert report.status == expected, report.line()
    assert not force or report.n_unchanged == report.n_read, report.line()
    return dt


def write_wide(path: Path, n_models: int, n_items: int) -> None:
    """A wide CSV of random 0/1 answers: `model` and one column per item."""
    rng = np.random.default_rng(0)
    with open(path, "w") as f:
        f.write("model," + ",".join(f"q{j}" for j in range(n_items)) + "\n")
        for m in range(n_models):
            row = rng.integers(0, 2, n_items, dtype=np.int8).astype(np.uint8) + ord("0")
            f.write(f"m{m}," + ",".join(row.tobytes().decode()) + "\n")


def wide_case(path: Path, n_models: int, n_items: int, bound: bool) -> dict:
    """Ingest one wide CSV into a fresh store; wall and CPU seconds in all and per staging
    query, and the peak RSS (this process: run each case in its own). `bound`: with the
    store's DuckDB memory bound, else DuckDB's default."""
    import resource

    from sparseeval.pipeline.store import WideTable
    from sparseeval.pipeline.store import db as store_db

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    spent: dict[str, float] = {}
    execute = store_db.execute

    def timed(con, name, params):
        c = cpu()
        try:
            execute(con, name, params)
        finally:
            spent[name] = spent.get(name, 0.0) + cpu() - c

    users = [m for name, m in list(sys.modules.items())  # every store module's `execute`
             if name.startswith("sparseeval.pipeline.store") and getattr(m, "execute", None)
             is execute]  # fmt: skip
    for m in users:
        m.execute = timed
    try:
        t, c = time.perf_counter(), cpu()
        with Store.open(path.with_suffix(".duckdb")) as store:
            if not bound:
                store.con.execute("RESET memory_limit")
            (report,) = ingest(store, WideTable(path, "arc"))
        wall, total = time.perf_counter() - t, cpu() - c
    finally:
        for m in users:
            m.execute = execute
    assert report.status == "ok" and report.n_new == n_models * n_items, report.line()
    top = sorted(spent.items(), key=lambda kv: -kv[1])[:3]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"wall_s": wall, "cpu_s": total, "top": top, "peak_mb": peak}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", nargs="+", default=["5000x1319", "5000x14042"])
    p.add_argument("--repeats", type=int, nargs="+", default=[3, 1], help="per size")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--wide", nargs="+", metavar="MxN", help="wide CSV cases instead")
    p.add_argument("--wide-case", nargs=3, help=argparse.SUPPRESS)  # PATH MxN bound|default
    args = p.parse_args(argv)
    if args.wide_case:
        path, size, mode = args.wide_case
        m, n = (int(v) for v in size.split("x"))
        return print(json.dumps(wide_case(Path(path), m, n, mode == "bound")))
    if args.wide:
        return main_wide(args.wide, args.workdir, args.repeats[0])
    repeats = args.repeats + [args.repeats[-1]] * (len(args.sizes) - len(args.repeats))
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        results = []
        for size, rep in zip(args.sizes, repeats, strict=True):
            m, n = (int(v) for v in size.split("x"))
            results.append(run_case(m, n, rep, Path(tmp)))
            print(f"done {size}", file=sys.stderr, flush=True)
    header = (
        "| case | rows | runs | ingest s | rows/s | re-ingest (hash skip) s | "
        "forced re-ingest (no change) s | matrix build s | build peak RSS MB (+ over imports) |"
        " DB MB |"
    )
    print(header)
    print("|" + "---|" * 10)
    for r in results:
        print(
            f"| {r['case']} | {r['rows']:,} | {r['repeats']} | {r['ingest_s']:.2f} |"
            f" {r['rows_per_s'] / 1e6:.2f} M | {r['skip_s']:.2f} | {r['force_s']:.2f} |"
            f" {r['build_s']:.2f} | {r['build_rss_mb']:.0f} (+{r['build_peak_mb']:.0f}) |"
            f" {r['db_mb']:.0f} |"
        )


def main_wide(sizes: list[str], workdir: Path | None, repeats: int) -> None:
    """The wide CSV cases' table, with and without the store's memory bound, alternately,
    each ingest in its own process (its peak RSS its own); medians of `repeats`."""
    import os

    from _results import command_line, provenance, write_section

    rows = ["| wide CSV (models x item columns) | DuckDB memory | runs | ingest wall s |"
            " ingest CPU s | peak RSS MB | CPU s of the top staging queries | load |",
            "|" + "---|" * 8]  # fmt: skip
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for size in sizes:
            m, n = (int(v) for v in size.split("x"))
            path = Path(tmp) / f"wide_{size}.csv"
            write_wide(path, m, n)
            runs: dict[str, list[dict]] = {"bound": [], "default": []}
            for _ in range(repeats):
                for mode in runs:
                    path.with_suffix(".duckdb").unlink(missing_ok=True)
                    out = subprocess.run([sys.executable, __file__, "--wide-case", str(path),
                                          size, mode], check=True, capture_output=True,
                                         text=True)  # fmt: skip
                    runs[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            for mode, rs in runs.items():
                med = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s",
                                                                        "peak_mb")}  # fmt: skip
                top = ", ".join(f"{k} {v:.1f}" for k, v in rs[-1]["top"])
                what = "bounded (sql/session.sql)" if mode == "bound" else "DuckDB's default"
                rows.append(f"| {m:,} x {n:,} | {what} | {len(rs)} | {med['wall_s']:.1f} |"
                            f" {med['cpu_s']:.1f} | {med['peak_mb']:,.0f} | {top} |"
                            f" {load} |")  # fmt: skip
    table = "\n".join(rows)
    print(table)
    write_section("### Wide CSV: peak memory with and without the store's bound",
                  f"`{command_line('ingest.py', sys.argv[1:])}` on {provenance()}.\n\n{table}\n",
                  under="## Ingest (`python bench/ingest.py`, idle machine)")  # fmt: skip


if __name__ == "__main__":
    main()
