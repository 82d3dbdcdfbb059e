"""Off the pool: the anchors-alone interval, against the leaderboard's score, per held-out group.

Per metabench benchmark (target: the leaderboard score of `*_scores.csv`, as `accuracy.load`)
and held-out group (`next_items.groups`: `random` 400 models, the `strongest` decile by
leaderboard average, whole `orgs` drawn until they hold 10% of the models; training never
sees the group; models whose score their item answers contradict are left out, as the
pipeline quarantines them): validation 200 and calibration 200 models from the rest, training the
remainder; `SparseEval` at k = 50 (predictor `--predictor`, default nnridge). The interval is
the published one (`consume.scoring.flags.bounds`: the adaptive split-conformal half-width, widened
when the pool check flags the model), `before` without the pool's top edge, `after` with it
(`method.pool.fit_edge`, fitted on the training models). Prints coverage, mean width, mean
signed error (estimate - truth), MAE, max error, and the share flagged / in the top edge's zone.

    cd bench && nice python off_pool.py --cache /tmp/off-pool \
        --data arc,gsm8k,mmlu,truthfulqa,winogrande
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
from pathlib import Path

import numpy as np
import polars as pl

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import accuracy
import newcomers
from accuracy import QUIET, load
from newcomers import leaderboard_meta
from next_items import groups

from sparseeval import Settings
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import bounds
from sparseeval.method.estimator import SparseEval
from sparseeval.method.pool import EDGE_RAMP, EDGE_TAIL, estimator_pool_check
from sparseeval.pipeline.store.contradiction import contradicted

N_VALID, N_CALIB = 200, 200
COLUMNS = ("n", "coverage", "width", "signed", "mae", "max_err", "flagged", "zone")
TAIL = float(os.environ.get("EDGE_TAIL", EDGE_TAIL))  # the edges' held-out tail (a probe)
RAMP = float(os.environ.get("EDGE_RAMP", EDGE_RAMP))  # its ramp (a probe; 0: a step)


def fit(X, y, test, seed: int, k: int, path: str, predictor: str):
    """(estimator, train, calib) fitted on everything but `test` (pickled at `path`)."""
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    rest = np.setdiff1d(np.arange(len(y)), test)
    order = np.random.default_rng(1000 + seed).permutation(rest)
    valid, calib, train = (order[:N_VALID], order[N_VALID : N_VALID + N_CALIB],
                           order[N_VALID + N_CALIB :])  # fmt: skip
    est = SparseEval.from_config(
        Settings.of().values(), n_anchors=k, seed=seed, predictor=predictor, **QUIET
    )
    est.fit(X[train], y[train], X_valid=X[valid], y_valid=y[valid]).calibrate(X[calib], y[calib])
    est.progress = est.selector_ = None  # lambdas: not picklable (not needed to predict)
    out = (est, train, calib)
    with open(path, "wb") as f:
        pickle.dump(out, f)
    return out


def quarantined(m):
    """(X, y, ids, leaderboard average) of the models whose score their item answers do not
    contradict (`store.contradiction`: the pipeline quarantines the others; it says how many)."""
    X = m.values.astype(np.float32)
    bad, _ = contradicted((X > 0).mean(1), np.full(len(X), X.shape[1]), m.y)
    print(f"{int(bad.sum())} of {len(X)} models' scores contradicted by their items: left out")
    ids = np.asarray(m.model_ids)[~bad]
    return X[~bad], m.y[~bad], ids, leaderboard_meta(ids)[0]


def rows_of(name, group, X, y, test, fitted, level) -> list[dict]:
    est, train, calib = fitted
    conf = ConformalInterval.fit(
        est.calibration_residuals_, level, pred=est.calibration_predictions_
    )
    pred, XA = est.predict(X[test]), X[test][:, est.anchors_]
    t = time.perf_counter()
    before = estimator_pool_check(est, X[train], X[calib])
    checks = {
        "before": before,
        "after": estimator_pool_check(est, X[train], X[calib], y[train], level, TAIL, RAMP),
    }
    edge_s = time.perf_counter() - t
    out = []
    for label, check in checks.items():
        low, high, _ = bounds(check, conf, XA, pred)
        zone = pred >= check.top.start if check.top else np.zeros(len(pred), bool)
        err, true = 100 * (pred - y[test]), y[test]
        out.append({"data": name, "group": group, "n": len(test), "interval": label,
                    "coverage": float(np.mean((true >= low - 1e-12) & (true <= high + 1e-12))),
                    "width": float(100 * np.mean(high - low)), "signed": float(err.mean()),
                    "mae": float(np.abs(err).mean()), "max_err": float(np.abs(err).max()),
                    "flagged": float(check.flagged(XA, pred).mean()), "zone": float(zone.mean()),
                    "seconds": edge_s})  # fmt: skip
    return out


def table(rows: list[dict]) -> str:
    agg = (pl.DataFrame(rows).group_by("data", "group", "interval", maintain_order=True)
           .agg(pl.len().alias("seeds"), *(pl.col(c).mean() for c in COLUMNS)))  # fmt: skip
    lines = ["| data | held-out group | models | interval | seeds | 90% coverage "
             "| mean width (pts) | mean signed (pts) | MAE (pts) | max error (pts, seeds' mean) "
             "| flagged | in the top zone |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in agg.iter_rows(named=True):
        lines.append(
            f"| {r['data']} | {r['group']} | {r['n']:.0f} | {r['interval']} | {r['seeds']} "
            f"| {r['coverage']:.1%} | {r['width']:.2f} | {r['signed']:+.2f} | {r['mae']:.2f} "
            f"| {r['max_err']:.1f} "
            f"| {r['flagged']:.1%} | {r['zone']:.1%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="arc,gsm8k,mmlu,truthfulqa,winogrande")
    parser.add_argument("--anchors", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--cache", default="/tmp/off-pool-cache")
    parser.add_argument("--predictor", default="nnridge", help="final predictor (auto: slow)")
    parser.add_argument("--metabench", default=str(accuracy.METABENCH))
    args = parser.parse_args()
    accuracy.METABENCH = newcomers.METABENCH = Path(args.metabench)
    os.makedirs(args.cache, exist_ok=True)
    rows = []
    for name in args.data.split(","):
        X, y, ids, avg = quarantined(load(name))
        for seed in range(args.seeds):
            for group, test in groups(ids, avg, y, seed).items():
                tag = f"{name}-s{seed}-{group}-k{args.anchors}-{args.predictor}.pkl"
                t = time.perf_counter()
                fitted = fit(X, y, test, seed, args.anchors, os.path.join(args.cache, tag),
                             args.predictor)  # fmt: skip
                new = rows_of(name, group, X, y, test, fitted, args.level)
                print(f"{name} {group}: {time.perf_counter() - t:.0f} s (edges "
                      f"{new[-1]['seconds']:.1f} s)", flush=True)  # fmt: skip
                rows += new
    print(table(rows))


if __name__ == "__main__":
    main()
