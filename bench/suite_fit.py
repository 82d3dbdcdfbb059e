"""Suite fit speed: the metabench suite as the refresh fits it (`suite_recipe.fit_suite`).

The five metabench benchmarks (`../shared/data/metabench_reduced`, train splits) over the
2,461 models all five have, default settings (100 anchors per benchmark). Two runs:
  cold   nothing cached: the suite selects every benchmark's anchors itself
  reuse  each benchmark's own fit of the same matrix and settings is in the artifacts
         cache first (`recipe.fit_step`, as the refresh leaves it): the suite reuses them
Both runs must give the same suite (every estimate on the test models, bit for bit).
Each progress line is printed with the seconds since the fit began.

    python bench/suite_fit.py                # cold, then reuse
    python bench/suite_fit.py --runs cold
    python bench/suite_fit.py --set n_anchors=30 --set epochs=200 --set ensemble=1   # quick
    python bench/suite_fit.py --runs cold --pools pools.json   # also its pool checks, to compare
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from accuracy import load

from sparseeval.pipeline import suite_recipe
from sparseeval.pipeline.artifacts import save_matrix
from sparseeval.pipeline.recipe import fit_step
from sparseeval.pipeline.settings import Settings

BENCHMARKS = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")


def load_average() -> str:
    return os.getloadavg()[0].__format__(".1f")


def timed(start: float):
    # one write per line: fits side by side say lines from several threads at once
    return lambda line: print(f"  {time.perf_counter() - start:6.1f}s {line}\n", end="", flush=True)


def cache_benchmark_fits(aligned: dict, settings: Settings) -> float:
    """Each aligned matrix's own fit in the artifacts cache, as `recipe.fit_step` saves it."""
    start = time.perf_counter()
    for b, m in aligned.items():
        path = save_matrix(m, Path(settings.paths.artifacts_dir) / "matrix" / f"{b}.npz")
        fit_step(suite_recipe.matrix_info(b, path), settings, timed(start))
    return time.perf_counter() - start


def run(name: str, aligned: dict, home: Path, overrides: dict) -> dict:
    settings = Settings.of(home=home, **overrides)
    before = cache_benchmark_fits(aligned, settings) if name == "reuse" else 0.0
    print(f"{name}: suite fit (load {load_average()})", flush=True)
    start = time.perf_counter()
    fit = suite_recipe.fit_suite(aligned, settings, timed(start))
    seconds = time.perf_counter() - start
    print(f"{name}: suite fit {seconds:.1f} s (load {load_average()})", flush=True)
    return {"run": name, "load": load_average(), "seconds": seconds, "before": before,
            "reused": len(fit.suite.reused_), "fit": fit}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="cold,reuse")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=INT",
        help="a setting other than the default (quick runs), e.g. epochs=200",
    )
    ap.add_argument("--pools", metavar="FILE.json", help="write the last run's pool checks here")
    args = ap.parse_args()
    overrides = {k: int(v) for k, _, v in (s.partition("=") for s in args.set)}
    aligned = suite_recipe.common_models({b: load(b) for b in BENCHMARKS})
    first = next(iter(aligned.values()))
    print(f"{first.shape[0]:,} models in all five benchmarks", flush=True)
    rows = []
    for name in args.runs.split(","):
        with tempfile.TemporaryDirectory(prefix="suite-fit-") as home:
            rows.append(run(name, aligned, Path(home), overrides))
    print("\n| run | load (1 min) | suite fit s | benchmark fits before s | benchmarks reused "
          "| suite-average test MAE (pts) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        mae = r["fit"].test_metrics()["average"]["mae"]
        print(f"| {r['run']} | {r['load']} | {r['seconds']:.1f} | {r['before']:.1f} | "
              f"{r['reused']}/{len(BENCHMARKS)} | {mae:.3f} |")  # fmt: skip
    if args.pools:
        Path(args.pools).write_text(json.dumps(rows[-1]["fit"].pool_checks, sort_keys=True))
    if len(rows) == 2:
        a, b = (r["fit"].test_pred for r in rows)
        same = all(np.array_equal(a[k], b[k]) for k in a)
        print(f"\nthe two suites' test estimates are {'identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
