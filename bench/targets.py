"""Reported vs item-mean targets on the metabench data: MAE against the leaderboard's value.

Per benchmark, 400 random models (of those with responses and a leaderboard value) are held
out; a ridge reader (`sparseeval.method.predictors.RidgePredictor`, alpha by leave-one-out)
is fitted on every stored item of the rest twice: on the `items` target (metabench's
full-benchmark score, the mean over all of the benchmark's items under the binary metric;
what a full store's row mean would be) and on the `reported` target (the Open LLM
Leaderboard v1 value from open-llm-leaderboard.csv). Both are scored against the
leaderboard's value, in points. `subset-mean` is the mean over only the stored (selected)
items, used as the estimate itself. Data: ../shared/data/metabench_reduced (never copied).

    python bench/targets.py [--data DIR] [--seeds 5] [--out bench/results/targets.txt]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from sparseeval.method.predictors import RidgePredictor

DATA = Path("/work/shared/data/metabench_reduced")
BENCHMARKS = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")
N_HELD_OUT = 400


def load(data: Path, bm: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(0/1 responses, items target, reported target), targets in percent, for joined models."""
    responses = pd.read_csv(data / f"{bm}_responses_train.csv", index_col="model")
    scores = pd.read_csv(data / f"{bm}_scores.csv").drop_duplicates("model").set_index("model")
    board = pd.read_csv(data / "open-llm-leaderboard.csv").drop_duplicates("name")
    board = board.set_index("name")[bm]
    models = responses.index.intersection(scores.index).intersection(board.dropna().index)
    X = responses.loc[models].to_numpy(dtype=np.float64)
    return X, scores.loc[models, "score"].to_numpy(float), board.loc[models].to_numpy(float)


def mae_pair(X, items, reported, seed: int) -> tuple[float, float, float]:
    """(MAE of the items-trained reader, of the reported-trained one, of the subset mean)."""
    order = np.random.default_rng(seed).permutation(len(X))
    test, train = order[:N_HELD_OUT], order[N_HELD_OUT:]
    out = []
    for y in (items, reported):
        reader = RidgePredictor().fit(X[train], y[train] / 100.0)
        out.append(np.mean(np.abs(reader.predict(X[test]) * 100.0 - reported[test])))
    out.append(np.mean(np.abs(X[test].mean(axis=1) * 100.0 - reported[test])))
    return tuple(out)  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench/results/targets.txt"))
    args = ap.parse_args()
    lines = [
        f"MAE (points) against the Open LLM Leaderboard v1 value; {N_HELD_OUT} held-out"
        f" models, ridge reader on all stored items, seeds 0..{args.seeds - 1}"
        " (mean, seed 0 in brackets)",
        f"{'benchmark':<11} {'models':>6} {'items':>5} {'items-target':>16}"
        f" {'reported-target':>16} {'subset-mean':>12}",
    ]
    for bm in BENCHMARKS:
        X, items, reported = load(args.data, bm)
        runs = np.array([mae_pair(X, items, reported, s) for s in range(args.seeds)])
        mean, first = runs.mean(axis=0), runs[0]
        lines.append(
            f"{bm:<11} {len(X):>6} {X.shape[1]:>5} {mean[0]:>7.2f} [{first[0]:>6.2f}]"
            f" {mean[1]:>7.2f} [{first[1]:>6.2f}] {mean[2]:>12.2f}"
        )
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
