"""Suite benchmark: one reader per benchmark over every benchmark's anchors, on metabench.

The models present in all five metabench benchmarks (`../shared/data/metabench_reduced`,
train splits, the only ones with responses: 2,461 models), per seed: 400 test, 200
validation and 200 calibration models at random, training the rest (1,661). One
`SuiteSparseEval` at k anchors per benchmark; its per-benchmark fits *are* today's
defaults (`SparseEval` on the same split), so both columns share anchors and models.
Reported per benchmark and seed: MAE of the defaults and of the suite, the reader the
suite kept, and coverage of the 90% intervals (calibration models); and the suite average
(mean of the five accuracies): its MAE and coverage.

    python bench/suite.py --seeds 5 --anchors 50
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import polars as pl

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from accuracy import load

from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.method.estimator import SparseEval
from sparseeval.method.suite import AVERAGE, SuiteSparseEval, suite_average
from sparseeval.pipeline import suite_recipe

BENCHMARKS = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")
N_TEST, N_VALID, N_CALIB = 400, 200, 200


def common_models(names=BENCHMARKS) -> tuple[dict, dict, list[str]]:
    """X and y per benchmark over the models every benchmark has, in one order."""
    aligned = suite_recipe.common_models({b: load(b) for b in names})
    X = {b: m.values for b, m in aligned.items()}
    y = {b: m.y for b, m in aligned.items()}
    return X, y, list(next(iter(aligned.values())).model_ids)


def split_rows(n: int, seed: int, held_out: np.ndarray | None = None) -> list[np.ndarray]:
    """Test, validation, calibration and training rows of `n` models for one seed; `held_out`
    (row indices) replaces the random test models when given."""
    order = np.random.default_rng(2000 + seed).permutation(n)
    if held_out is None:
        return np.split(order, np.cumsum([N_TEST, N_VALID, N_CALIB]))
    rest = np.split(order[~np.isin(order, held_out)], np.cumsum([N_VALID, N_CALIB]))
    return [held_out, *rest]


def run_seed(
    X, y, k: int, seed: int, held_out: np.ndarray | None = None, cache: str | None = None
) -> list[dict]:
    """One seed; `held_out` (row indices) replaces the random test models when given."""
    te, va, ca, tr = split_rows(len(next(iter(y.values()))), seed, held_out)
    take = lambda d, r: {b: v[r] for b, v in d.items()}  # noqa: E731
    start = time.perf_counter()
    suite = SuiteSparseEval(k, SparseEval(seed=seed, progress=lambda s: None))
    suite.fit(take(X, tr), take(y, tr), take(X, va), take(y, va))
    seconds = time.perf_counter() - start
    suite.calibrate(take(X, ca), take(y, ca))
    if cache:
        save_suite(cache, suite, X, y, {"train": tr, "calib": ca, "test": te})
    joint = suite.predict(take(X, te))
    truth = take(y, te) | {AVERAGE: suite_average(take(y, te))}
    own = {b: suite.estimators_[b].predict(X[b][te]) for b in BENCHMARKS}
    own_cal = {b: suite.estimators_[b].predict(X[b][ca]) - y[b][ca] for b in BENCHMARKS}
    own[AVERAGE] = suite_average({b: own[b] for b in BENCHMARKS})
    own_cal[AVERAGE] = suite_average(own_cal)
    rows = []
    for b in (*BENCHMARKS, AVERAGE):
        row = {"benchmark": b, "seed": seed, "k": k, "seconds": seconds}
        for name, pred, residuals in (
            ("defaults", own[b], own_cal[b]),
            ("suite", joint[b], suite.calibration_residuals_[b]),
        ):
            interval = ConformalInterval.fit(residuals, 0.9)
            row[f"{name}_mae"] = 100 * float(np.mean(np.abs(pred - truth[b])))
            row[f"{name}_signed"] = 100 * float(np.mean(pred - truth[b]))
            row[f"{name}_coverage"] = 100 * interval.coverage(pred, truth[b])
            row[f"{name}_halfwidth"] = 100 * interval.halfwidth
        row["reader"] = suite.reader_names_.get(b, "")
        rows.append(row)
    return rows


def save_suite(path: str, suite, X, y, rows: dict[str, np.ndarray]) -> None:
    """The suite's joint anchor answers, joint and own estimates and truths per part (flags)."""
    arrays = {}
    for part, r in rows.items():
        Xr = {b: v[r] for b, v in X.items()}
        joint = suite.predict(Xr)
        arrays |= {f"X_{part}": suite.joint_input(Xr).astype(np.int8), f"rows_{part}": r,
                   f"y_{part}_{AVERAGE}": suite_average({b: v[r] for b, v in y.items()}),
                   f"pred_{part}_{AVERAGE}": joint[AVERAGE]}  # fmt: skip
        for b in BENCHMARKS:
            arrays |= {f"y_{part}_{b}": y[b][r], f"pred_{part}_{b}": joint[b],
                       f"own_{part}_{b}": suite.estimators_[b].predict(X[b][r])}  # fmt: skip
    arrays |= {f"columns_{b}": suite.columns_[b] for b in BENCHMARKS}
    from newcomers import random_answers

    noise = {b: random_answers(len(rows["test"]), v.shape[1], seed=70 + i)
             for i, (b, v) in enumerate(X.items())}  # fmt: skip
    joint = suite.predict(noise)
    arrays |= {"X_random": suite.joint_input(noise).astype(np.int8)}
    arrays |= {f"pred_random_{b}": v for b, v in joint.items()}
    arrays |= {f"own_random_{b}": suite.estimators_[b].predict(noise[b]) for b in BENCHMARKS}
    np.savez_compressed(path, **arrays)


