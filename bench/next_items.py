"""Next items: the anchors alone, then +10/+30/+50 items per model from `next_items`.

Per benchmark and held-out group (training never sees the group):

* `random`: 400 models drawn at random;
* `strongest`: the strongest decile by leaderboard average (metabench) or by target (demo);
* `orgs`: whole organisations (model id prefix before '/') drawn at random until they hold
  10% of the models (metabench only; the demo's ids have no organisation).

Validation 200 and calibration 200 models from the rest, training the remainder;
`SparseEval` at k = 50 (anchor selection as shipped; final predictor `--predictor`, default
nnridge, one of the shipped `auto` candidates) fit to the mean over the stored items
(metabench keeps ~100 of each benchmark's items); the anchors alone get the interval a
published set gives (`consume.scoring.flags.bounds`: its adaptive split-conformal interval, widened
where the pool check flags the model, at least the top edge's in its zone). Then per test
model, n more items chosen by `consume.scoring.next_items.choose` (`random`, or `informative`: the
items it is least sure of) and the combined estimate and interval of
`consume.scoring.next_items.correct` (the anchors' spread from that interval, their prior of
being off from the pool check's flag and the top edge zone, as `AnchorSet.predict` gives
them), on curves fit to the training models (`method.item_curves`). Prints MAE, mean signed
error, max error (points; the max over the seeds), 90% coverage and mean width per row. Fits
are cached (`--cache DIR`): the table re-runs fast.

    cd bench && nice python next_items.py --cache /tmp/next-items \
        --data demo,arc,gsm8k,mmlu,truthfulqa,winogrande
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

import accuracy
import newcomers
from accuracy import QUIET, load
from newcomers import leaderboard_meta

from sparseeval import Settings, make_synthetic
from sparseeval.consume.scoring import next_items as nx
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.flags import PoolCheck, bounds, in_top_zone
from sparseeval.method.estimator import SparseEval
from sparseeval.method.item_curves import fit_curves
from sparseeval.method.pool import estimator_pool_check

N_VALID, N_CALIB, N_RANDOM = 200, 200, 400
ORG_SHARE = 0.1
EXTRA = (10, 30, 50)


def matrix_of(name: str):
    """(X 0/1, model ids, leaderboard average or None) of a benchmark or the demo."""
    if name == "demo":
        m = make_synthetic(2000, 600, seed=0)
        return (m.values > 0).astype(np.int8), np.asarray(m.model_ids), None
    m = load(name)
    return (m.values > 0).astype(np.int8), np.asarray(m.model_ids), leaderboard_meta(m.model_ids)[0]


def groups(ids: np.ndarray, avg, y: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5000 + seed)
    out = {"random": np.sort(rng.permutation(len(ids))[:N_RANDOM])}
    strength = y if avg is None else np.where(np.isnan(avg), -np.inf, avg)
    out["strongest"] = np.flatnonzero(strength >= np.quantile(strength[np.isfinite(strength)], 0.9))
    orgs = np.array([i.split("/")[0] if "/" in i else "" for i in ids])
    if (orgs != "").mean() > 0.5:
        chosen, held = [], 0
        for org in rng.permutation(np.unique(orgs[orgs != ""])):
            chosen.append(org)
            held += int((orgs == org).sum())
            if held >= ORG_SHARE * len(ids):
                break
        out["orgs"] = np.flatnonzero(np.isin(orgs, chosen))
    return out


def fit(X, y, test, seed: int, k: int, path: str, predictor: str, level: float) -> dict:
    """Fit on everything but `test`; save what the table needs (cached at `path`)."""
    if os.path.exists(path):
        with np.load(path) as z:
            return {n: z[n] for n in z.files}
    rest = np.setdiff1d(np.arange(len(y)), test)
    order = np.random.default_rng(1000 + seed).permutation(rest)
    valid, calib, train = (
        order[:N_VALID],
        order[N_VALID : N_VALID + N_CALIB],
        order[N_VALID + N_CALIB :],
    )
    est = SparseEval.from_config(
        Settings.of().values(), n_anchors=k, seed=seed, predictor=predictor, **QUIET
    )
    t = time.perf_counter()
    est.fit(X[train] * 2 - 1, y[train], X_valid=X[valid] * 2 - 1, y_valid=y[valid]).calibrate(
        X[calib] * 2 - 1, y[calib]
    )
    Xs = X * 2 - 1
    pool = estimator_pool_check(est, Xs[train], Xs[calib], y[train], level)
    out = {"anchors": est.anchors_, "train": train, "test": test,
           "pool": np.array(json.dumps(pool.to_dict())),
           "pred": est.predict(X[test] * 2 - 1), "calib_res": est.calibration_residuals_,
           "calib_pred": est.calibration_predictions_,
           "seconds": time.perf_counter() - t}  # fmt: skip
    np.savez(path, **out)
    return out


def rows_of(name: str, group: str, X, y, f: dict, level: float, seed: int) -> list[dict]:
    """The anchors-alone row and one row per (strategy, n extra) of one fit."""
    test, anchors = f["test"], f["anchors"]
    conf = ConformalInterval.fit(f["calib_res"], level, pred=f["calib_pred"])
    check = PoolCheck.from_dict(json.loads(str(f["pool"])))
    lo, hi, _ = bounds(check, conf, X[test][:, anchors] * 2.0 - 1, f["pred"])
    base = {"data": name, "group": group, "n": len(test)}
    rows = [base | summary("anchors alone", 0, f["pred"], lo, hi, y[test]) | {"mae_unbiased": None}]
    spread = nx.anchor_spread(f["pred"], lo, hi, level)
    flagged = check.flagged(X[test][:, anchors] * 2.0 - 1, f["pred"])
    off = nx.misjudged(flagged, in_top_zone(check, f["pred"]))
    curves = fit_curves(X[f["train"]], [str(j) for j in range(X.shape[1])])
    theta = nx.abilities(curves, anchors, X[test][:, anchors], f["pred"])
    rest = np.setdiff1d(np.arange(X.shape[1]), anchors)
    for strategy in nx.STRATEGIES:
        for n in EXTRA:
            if n > len(rest):
                continue
            v, u, lo, hi = (np.empty(len(test)) for _ in range(4))
            for i, row in enumerate(test):
                extra = nx.choose(
                    curves, rest, n, strategy, theta[i], seed=seed * 100003 + int(row)
                )
                c = nx.correct(curves, anchors, X[row, anchors], f["pred"][i], extra,
                               X[row, extra], spread[i], off[i])  # fmt: skip
                lo[i], hi[i] = c.interval(level)
                v[i], u[i] = c.within(lo[i], hi[i]).value, c.unbiased
            row = summary(f"+{n} {strategy}", n, v, lo, hi, y[test])
            row |= {"mae_unbiased": float(np.mean(np.abs(100 * (u - y[test]))))}
            rows.append(base | row)
    return rows


def summary(method: str, n: int, pred, lo, hi, true) -> dict:
    err = 100 * (np.asarray(pred) - true)
    cover = float(np.mean((true >= lo - 1e-12) & (true <= hi + 1e-12)))
    return {"method": method, "extra": n, "mae": float(np.mean(np.abs(err))),
            "signed": float(np.mean(err)), "max": float(np.max(np.abs(err))), "coverage": cover,
            "width": float(100 * np.mean(hi - lo))}  # fmt: skip


def table(rows: list[dict]) -> str:
    frame = pl.DataFrame(rows)
    agg = frame.group_by("data", "group", "method", maintain_order=True).agg(
        pl.len().alias("seeds"),
        *(pl.col(c).mean() for c in ("n", "mae", "signed", "coverage", "width", "mae_unbiased")),
        pl.col("max").max(),
    )
    lines = ["| data | held-out group | models | method | seeds | MAE (pts) | mean signed (pts) "
             "| max error (pts) | 90% coverage | mean width (pts) | MAE of the unbiased value |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in agg.iter_rows(named=True):
        unbiased = "" if r["mae_unbiased"] is None else f"{r['mae_unbiased']:.2f}"
        lines.append(
            f"| {r['data']} | {r['group']} | {r['n']:.0f} | {r['method']} | {r['seeds']} "
            f"| {r['mae']:.2f} | {r['signed']:+.2f} | {r['max']:.1f} | {r['coverage']:.1%} "
            f"| {r['width']:.1f} "
            f"| {unbiased} |"
        )
    return "\n".join(lines)


def speed(n_models: int = 1500, n_items: int = 1000, k: int = 100, n_extra: int = 50) -> str:
    """Seconds per `AnchorSet.predict` (load excluded) on a published 1,000-item set."""
    import tempfile

    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.method.metrics import evaluate
    from sparseeval.pipeline.fit_sets import benchmark_curves
    from sparseeval.pipeline.versions import new_version, set_latest, write_version

    m = make_synthetic(n_models, n_items, seed=0)
    rows = np.arange(n_models)
    est = SparseEval(n_anchors=k, init="random", refine_steps=0, predictor="ridge", **QUIET)
    est.fit(m.values[rows[:-300]], m.y[rows[:-300]], X_valid=m.values[rows[-300:]],
            y_valid=m.y[rows[-300:]], item_ids=m.item_ids)  # fmt: skip
    root = tempfile.mkdtemp()
    decided = new_version("speed", est, data_fingerprint="speed", split_sizes={"train": 1},
                          metrics={"test": evaluate(est.predict(m.values[:50]), m.y[:50])},
                          settings=Settings.of(home=root),
                          curves=benchmark_curves(m, rows, True))  # fmt: skip
    write_version(root, decided)
    set_latest(root, "speed", 1)
    aset = load_anchor_set(root, "speed")
    answers = dict(zip(map(str, m.item_ids), (m.values[0] > 0).astype(int).tolist(), strict=True))
    mine = {i: answers[i] for i in aset.items}
    mine |= {i: answers[i] for i in aset.next_items(mine, n_extra)}
    times = []
    for _ in range(20):
        t = time.perf_counter()
        aset.predict(mine)
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    aset.next_items(mine, n_extra)
    pick = time.perf_counter() - t
    return (f"predict on a {n_items:,}-item set ({k} anchors + {n_extra} more items): median "
            f"{1000 * np.median(times):.1f} ms, max {1000 * max(times):.1f} ms over 20; "
            f"next_items {1000 * pick:.1f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="demo,arc,gsm8k,mmlu,truthfulqa,winogrande")
    parser.add_argument("--anchors", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--cache", default="/tmp/next-items-cache")
    parser.add_argument(
        "--predictor",
        default="nnridge",
        help="final predictor (default nnridge: minutes, not hours, on a shared "
        "machine; `auto` is the shipped default, MLP candidates included)",
    )
    parser.add_argument(
        "--metabench",
        default=str(accuracy.METABENCH),
        help="the metabench_reduced folder (default: beside the repository)",
    )
    parser.add_argument("--speed", action="store_true", help="only time predict (1,000 items)")
    args = parser.parse_args()
    if args.speed:
        print(speed())
        return
    accuracy.METABENCH = newcomers.METABENCH = Path(args.metabench)
    os.makedirs(args.cache, exist_ok=True)
    rows = []
    for name in args.data.split(","):
        X, ids, avg = matrix_of(name)
        y = X.mean(1)  # the mean over the stored items
        for seed in range(args.seeds):
            for group, test in groups(ids, avg, y, seed).items():
                tag = f"{name}-s{seed}-{group}-k{args.anchors}-{args.predictor}-pool"
                f = fit(X, y, test, seed, args.anchors, os.path.join(args.cache, f"{tag}.npz"),
                        args.predictor, args.level)  # fmt: skip
                t = time.perf_counter()
                new = rows_of(name, group, X, y, f, args.level, seed)
                print(f"{name} {group}: fit {float(f['seconds']):.0f} s, table "
                      f"{time.perf_counter() - t:.1f} s", flush=True)  # fmt: skip
                rows += new
    print(table(rows))


if __name__ == "__main__":
    main()
