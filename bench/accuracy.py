"""Accuracy benchmark: SparseEval (our defaults and the paper's recipe) against baselines.

Prints MAE (accuracy points) and Kendall tau on held-out test models, mean +- std over
seeds, on a synthetic 5,000 x 1,319 matrix and on each benchmark of the real metabench
data (`../shared/data/metabench_reduced`: real 0/1 responses on 100-249 items, target =
the full-benchmark score). Each seed draws its own test models (400 on metabench, 200 on
synthetic), then validation from the training share.

    python bench/accuracy.py                       # everything (long)
    python bench/accuracy.py --data arc --budgets 50 --seeds 2
    python bench/accuracy.py --train-sizes 90,300,1000,all --budgets 50
    python bench/accuracy.py --methods sparseeval,sparseeval-1mlp   # the ensemble's worth
    python bench/accuracy.py --methods sparseeval,sparseeval-fullbatch --budgets 50 --seeds 3 \
        --data arc,gsm8k,mmlu,truthfulqa,winogrande   # mini-batches against full-batch steps
    python bench/accuracy.py --methods sparseeval,sparseeval-norefit --budgets 50 --seeds 3 \
        --data arc,gsm8k,mmlu,truthfulqa,winogrande   # the refit's worth
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread: fits run side by side
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from _results import command_line, provenance, write_section

from sparseeval import ResponseMatrix, Settings, make_synthetic
from sparseeval.method.baselines import BASELINES, AllItemsRidge
from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import evaluate
from sparseeval.method.paper import PaperSparseEval

# ../shared/data/metabench_reduced beside the clone (a worktree's nearest ancestor having it)
METABENCH = next(
    (d for p in Path(__file__).resolve().parents[1:]
     if (d := p / "shared" / "data" / "metabench_reduced").is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "data" / "metabench_reduced",
)  # fmt: skip
DATASETS = ("synthetic", "synthetic-narrow", "arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")
QUIET = {"progress": lambda s: None}
METHODS = (
    "sparseeval",
    "paper",
    "random",
    "random+ridge",
    "anchor-points",
    "linear-gd",
    "greedy+ridge",
    "all-items-ridge",
)


def load(name: str) -> ResponseMatrix:
    if name == "synthetic":
        return make_synthetic(5000, 1319, seed=0)
    if name == "synthetic-narrow":  # accuracy sd 0.135, as real leaderboards (issue 15 item 4)
        return make_synthetic(5000, 1319, seed=0, ability_scale=0.45)
    responses = pl.read_csv(METABENCH / f"{name}_responses_train.csv")
    scores = pl.read_csv(METABENCH / f"{name}_scores.csv", null_values="NA").filter(
        pl.col("split") == "train"
    )
    joined = responses.join(scores.select("model", "score"), on="model", how="inner")
    items = [c for c in responses.columns if c != "model"]
    return ResponseMatrix.from_array(
        joined.select(items).to_numpy(),
        joined["model"].to_list(),
        items,
        joined["score"].to_numpy() / 100,
    )


def methods(k: int, seed: int, names: list[str], data: str | None = None) -> dict:
    pipeline = Settings.of()
    factories = {
        "sparseeval": lambda: SparseEval.from_config(
            pipeline.values(), n_anchors=k, seed=seed, **QUIET
        ),
        # our defaults with one MLP instead of the ensemble of 3 (a third of the MLP training)
        "sparseeval-1mlp": lambda: SparseEval.from_config(
            pipeline.values(), n_anchors=k, seed=seed, ensemble=1, **QUIET
        ),
        # our defaults with full-batch MLP steps and patience 50 (the defaults until
        # mini-batches: the same error, about twice the time)
        "sparseeval-fullbatch": lambda: SparseEval.from_config(
            pipeline.values(), n_anchors=k, seed=seed, batch_size=0, patience=50, **QUIET
        ),
        # our defaults without the refit on training and validation models (the chosen
        # predictor as validation chose it): the refit's worth against its time
        "sparseeval-norefit": lambda: SparseEval.from_config(
            pipeline.values(), n_anchors=k, seed=seed, refit=False, **QUIET
        ),
        # the released code starts MMLU and Winogrande from random items, the others k-means
        "paper": lambda: PaperSparseEval(k, seed=seed, benchmark=data, **QUIET),
        "all-items-ridge": AllItemsRidge,
    } | {b: (lambda b=b: BASELINES[b](n_anchors=k, seed=seed)) for b in BASELINES}
    return {n: factories[n]() for n in names}


def split(m: int, n_test: int, train_size: int | None, seed: int):
    """Test rows, then validation (20% of the training share, at most 200) and train."""
    order = np.random.default_rng(1000 + seed).permutation(m)
    test, rest = order[:n_test], order[n_test:]
    if train_size is not None:
        rest = rest[:train_size]
    n_valid = min(200, max(10, round(0.2 * len(rest))))
    return rest[n_valid:], rest[:n_valid], test


def run(args) -> list[dict]:
    rows = []
    for name in args.data:
        matrix = load(name)
        X, y = matrix.values.astype(np.float32), matrix.y
        n_test = 200 if name.startswith("synthetic") else 400
        for size in args.train_sizes:
            for k in [k for k in args.budgets if k < matrix.shape[1]]:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    tr, va, te = split(len(y), n_test, size, seed)
                    for method, est in methods(k, seed, args.methods, name).items():
                        t = time.perf_counter()
                        est.fit(X[tr], y[tr], X_valid=X[va], y_valid=y[va])
                        row = {
                            "data": name,
                            "train": len(tr) + len(va),
                            "k": k,
                            "method": method,
                            "seed": seed,
                            "seconds": time.perf_counter() - t,
                        } | evaluate(est.predict(X[te]), y[te])
                        rows.append(row)
                        with open(args.out, "a") as f:
                            f.write(json.dumps(row) + "\n")
                        print(
                            f"{name:<11}{row['train']:>6} k={k:<4}{method:<16} seed {seed} "
                            f"MAE {row['mae']:.3f} tau {row['kendall_tau']:.3f} "
                            f"({row['seconds']:.1f}s)",
                            flush=True,
                        )
    return rows


LOG_LINE = re.compile(
    r"^(?P<data>\S+)\s+(?P<train>\d+) k=(?P<k>\d+)\s+(?P<method>\S+)\s+seed (?P<seed>\d+) "
    r"MAE (?P<mae>[\d.]+) tau (?P<kendall_tau>[-\d.]+) \((?P<seconds>[\d.]+)s\)$"
)


def _parse(key: str, value: str) -> str | int | float:
    if key in ("data", "method"):
        return value
    return int(value) if key in ("train", "k", "seed") else float(value)


def read_rows(paths: list[str]) -> list[dict]:
    """Rows from earlier runs: JSON lines (`--out`) or the progress lines of a log."""
    rows = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
            elif m := LOG_LINE.match(line):
                rows.append({k: _parse(k, v) for k, v in m.groupdict().items()})
    return rows


def aggregate(rows: list[dict]) -> pl.DataFrame:
    """Mean and sd over seeds per (data, train, k, method); a later row of a seed wins."""
    keys = ["data", "train", "k", "method", "seed"]
    frame = pl.DataFrame(rows).unique(subset=keys, keep="last", maintain_order=True)
    agg = frame.group_by("data", "train", "k", "method", maintain_order=True).agg(
        pl.col("mae").mean().alias("mae"),
        pl.col("mae").std().alias("mae_sd"),
        pl.col("kendall_tau").mean().alias("tau"),
        pl.col("kendall_tau").std().alias("tau_sd"),
        pl.col("seconds").median().alias("sec"),
        pl.len().alias("seeds"),
    )
    data_order = {d: i for i, d in enumerate(dict.fromkeys(frame["data"].to_list()))}
    rank = pl.col("data").replace_strict(data_order, return_dtype=pl.Int64)
    method_order = {m: i for i, m in enumerate(METHODS)}
    method_rank = pl.col("method").replace_strict(
        method_order, default=len(METHODS), return_dtype=pl.Int64
    )
    return agg.sort(rank, "train", "k", method_rank, maintain_order=True)


def summary(rows: list[dict]) -> str:
    head = "| data | train models | k | method | MAE (pts) | tau | median s | seeds |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in aggregate(rows).iter_rows(named=True):
        sd = lambda v: 0.0 if v is None else v  # noqa: E731
        lines.append(
            f"| {r['data']} | {r['train']} | {r['k']} | {r['method']} | "
            f"{r['mae']:.3f} ± {sd(r['mae_sd']):.3f} | {r['tau']:.3f} ± {sd(r['tau_sd']):.3f} | "
            f"{r['sec']:.1f} | {r['seeds']} |"
        )
    return "\n".join(lines)


COMPARED = ("greedy+ridge", "all-items-ridge")


def targets(rows: list[dict]) -> str:
    """Issue 6's targets per setting: our MAE against random+ridge, greedy+ridge and
    all-items ridge, and our tau against the best baseline's (mean over seeds)."""
    agg = aggregate(rows)
    head = (
        "| data | train models | k | sparseeval MAE | / random+ridge | - greedy+ridge "
        "| - all-items ridge | tau - best other tau (method) |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for (data, train, k), group in agg.group_by("data", "train", "k", maintain_order=True):
        mae = dict(zip(group["method"], group["mae"], strict=True))
        tau = dict(zip(group["method"], group["tau"], strict=True))
        if "sparseeval" not in mae:
            continue
        ours = mae["sparseeval"]
        ratio = f"{ours / mae['random+ridge']:.3f}" if "random+ridge" in mae else "-"
        gaps = [f"{ours - mae[m]:+.3f}" if m in mae else "-" for m in COMPARED]
        best = max((m for m in tau if m != "sparseeval"), key=tau.get, default=None)
        tau_gap = "-" if best is None else f"{tau['sparseeval'] - tau[best]:+.3f} ({best})"
        cells = [data, train, k, f"{ours:.3f}", ratio, *gaps, tau_gap]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=",".join(DATASETS))
    parser.add_argument("--budgets", default="20,50,100")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--train-sizes", default="all", help="e.g. 90,300,1000,all")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", default="bench/out/accuracy.jsonl", help="rows appended here")
    parser.add_argument("--section", metavar="HEADING",
                        help="also write the tables as this section of bench/RESULTS.md"
                             " (e.g. '### ARC at k = 50, now'), with the command")  # fmt: skip
    parser.add_argument(
        "--summarize",
        nargs="+",
        metavar="FILE",
        help="only print the table of earlier runs (JSON lines or logs)",
    )
    args = parser.parse_args()
    if args.summarize:
        rows = read_rows(args.summarize)
        print(summary(rows), targets(rows), sep="\n\n")
        if args.section:  # the tables of runs measured earlier, under the given heading
            files = " ".join(args.summarize)
            write_section(args.section, f"Rows of {files} (`--summarize`).\n\n{summary(rows)}")
        return
    args.data = args.data.split(",")
    args.budgets = [int(k) for k in args.budgets.split(",")]
    args.methods = args.methods.split(",")
    args.train_sizes = [None if s == "all" else int(s) for s in args.train_sizes.split(",")]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    measured = provenance()  # the code as it starts (the tree may change while it runs)
    rows = run(args)
    print()
    print(summary(rows), targets(rows), sep="\n\n")
    if args.section:
        command = command_line("accuracy.py", sys.argv[1:])
        write_section(args.section, f"`{command}` on {measured}.\n\n{summary(rows)}")


if __name__ == "__main__":
    main()
