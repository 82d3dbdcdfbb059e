"""Graded items: SparseEval fit on graded scores against the same scores thresholded at 0.5.

How the readers use graded inputs: a graded item's answer is 2*score - 1 in [-1, 1]
(`method.matrix`), read as it is by the anchor selection, the predictors and the pool
check (`person_fit` takes the score as the answer's share of right). The alternative is
what a 0/1-only store forces: score >= 0.5 right, else wrong (`correct` as the store keeps
it), for the training models and for the model being estimated alike. Both fits here use
the same split, the same targets and the same settings; only the answers differ.

Data:
- `synthetic`: 3,000 models x 400 items; item j's score for model i is drawn from
  Beta(K p, K (1 - p)) around a 2PL curve p = sigmoid(a_j (theta_i - b_j)) (K = 6: the
  spread of an F1 or a judge's score around its expectation), rounded to 3 decimals;
  target: each model's mean score over the items.
- `{bm}-g{G}` (arc, gsm8k, mmlu, truthfulqa, winogrande): real answers
  (`shared/data/metabench_reduced`, 0/1), every G items of a seeded grouping averaged into
  one graded item (scores 0, 1/G, ..., 1: a rubric's share of criteria met, a mean over G
  attempts); target: the real full-benchmark score (`{bm}_scores.csv`). shared/data holds
  no per-item graded results of a real benchmark (F1, ROUGE, a judge), so this is the case
  built from real files.

Split per seed: test 20% of the models, validation 200, training the rest (seeded); k anchors,
at most a third of the items. Prints test MAE (points) and Kendall tau of each fit, the mean
over seeds.

    cd bench && nice python graded.py --seeds 0,1,2 --k 20
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import polars as pl

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from accuracy import METABENCH, QUIET

from sparseeval import Settings
from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import evaluate

N_VALID = 200
REAL = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")


def synthetic(m: int = 3000, n: int = 400, k: float = 6.0, seed: int = 0):
    """(scores in [0, 1], targets): Beta noise around a 2PL curve per item."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(m, 1))
    a, b = rng.lognormal(0.0, 0.3, size=(1, n)), rng.normal(0.0, 1.0, size=(1, n))
    p = np.clip(1 / (1 + np.exp(-a * (theta - b))), 1e-3, 1 - 1e-3)
    scores = np.round(rng.beta(k * p, k * (1 - p)), 3)
    return scores, scores.mean(1)


def grouped(name: str, size: int, seed: int = 0):
    """(scores, targets): a metabench benchmark's real 0/1 answers, every `size` items of
    a seeded grouping averaged into one graded item; targets the real full scores."""
    responses = pl.read_csv(METABENCH / f"{name}_responses_train.csv")
    scores = pl.read_csv(METABENCH / f"{name}_scores.csv", null_values="NA")
    joined = responses.join(scores.filter(pl.col("split") == "train").select("model", "score"),
                            on="model", how="inner")  # fmt: skip
    X = joined.select([c for c in responses.columns if c != "model"]).to_numpy().astype(float)
    order = np.random.default_rng(seed).permutation(X.shape[1])
    n = X.shape[1] // size
    groups = order[: n * size].reshape(n, size)
    return X[:, groups].mean(axis=2), joined["score"].to_numpy() / 100


def split(m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.random.default_rng(1000 + seed).permutation(m)
    n_test = round(0.2 * m)
    return order[N_VALID + n_test :], order[n_test : N_VALID + n_test], order[:n_test]


def fit_mae(X, y, rows, k: int, seed: int, predictor: str) -> tuple[dict, float]:
    """Test metrics of one fit on the ±1 values X (graded or binary), and its seconds."""
    train, valid, test = rows
    start = time.perf_counter()
    defaults = Settings.of().values()
    est = SparseEval.from_config(defaults, n_anchors=k, seed=seed, predictor=predictor, **QUIET)
    est.fit(X[train], y[train], X_valid=X[valid], y_valid=y[valid])
    return evaluate(est.predict(X[test]), y[test]), time.perf_counter() - start


def run(data: str, scores: np.ndarray, y: np.ndarray, args) -> dict:
    graded = (2 * scores - 1).astype(np.float32)
    binary = np.where(scores >= 0.5, 1, -1).astype(np.int8)  # the store's `correct`
    rows = {"graded": [], "threshold": [], "tau_g": [], "tau_t": [], "seconds": 0.0}
    k = min(args.k, scores.shape[1] // 3)
    for seed in args.seeds:
        parts = split(len(y), seed)
        g, sg = fit_mae(graded, y, parts, k, seed, args.predictor)
        t, st = fit_mae(binary, y, parts, k, seed, args.predictor)
        rows["graded"].append(g["mae"])
        rows["threshold"].append(t["mae"])
        rows["tau_g"].append(g["kendall_tau"])
        rows["tau_t"].append(t["kendall_tau"])
        rows["seconds"] += sg + st
        print(f"  {data} seed {seed}: graded {g['mae']:.3f}, thresholded {t['mae']:.3f}"
              f" ({sg + st:.0f}s)", flush=True)  # fmt: skip
    levels = len(np.unique(scores))
    return {"data": data, "models": scores.shape[0], "items": scores.shape[1], "k": k,
            "levels": levels} | {k: float(np.mean(v)) if isinstance(v, list) else v
                                 for k, v in rows.items()}  # fmt: skip


def table(results: list[dict], args) -> str:
    lines = [
        f"predictor {args.predictor}, seeds {','.join(map(str, args.seeds))}; test MAE in"
        " points (mean over seeds), Kendall tau",
        "",
        "| data | models x items | score levels | k | MAE graded | MAE thresholded | tau graded"
        " | tau thresholded |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        lines.append(
            f"| {r['data']} | {r['models']:,} x {r['items']} | {r['levels']:,} | {r['k']} |"
            f" {r['graded']:.3f} | {r['threshold']:.3f} | {r['tau_g']:.3f} | {r['tau_t']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="synthetic," + ",".join(f"{b}-g3" for b in REAL),
                    help="synthetic and/or BM-gG (a metabench benchmark, G items per graded"
                         " item), comma-separated")  # fmt: skip
    ap.add_argument("--seeds", default="0,1,2", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--k", type=int, default=20, help="anchors")
    ap.add_argument("--predictor", default="nnridge", help="the final predictor (auto: slow)")
    args = ap.parse_args()
    results = []
    for data in args.data.split(","):
        if data == "synthetic":
            scores, y = synthetic()
        else:
            name, _, size = data.rpartition("-g")
            scores, y = grouped(name, int(size))
        results.append(run(data, scores, y, args))
    print()
    print(table(results, args))


if __name__ == "__main__":
    main()
