"""Suite members on real data: each reader's 90% coverage as published (pool check, top edge).

metabench's models in all five benchmarks (`bench/suite.py`'s split: 400 random test, 200
validation, 200 calibration models, training the rest), one `SuiteSparseEval` at k anchors;
per reader (the average, each benchmark's joint and own readers): the pool checks with their
top edges (`method.pool.suite_pool_checks`, as `pipeline.suite_recipe` fits them) and, on the
test models, coverage and mean width of the plain conformal interval and of the interval a
user gets (`consume.scoring.flags.bounds`: flagged models widened, the top edge).

    cd bench && nice python suite_members.py --seeds 1 --anchors 50 --predictor nnridge \
        [--test strongest]
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
from pathlib import Path

import cloudpickle
import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from suite import BENCHMARKS, N_TEST, common_models, split_rows

from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import bounds
from sparseeval.method.estimator import SparseEval
from sparseeval.method.pool import suite_pool_checks
from sparseeval.method.suite import AVERAGE, SuiteSparseEval, suite_average


def fitted(X, y, k: int, seed: int, predictor: str, rows, cache: str | None):
    """(suite, fit s) of one seed, from `cache` (a pickle) when there; the pool checks are
    fitted on each run (they are what a change to `method.pool` changes)."""
    path = cache and Path(cache)
    if path and path.exists():
        return pickle.loads(path.read_bytes())
    _, va, ca, tr = rows
    take = lambda d, r: {b: v[r] for b, v in d.items()}  # noqa: E731
    t = time.perf_counter()
    est = SparseEval(seed=seed, predictor=predictor, progress=lambda s: None)
    suite = SuiteSparseEval(k, est).fit(take(X, tr), take(y, tr), take(X, va), take(y, va))
    suite.calibrate(take(X, ca), take(y, ca))
    out = suite, time.perf_counter() - t
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(cloudpickle.dumps(out))
    return out


def run_seed(X, y, k: int, seed: int, predictor: str, held_out=None, cache=None) -> list[str]:
    """One seed; `held_out` (row indices) replaces the random test models when given;
    `cache`: a file keeping the seed's suite fit (a rerun fits only the pool checks)."""
    rows = split_rows(len(next(iter(y.values()))), seed, held_out)
    te = rows[0]
    take = lambda d, r: {b: v[r] for b, v in d.items()}  # noqa: E731
    suite, fit_s = fitted(X, y, k, seed, predictor, rows, cache)
    t = time.perf_counter()
    _, _, ca, tr = rows
    pools = suite_pool_checks(suite, take(X, tr), take(X, ca), take(y, tr))
    pool_s = time.perf_counter() - t
    Xt = take(X, te)
    joint, XA = suite.predict(Xt), suite.joint_input(Xt)
    truth = take(y, te) | {AVERAGE: suite_average(take(y, te))}
    lines = [f"seed {seed}: suite fit {fit_s:.0f} s, pool checks with edges {pool_s:.0f} s"]
    readers = [(AVERAGE, AVERAGE, joint[AVERAGE], XA, suite.calibration_residuals_[AVERAGE],
                suite.calibration_predictions_[AVERAGE])]  # fmt: skip
    for b in BENCHMARKS:
        own = suite.estimators_[b].predict(Xt[b])
        readers += [(f"{b}/joint", b, joint[b], XA, suite.calibration_residuals_[b],
                     suite.calibration_predictions_[b]),
                    (f"{b}/own", b, own, Xt[b][:, suite.estimators_[b].anchors_],
                     suite.own_calibration_residuals_[b],
                     suite.own_calibration_predictions_[b])]  # fmt: skip
    lines.append("| reader | plain coverage | plain width | published coverage | published width |"
                 " flagged |")  # fmt: skip
    lines.append("|---|---|---|---|---|---|")
    for name, b, pred, XR, res, cal_pred in readers:
        conf = ConformalInterval.fit(res, 0.9, pred=cal_pred)
        lo, hi = conf.interval(pred)
        plo, phi, _ = bounds(pools[name], conf, XR, pred)
        flagged = int(pools[name].flagged(XR, pred).sum())
        plain, published = cover(lo, hi, truth[b]), cover(plo, phi, truth[b])
        lines.append(f"| {name} | {plain:.1f}% | {100 * np.mean(hi - lo):.1f} | {published:.1f}%"
                     f" | {100 * np.mean(phi - plo):.1f} | {flagged} |")  # fmt: skip
    return lines


def cover(low, high, true) -> float:
    return 100 * float(np.mean((true >= low - 1e-12) & (true <= high + 1e-12)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--anchors", type=int, default=50)
    ap.add_argument("--predictor", default="nnridge")
    ap.add_argument("--test", choices=("random", "strongest"), default="random",
                    help="test models: 400 at random, or the strongest decile by leaderboard "
                    "average (never trained on)")  # fmt: skip
    ap.add_argument("--cache", help="a folder keeping each seed's fit (reruns read it)")
    args = ap.parse_args()
    X, y, models = common_models()
    held_out = None
    if args.test == "strongest":
        from newcomers import leaderboard_meta

        avg, _ = leaderboard_meta(models)
        held_out = np.flatnonzero(avg >= np.nanquantile(avg, 0.9))
    n = N_TEST if held_out is None else len(held_out)
    print(f"{len(models)} models in all five benchmarks; {n} {args.test} test models", flush=True)
    for seed in range(args.seeds):
        name = f"suite-s{seed}-k{args.anchors}-{args.predictor}-{args.test}.pkl"
        cache = args.cache and f"{args.cache}/{name}"
        lines = run_seed(X, y, args.anchors, seed, args.predictor, held_out, cache)
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