def table(rows: list[dict]) -> str:
    df = pl.DataFrame(rows)
    agg = df.group_by("benchmark", maintain_order=True).agg(
        pl.len().alias("seeds"),
        pl.col("defaults_mae").mean(),
        pl.col("suite_mae").mean(),
        (pl.col("suite_mae") / pl.col("defaults_mae")).mean().alias("ratio"),
        (pl.col("suite_mae") < pl.col("defaults_mae")).sum().alias("suite_better"),
        pl.col("defaults_signed").mean(),
        pl.col("suite_signed").mean(),
        pl.col("defaults_coverage").mean(),
        pl.col("suite_coverage").mean(),
        pl.col("suite_coverage").min().alias("cov_min"),
        pl.col("suite_coverage").max().alias("cov_max"),
        pl.col("reader").unique().sort().str.join("/").alias("readers"),
    )
    lines = [
        "| benchmark | seeds | defaults MAE | suite MAE | suite/defaults | suite better | "
        "signed error defaults / suite | 90% coverage defaults | suite 90% coverage (min-max) "
        "| readers kept |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in agg.iter_rows(named=True):
        lines.append(
            f"| {r['benchmark']} | {r['seeds']} | {r['defaults_mae']:.3f} | {r['suite_mae']:.3f} | "
            f"{r['ratio']:.3f} | {r['suite_better']}/{r['seeds']} | {r['defaults_signed']:+.3f} / "
            f"{r['suite_signed']:+.3f} | {r['defaults_coverage']:.1f}% | "
            f"{r['suite_coverage']:.1f}% ({r['cov_min']:.1f}-{r['cov_max']:.1f}) | {r['readers']} |"
        )
    per = df.filter(pl.col("benchmark") != AVERAGE)
    d, s = per["defaults_mae"].mean(), per["suite_mae"].mean()
    lines.append(
        f"\nmean over the five benchmarks: defaults {d:.3f}, suite {s:.3f} "
        f"({100 * (1 - s / d):.1f}% lower); median fit time "
        f"{df['seconds'].median():.0f} s per seed (5 benchmarks)"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--anchors", type=int, default=50)
    ap.add_argument("--out", default="bench/out/suite.jsonl")
    ap.add_argument("--test", choices=("random", "strongest"), default="random",
                    help="test models: 400 at random, or the strongest decile by leaderboard "
                    "average (never trained on)")  # fmt: skip
    ap.add_argument("--cache", default=None, help="save each seed's fit here (flags, newcomers.py)")
    ap.add_argument("--table", nargs="*", help="only print the table of these jsonl files")
    args = ap.parse_args()
    if args.table:
        rows = [json.loads(line) for p in args.table for line in Path(p).read_text().splitlines()]
        print(table(rows))
        return
    X, y, models = common_models()
    print(f"{len(models)} models in all five benchmarks", flush=True)
    held_out = None
    if args.test == "strongest":
        from newcomers import leaderboard_meta

        avg, _ = leaderboard_meta(models)
        held_out = np.flatnonzero(avg >= np.nanquantile(avg, 0.9))
        print(f"test: the strongest decile, {len(held_out)} models", flush=True)
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        cache = args.cache and f"{args.cache}/suite-s{seed}-{args.test}.npz"
        new = run_seed(X, y, args.anchors, seed, held_out, cache)
        new = [r | {"test": args.test} for r in new]
        rows += new
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # bench/out/ (ignored)
        with open(args.out, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in new)
        print(
            f"seed {seed}: "
            + ", ".join(
                f"{r['benchmark']} {r['defaults_mae']:.3f}->{r['suite_mae']:.3f}" for r in new
            ),
            flush=True,
        )
    print(table(rows))


if __name__ == "__main__":
    main()
