"""Reported vs item-mean targets on the metabench data: MAE against the leaderboard's value.

The responses (`wide:BM={bm}_responses_train.csv`) and the leaderboard's values
(`scores:open-llm-leaderboard.csv`) are ingested into a fresh store in a temporary folder;
the items come from `build_matrix`, the reported values from `reported_scores`. Per
benchmark, 400 random models (of those with responses and a leaderboard value) are held
out; a ridge reader (`sparseeval.method.predictors.RidgePredictor`, alpha by leave-one-out)
is fitted on every stored item of the rest twice: on the `items` target (metabench's
full-benchmark score, the mean over all of the benchmark's items under the binary metric;
what a full store's row mean would be) and on the `reported` target (the Open LLM
Leaderboard v1 value from open-llm-leaderboard.csv). Both are scored against the
leaderboard's value, in points. `subset-mean` is the mean over only the stored (selected)
items, used as the estimate itself. Data: ../shared/data/metabench_reduced (never copied).

    python bench/targets.py [--data DIR] [--seeds 5] [--out bench/out/targets.txt]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from sparseeval.method.predictors import RidgePredictor
from sparseeval.pipeline.store import Store, build_matrix, ingest, reported_scores
from sparseeval.pipeline.store.kinds import source_from_spec

DATA = Path("/work/shared/data/metabench_reduced")
BENCHMARKS = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")
N_HELD_OUT = 400


def ingest_all(store: Store, data: Path) -> list[str]:
    """Ingest every benchmark's responses and the leaderboard's scores; the report lines."""
    sources = [source_from_spec(f"wide:{bm}={data / f'{bm}_responses_train.csv'}")
               for bm in BENCHMARKS]  # fmt: skip
    sources.append(source_from_spec(f"scores:{data / 'open-llm-leaderboard.csv'}"))
    return [r.line() for src in sources for r in ingest(store, src)]


def load(store: Store, data: Path, bm: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """(0/1 responses, items target, reported target, build line), targets in percent."""
    matrix, summary = build_matrix(store, bm, target="auto")
    responses = pd.DataFrame((matrix.values > 0).astype(np.float64), index=matrix.model_ids)
    scores = pd.read_csv(data / f"{bm}_scores.csv").drop_duplicates("model").set_index("model")
    board = reported_scores(store, bm).to_pandas().set_index("model")["score"] * 100.0
    order = pd.read_csv(data / f"{bm}_responses_train.csv", usecols=["model"])["model"]
    models = pd.Index(order).intersection(scores.index).intersection(board.index)  # file order
    X = responses.loc[models].to_numpy()
    items, reported = scores.loc[models, "score"].to_numpy(float), board.loc[models].to_numpy()
    return X, items, reported, summary.line()


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
    ap.add_argument("--out", type=Path, default=Path("bench/out/targets.txt"))
    args = ap.parse_args()
    lines = [
        f"MAE (points) against the Open LLM Leaderboard v1 value; {N_HELD_OUT} held-out"
        f" models, ridge reader on all stored items, seeds 0..{args.seeds - 1}"
        " (mean, seed 0 in brackets)",
        f"{'benchmark':<11} {'models':>6} {'items':>5} {'items-target':>16}"
        f" {'reported-target':>16} {'subset-mean':>12}",
    ]
    with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp) / "store.duckdb") as store:
        ingested = ingest_all(store, args.data)
        loaded = {bm: load(store, args.data, bm) for bm in BENCHMARKS}
    for bm, (X, items, reported, _) in loaded.items():
        runs = np.array([mae_pair(X, items, reported, s) for s in range(args.seeds)])
        mean, first = runs.mean(axis=0), runs[0]
        lines.append(
            f"{bm:<11} {len(X):>6} {X.shape[1]:>5} {mean[0]:>7.2f} [{first[0]:>6.2f}]"
            f" {mean[1]:>7.2f} [{first[1]:>6.2f}] {mean[2]:>12.2f}"
        )
    lines += ["", "ingest:", *ingested, "", "build_matrix(target='auto'):"]
    lines += [loaded[bm][3] for bm in BENCHMARKS]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
