"""Coverage benchmark: do the published 90% intervals cover held-out models' true accuracy?

Two kinds of data, each fitted per seed exactly as the pipeline fits it:

* metabench (`arc,gsm8k,mmlu,truthfulqa,winogrande`, data in
  `../shared/data/metabench_reduced`): 400 test models, 200 validation models and 200
  calibration models taken from the training share, the default `SparseEval` at k anchors,
  then `calibrate` on the calibration models.
* the built-in demo leaderboard (`demo`, or `demo:arc+gsm8k`): the synthetic 1,000-model
  leaderboard that `sparseeval refresh` fills an empty store with, split and fitted by the
  pipeline's own steps (`recipe.split_step` and `recipe.select_step`: stable split with
  n_test 200, n_valid 200, n_calib 200 capped at a fifth of the training share), with
  `Settings(seed=seed)`.

The interval is the published one (`ConformalInterval.fit` on `calibration_residuals_`);
for contrast, "validation" is what the validation residuals (which also chose the anchors
and the predictor) would have given, and with `--cross-fit` what
`SparseEval.cross_calibrate` (5 extra fits on training + validation models, no calibration
models) gives. Prints the test coverage per benchmark (mean over
seeds, min, max) and the mean half-width; `--out` appends one JSON line per fit.

    python bench/coverage.py                            # 5 metabench benchmarks, k = 50, 3 seeds
    python bench/coverage.py --data arc --seeds 1
    python bench/coverage.py --data demo --seeds 5 --anchors 100
    python bench/coverage.py --summarize bench/results/coverage_*.jsonl   # table of earlier runs
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from accuracy import QUIET, load

from sparseeval import Settings
from sparseeval.consume.conformal import ConformalInterval
from sparseeval.method.estimator import SparseEval

N_TEST, N_VALID, N_CALIB = 400, 200, 200
DEMO = ("arc", "gsm8k", "hellaswag", "mmlu", "truthfulqa", "winogrande")


SOURCES = ("calibration", "validation", "cross-fit")


def _row(est, pred, true, level: float, n_calib: int, cross=None) -> dict:
    out = {"n_test": len(true), "n_calib": n_calib, "predictor": est.predictor_name_}
    sources = [("calibration", est.calibration_residuals_), ("validation", est.valid_residuals_)]
    if cross is not None:
        sources.append(("cross-fit", cross))
    for name, residuals in sources:
        ci = ConformalInterval.fit(residuals, level)
        out[name] = {"coverage": ci.coverage(pred, true), "halfwidth": 100 * ci.halfwidth}
    out["calibrated_on"] = est.calibration_source_
    return out


def _cross(est, X, y, train, valid):
    """Residuals of `SparseEval.cross_calibrate` on the same rows (the fit is not changed)."""
    from sklearn.base import clone

    twin = clone(est)
    twin.__dict__.update({k: v for k, v in est.__dict__.items() if k.endswith("_")})
    twin.cross_calibrate(X[train], y[train], X[valid], y[valid])
    return twin.calibration_residuals_


def metabench_seed(X, y, k: int, level: float, seed: int, cross: bool = False) -> dict:
    order = np.random.default_rng(1000 + seed).permutation(len(y))
    test, valid = order[:N_TEST], order[N_TEST : N_TEST + N_VALID]
    calib = order[N_TEST + N_VALID : N_TEST + N_VALID + N_CALIB]
    train = order[N_TEST + N_VALID + N_CALIB :]
    est = SparseEval.from_settings(Settings(), n_anchors=k, seed=seed, **QUIET)
    est.fit(X[train], y[train], X[valid], y[valid])
    est.calibrate(X[calib], y[calib])
    r = _cross(est, X, y, train, valid) if cross else None
    return _row(est, est.predict(X[test]), y[test], level, len(calib), r)


def demo_seed(matrix, k: int, level: float, seed: int, cross: bool = False) -> dict:
    from sparseeval.pipeline.recipe import select_step, split_step

    settings = Settings(seed=seed, n_anchors=k, interval_level=level)
    split = split_step(matrix, settings, "demo")
    est = select_step(matrix, split, settings, lambda s: None)
    X, y = matrix.values, matrix.y
    r = _cross(est, X, y, split.train, split.valid) if cross else None
    return _row(est, est.predict(X[split.test]), y[split.test], level, len(split.calib), r)


def datasets(spec: str):
    """(label, fit-one-seed function) per benchmark named in `--data`."""
    for name in spec.split(","):
        if name == "demo" or name.startswith("demo:"):
            from sparseeval.pipeline.sources import SyntheticLeaderboard

            board = SyntheticLeaderboard().leaderboard
            wanted = name.partition(":")[2].split("+") if ":" in name else DEMO
            for bench in wanted:
                m = board[bench]
                yield f"demo {bench}", (lambda k, lv, s, c, m=m: demo_seed(m, k, lv, s, c))
        else:
            matrix = load(name)
            X, y = matrix.values.astype(np.float32), matrix.y
            yield name, (lambda k, lv, s, c, X=X, y=y: metabench_seed(X, y, k, lv, s, c))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="arc,gsm8k,mmlu,truthfulqa,winogrande")
    parser.add_argument("--anchors", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--out", default=None, help="append one JSON line per fit here")
    parser.add_argument(
        "--cross-fit",
        action="store_true",
        help="also SparseEval.cross_calibrate's residuals (5 extra fits per seed)",
    )
    parser.add_argument("--summarize", nargs="+", metavar="FILE", help="only print the table")
    args = parser.parse_args()
    if args.summarize:
        lines = [ln for p in args.summarize for ln in Path(p).read_text().splitlines()]
        runs = [json.loads(ln) for ln in lines if ln.strip()]
        by_data: dict[tuple, dict] = {}
        for r in runs:  # a later row of the same (data, k, seed) replaces an earlier one
            by_data.setdefault((r["data"], r["k"]), {})[r["seed"]] = r
        print(table([list(v.values()) for v in by_data.values()], args.level))
        return
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    done = []
    for label, fit_one in datasets(args.data):
        runs = []
        for s in seeds:
            t = time.perf_counter()
            r = fit_one(args.anchors, args.level, s, args.cross_fit)
            r |= {"data": label, "k": args.anchors}
            r |= {"seed": s, "seconds": round(time.perf_counter() - t, 1)}
            runs.append(r)
            print(json.dumps(r), flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(r) + "\n")
        done.append(runs)
    print("\n" + table(done, args.level))


def table(groups: list[list[dict]], level: float) -> str:
    """One row per (benchmark, residual source): coverage mean / min / max over seeds."""
    lines = [
        f"| data | k | seeds | residuals from | n calib (mean) | test coverage at {level:.0%} "
        "(mean) | min | max | half-width (pts) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for runs in groups:
        for source in [x for x in SOURCES if x in runs[0]]:
            cov = [r[source]["coverage"] for r in runs]
            width = [r[source]["halfwidth"] for r in runs]
            lines.append(
                f"| {runs[0]['data']} | {runs[0]['k']} | {len(runs)} | {source} "
                f"| {np.mean([r['n_calib'] for r in runs]):.0f} | {np.mean(cov):.1%} "
                f"| {np.min(cov):.1%} | {np.max(cov):.1%} | {np.mean(width):.2f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
