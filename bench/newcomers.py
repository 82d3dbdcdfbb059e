"""Newcomers benchmark: how do the defaults fare on models unlike the ones they were fit on?

On each metabench benchmark (`../shared/data/metabench_reduced`, joined by model name with
its `open-llm-leaderboard.csv` for each model's leaderboard average and architecture), the
test set is one held-out group, and training never sees it:

* `random`: 400 models drawn at random (the reference);
* `strongest`: the strongest decile by leaderboard average (`avg`, all six benchmarks);
* `families`: whole architecture families released after Mistral 7B (Sep 2023):
  Mixtral, Phi, StableLM, Qwen2, Gemma, OLMo, Cohere, Phi-3 (rows per family below);
* `arrival`: the last 20% of models in an arrival order derived from the architecture's
  release date (`ARCH_RELEASE`; the leaderboard file has no per-model dates, so models of
  one architecture arrive in random order, and models whose architecture is unknown,
  `error` in the file, are never among the last). This overlaps `families` by construction.

Per group and seed: validation 200 and calibration 200 models from the rest, training the
remainder; the default `SparseEval` at k anchors, `calibrate` on the calibration models,
then on the held-out group: MAE, mean signed error (estimate - truth; negative =
underestimated), and the coverage of the published 90% interval. `greedy+ridge` on the
same split gives context (is the shift hard for every reader?).

    python bench/newcomers.py --data arc --seeds 1
    python bench/newcomers.py --cache DIR --seeds 1    # flags: fits saved once, then the table

With `--cache`, each fit's anchor answers and estimates are saved (plus 400 models answering
at random, 70% correct) and `flag_eval.py` prints the flags table from them: the pool check
(`sparseeval.method.pool`) fitted as the pipeline fits it, flag rates, and coverage and width
before and after widening the flagged estimates.
    python bench/newcomers.py --data arc,gsm8k,mmlu,truthfulqa,winogrande --seeds 2
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import polars as pl

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import flag_eval
from accuracy import METABENCH, QUIET, load

from sparseeval import Settings
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.method.baselines import GreedyRidge
from sparseeval.method.estimator import SparseEval

N_VALID, N_CALIB, N_RANDOM_TEST = 200, 200, 400
# First release of each architecture in `transformers` / on the Hub (year, month).
ARCH_RELEASE = {
    "GPT2LMHeadModel": 2019.02,
    "GPTNeoForCausalLM": 2021.03,
    "GPTJForCausalLM": 2021.06,
    "GPTNeoXForCausalLM": 2022.02,
    "OPTForCausalLM": 2022.05,
    "BloomForCausalLM": 2022.07,
    "LlamaForCausalLM": 2023.02,
    "RWForCausalLM": 2023.05,
    "MPTForCausalLM": 2023.05,
    "FalconForCausalLM": 2023.07,
    "QWenLMHeadModel": 2023.08,
    "MistralForCausalLM": 2023.09,
    "MistralModel": 2023.09,
    "MixtralForCausalLM": 2023.12,
    "PhiForCausalLM": 2023.12,
    "StableLmForCausalLM": 2024.01,
    "Qwen2ForCausalLM": 2024.02,
    "GemmaForCausalLM": 2024.02,
    "OlmoForCausalLM": 2024.02,
    "CohereForCausalLM": 2024.03,
    "Qwen2MoeForCausalLM": 2024.03,
    "Phi3ForCausalLM": 2024.04,
}
NEW_FAMILIES = {a: a.replace("ForCausalLM", "") for a in ARCH_RELEASE if ARCH_RELEASE[a] > 2023.09}
ARRIVAL_SHARE = 0.2


def leaderboard_meta(model_ids) -> tuple[np.ndarray, np.ndarray]:
    """(leaderboard average, architecture) per model id, from open-llm-leaderboard.csv."""
    meta = pl.read_csv(METABENCH / "open-llm-leaderboard.csv", infer_schema_length=10000)
    frame = pl.DataFrame({"name": [str(m) for m in model_ids]}).join(
        meta.select("name", "avg", "arch"), on="name", how="left", maintain_order="left"
    )
    return frame["avg"].to_numpy(), frame["arch"].fill_null("error").to_numpy()


def groups(avg: np.ndarray, arch: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Held-out test rows per scenario."""
    m = len(avg)
    rng = np.random.default_rng(5000 + seed)
    out = {"random": np.sort(rng.permutation(m)[:N_RANDOM_TEST])}
    out["strongest"] = np.flatnonzero(avg >= np.nanquantile(avg, 0.9))
    out["families"] = np.flatnonzero(np.isin(arch, list(NEW_FAMILIES)))
    date = np.array([ARCH_RELEASE.get(a, -np.inf) for a in arch])
    known = np.flatnonzero(np.isfinite(date))
    order = known[np.lexsort((rng.random(len(known)), date[known]))]  # date, ties at random
    out["arrival"] = np.sort(order[-round(ARRIVAL_SHARE * m) :])
    return out


def fit_group(X, y, test: np.ndarray, k: int, seed: int, level: float, cache: str | None = None):
    rest = np.setdiff1d(np.arange(len(y)), test)
    order = np.random.default_rng(1000 + seed).permutation(rest)
    valid, calib, train = (
        order[:N_VALID],
        order[N_VALID : N_VALID + N_CALIB],
        order[N_VALID + N_CALIB :],
    )
    est = SparseEval.from_config(Settings.of().values(), n_anchors=k, seed=seed, **QUIET)
    est.fit(X[train], y[train], X_valid=X[valid], y_valid=y[valid])
    est.calibrate(X[calib], y[calib])
    ci = ConformalInterval.fit(est.calibration_residuals_, level)
    if cache:
        save_fit(cache, est, X, y, {"train": train, "calib": calib, "test": test})
        return est.predict(X[test]), None, ci, len(train)
    greedy = GreedyRidge(n_anchors=k, seed=seed).fit(X[train], y[train], X[valid], y[valid])
    return est.predict(X[test]), greedy.predict(X[test]), ci, len(train)


