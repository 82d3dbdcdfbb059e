"""Speed benchmark: wall time, CPU time (user+sys) and peak memory of one full SparseEval fit.

One fit = adaptive initialization + refinement (at most 40 steps, stopping at the first
rejected swap) + the final predictor (chosen on validation, then refit), at 100 anchors
on a synthetic 5,000 x 1,319 matrix (200 test, 200 validation models).
Each configuration runs in a fresh child process (so peak RSS is its own); the table
shows medians over `--repeats` runs.

    python bench/speed.py                  # our defaults and the paper's recipe, 3 runs
    python bench/speed.py --repeats 1 --recipes ours
    python bench/speed.py --profile 2000   # cProfile of one fit on 2,000 x 1,319 (in-process)
    python bench/speed.py --recipes ours --set ensemble=1   # a setting other than the default
    python bench/speed.py --repeats 1 --recipes ours,reference,ours --reference PATH
        # paired with the paper's released code (a copy of its gd_cluster_mlp.py: see
        # bench/reference.py), one run each in turn; prints the wall and CPU ratios
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from sparseeval import Settings, make_synthetic, split_models
from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import evaluate
from sparseeval.method.paper import PaperSparseEval

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/reference.py, _results.py
from _results import command_line, provenance, write_section

QUIET = {"progress": lambda s: None}


def one_fit(
    recipe: str, seed: int, queue, overrides: dict | None = None, reference: str | None = None
) -> None:
    m = make_synthetic(5000, 1319, seed=0)
    s = split_models(m.model_ids, 200, 200, seed=seed)
    X, y = m.values.astype(np.float32), m.y
    if recipe == "reference":
        queue.put(_reference_fit(reference, X, s, seed))
        return
    est = (
        SparseEval.from_config(
            Settings.of(**(overrides or {})).values(), n_anchors=100, seed=seed, **QUIET
        )
        if recipe == "ours"
        else PaperSparseEval(100, seed=seed, **QUIET)
    )
    base = resource.getrusage(resource.RUSAGE_SELF)
    load0, start = os.getloadavg()[0], time.perf_counter()
    est.fit(X[s.train], y[s.train], X_valid=X[s.valid], y_valid=y[s.valid])
    seconds = time.perf_counter() - start
    end = resource.getrusage(resource.RUSAGE_SELF)
    peak = end.ru_maxrss
    queue.put(
        {
            "recipe": recipe,
            "settings": overrides or {},
            "seed": seed,
            "seconds": seconds,
            "cpu_s": end.ru_utime + end.ru_stime - base.ru_utime - base.ru_stime,
            "load": [load0, os.getloadavg()[0]],
            "peak_mb": peak / 1024,
            "fit_mb": (peak - base.ru_maxrss) / 1024,
            "mae": evaluate(est.predict(X[s.test]), y[s.test])["mae"],
        }
    )


def _reference_fit(path: str, X: np.ndarray, split, seed: int) -> dict:
    """One run of the paper's released code on the CPU (its own test MAE; `bench/reference.py`)."""
    from reference import load_reference, run_reference

    module = load_reference(path)
    base = resource.getrusage(resource.RUSAGE_SELF)
    load0 = os.getloadavg()[0]
    run = run_reference(module, X, split, 100, "cpu")
    end = resource.getrusage(resource.RUSAGE_SELF)
    return {"recipe": "reference", "settings": {}, "seed": seed, "seconds": run["seconds"],
            "cpu_s": end.ru_utime + end.ru_stime - base.ru_utime - base.ru_stime,
            "load": [load0, os.getloadavg()[0]], "peak_mb": end.ru_maxrss / 1024,
            "fit_mb": (end.ru_maxrss - base.ru_maxrss) / 1024, "mae": run["mae"]}  # fmt: skip


def profile(n_models: int, k: int, overrides: dict, top: int = 30) -> None:
    """One fit of our defaults under cProfile; prints the functions by cumulative time."""
    import cProfile
    import pstats

    m = make_synthetic(n_models, 1319, seed=0)
    s = split_models(m.model_ids, 200, 200, seed=0)
    X, y = m.values.astype(np.float32), m.y
    est = SparseEval.from_config(Settings.of(**overrides).values(), n_anchors=k, seed=0, **QUIET)
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.runcall(est.fit, X[s.train], y[s.train], X_valid=X[s.valid], y_valid=y[s.valid])
    print(f"{n_models} x 1319, k={k}: {time.perf_counter() - start:.1f} s under cProfile")
    print(f"init scores {est.selector_.init_scores_}, {len(est.selector_.history_)} refine steps")
    print(f"predictor {est.predictor_name_}, validation MAE {est.valid_scores_}")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--recipes", default="ours,paper")
    parser.add_argument("--profile", type=int, metavar="N_MODELS", help="cProfile one fit")
    parser.add_argument("--anchors", type=int, default=100, help="with --profile")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=INT",
                        help="one of our settings, e.g. ensemble=1")  # fmt: skip
    parser.add_argument("--reference", help="a copy of the paper's gd_cluster_mlp.py")
    parser.add_argument(
        "--section", metavar="HEADING", help="also write the table into bench/RESULTS.md"
    )
    args = parser.parse_args()
    measured = provenance()
    if "reference" in args.recipes.split(",") and not args.reference:
        parser.error("the recipe 'reference' needs --reference PATH")
    overrides = {k: int(v) for k, _, v in (s.partition("=") for s in args.set)}
    if args.profile:
        profile(args.profile, args.anchors, overrides)
        return
    ctx = mp.get_context("spawn")
    rows = []
    for recipe in args.recipes.split(","):
        for seed in range(args.repeats):
            queue = ctx.Queue()
            proc = ctx.Process(
                target=one_fit, args=(recipe, seed, queue, overrides, args.reference)
            )
            proc.start()
            rows.append(queue.get())
            proc.join()
            print(json.dumps(rows[-1]), flush=True)
    text = table(rows, args.recipes.split(","))
    print("\n" + text)
    if args.section:
        command = command_line("speed.py", sys.argv[1:])
        write_section(args.section, f"`{command}` on {measured}, {os.cpu_count()} CPU cores,"
                      f" load average {os.getloadavg()[0]:.2f} at the end.\n\n{text}")  # fmt: skip


def table(rows: list[dict], recipes: list[str]) -> str:
    """Medians per recipe, and reference / ours ratios of wall and CPU seconds when both ran."""
    out = ["| recipe | runs | wall s (each) | median wall s | median CPU s | median peak RSS MB"
           " | median MAE (pts) |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for recipe in dict.fromkeys(recipes):
        r = [x for x in rows if x["recipe"] == recipe]

        def med(key: str, r: list[dict] = r) -> float:
            return statistics.median(x[key] for x in r)

        each = ", ".join(f"{x['seconds']:.1f}" for x in r)
        out.append(f"| {recipe} | {len(r)} | {each} | {med('seconds'):.1f} | {med('cpu_s'):.1f}"
                   f" | {med('peak_mb'):.0f} | {med('mae'):.3f} |")  # fmt: skip
    ours = [x for x in rows if x["recipe"] == "ours"]
    ref = [x for x in rows if x["recipe"] == "reference"]
    if ours and ref:
        out.append("")
        for key, name in (("seconds", "wall"), ("cpu_s", "CPU")):
            ratio = statistics.median(x[key] for x in ref) / statistics.median(x[key] for x in ours)
            out.append(f"reference / ours, median {name} seconds: **{ratio:.1f}x**  ")
    return "\n".join(out)


if __name__ == "__main__":
    main()