def random_answers(n_models: int, n_items: int, share: float = 0.7, seed: int = 70):
    """A new user's test of the issue: answers drawn at random, `share` of them correct."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((n_models, n_items)) < share, 1.0, -1.0).astype(np.float32)


def save_fit(path: str, est, X, y, rows: dict[str, np.ndarray]) -> None:
    """A fit's anchor answers, estimates and truths per part, for offline evaluation (flags)."""
    arrays = {"anchors": np.asarray(est.anchors_)}
    noise = random_answers(len(rows["test"]), X.shape[1])
    arrays |= {
        "X_random": noise[:, est.anchors_].astype(np.int8),
        "pred_random": est.predict(noise),
    }
    for part, r in rows.items():
        arrays |= {f"X_{part}": X[r][:, est.anchors_].astype(np.int8), f"y_{part}": y[r],
                   f"pred_{part}": est.predict(X[r]), f"rows_{part}": r}  # fmt: skip
    np.savez_compressed(path, **arrays)


def stats(pred, greedy, true, ci) -> dict:
    err, gerr = 100 * (pred - true), 100 * (greedy - true)
    return {
        "n": len(true),
        "mae": float(np.mean(np.abs(err))),
        "signed": float(np.mean(err)),
        "coverage": ci.coverage(pred, true),
        "greedy_mae": float(np.mean(np.abs(gerr))),
        "greedy_signed": float(np.mean(gerr)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="arc,gsm8k,mmlu,truthfulqa,winogrande")
    parser.add_argument("--anchors", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--out", default=None, help="append one JSON line per row here")
    parser.add_argument(
        "--cache",
        default=None,
        help="save each fit's anchor answers and estimates in this folder (fits already there "
        "are reused), then print the flags table from them",
    )
    parser.add_argument("--groups", default=None, help="with --cache: only these groups")
    args = parser.parse_args()
    if args.cache:
        cache_fits(args)
        print(flag_eval.table(flag_eval.cached_rows(args.cache, args.level)))
        return
    rows = []
    for name in args.data.split(","):
        matrix = load(name)
        X, y = matrix.values.astype(np.float32), matrix.y
        avg, arch = leaderboard_meta(matrix.model_ids)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for scenario, test in groups(avg, arch, seed).items():
                t = time.perf_counter()
                pred, greedy, ci, n_train = fit_group(X, y, test, args.anchors, seed, args.level)
                parts = {scenario: np.ones(len(test), bool)}
                if scenario == "families":
                    for a, short in NEW_FAMILIES.items():
                        if (arch[test] == a).sum() >= 30:
                            parts[f"  {short}"] = arch[test] == a
                for label, mask in parts.items():
                    row = {"data": name, "group": label.strip(), "sub": label.startswith(" ")}
                    row |= {"seed": seed, "k": args.anchors, "train": n_train}
                    row |= {"seconds": round(time.perf_counter() - t, 1)}
                    row |= stats(pred[mask], greedy[mask], y[test][mask], ci)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.out:
                        with open(args.out, "a") as f:
                            f.write(json.dumps(row) + "\n")
    print(table(rows))


def cache_path(folder: str, name: str, seed: int, group: str) -> str:
    return os.path.join(folder, f"{name}-s{seed}-{group}.npz")


def cache_fits(args) -> None:
    """Fit every (benchmark, seed, group) missing from `args.cache` and save it there."""
    os.makedirs(args.cache, exist_ok=True)
    for name in args.data.split(","):
        matrix = load(name)
        X, y = matrix.values.astype(np.float32), matrix.y
        avg, arch = leaderboard_meta(matrix.model_ids)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for scenario, test in groups(avg, arch, seed).items():
                if args.groups and scenario not in args.groups.split(","):
                    continue
                path = cache_path(args.cache, name, seed, scenario)
                if not os.path.exists(path):
                    t = time.perf_counter()
                    fit_group(X, y, test, args.anchors, seed, args.level, cache=path)
                    print(f"{path}: {time.perf_counter() - t:.0f} s", flush=True)


def table(rows: list[dict]) -> str:
    frame = pl.DataFrame(rows)
    agg = frame.group_by("data", "group", "sub", maintain_order=True).agg(
        pl.len().alias("seeds"),
        pl.col("n").mean(),
        *(pl.col(c).mean() for c in ("mae", "signed", "coverage", "greedy_mae", "greedy_signed")),
    )
    random_mae = {
        r["data"]: r["mae"] for r in agg.filter(pl.col("group") == "random").iter_rows(named=True)
    }
    lines = [
        "| data | held-out group | seeds | test models | MAE (pts) | / random-split MAE "
        "| mean signed error (pts) | 90% coverage | greedy+ridge MAE | greedy+ridge signed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in agg.iter_rows(named=True):
        group = ("  - " if r["sub"] else "") + r["group"]
        lines.append(
            f"| {r['data']} | {group} | {r['seeds']} | {r['n']:.0f} | {r['mae']:.3f} "
            f"| {r['mae'] / random_mae[r['data']]:.2f} | {r['signed']:+.3f} "
            f"| {r['coverage']:.1%} | {r['greedy_mae']:.3f} | {r['greedy_signed']:+.3f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
