"""GPU benchmark: our default fit on a GPU and on the CPU, the paper's recipe
(`PaperSparseEval`) on the GPU and, given a copy, the paper's released code on the same GPU.

One synthetic matrix (`make_synthetic(5000, 1319, seed=0)`, 200 test and 200 validation
models, k = 100), every fit in this one process after a warm-up of the device; wall time
and test MAE. Then the per-step cost of the paper's full-batch step three ways (why the
recipe was slow on a GPU), and how far the default MLPs trained on the GPU are from the
same MLPs trained on the CPU, against the spread between two CPU seeds.

    python bench/gpu.py --reference PATH/gd_cluster_mlp.py     # on a machine with a GPU
    python bench/gpu.py --device cpu --quick --results -       # a smoke test on a CPU

`--results FILE` appends the tables, with the command, as a section of FILE (default
bench/RESULTS.md; "-": print only). `--jsonl FILE` writes each measurement as it comes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/reference.py

from reference import load_reference, run_reference

from sparseeval import Settings, make_synthetic, split_models
from sparseeval.method.estimator import SparseEval
from sparseeval.method.metrics import mae_points
from sparseeval.method.paper import PaperSparseEval, ZeroOneMLP, _paper_train, _Steps
from sparseeval.method.training import Dropout

QUIET = {"progress": lambda s: None}
# --quick: step counts small enough for a CPU smoke test
QUICK_PAPER = {"refine_steps": 2, "proxy_steps": 40, "steps": 120, "check_every": 40}
QUICK_OURS = {"epochs": 60, "refine_steps": 2}


class Bench:
    """The matrix, its split, and the measurements so far (`rows`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.rows, self.agree = args, [], []
        m = make_synthetic(args.models, args.items, seed=0)
        self.split = split_models(m.model_ids, 200, 200, seed=0)
        self.X, self.y = m.values.astype(np.float32), m.y
        self.jsonl = open(args.jsonl, "a") if args.jsonl else None  # noqa: SIM115

    def part(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        rows = getattr(self.split, name)
        return self.X[rows], self.y[rows]

    def record(self, row: dict) -> None:
        print(json.dumps(row), flush=True)
        if self.jsonl:
            self.jsonl.write(json.dumps(row) + "\n")
            self.jsonl.flush()

    def timed(self, run: str, device: str, fit) -> object | None:
        """`fit()` timed, and a row with its test MAE (an error becomes the row's note).

        `fit` returns a fitted estimator, or a dict with its own "mae" (the released code).
        """
        start = time.perf_counter()
        try:
            est = fit()
        except Exception as exc:  # a row that failed is reported, the others still run
            row = {"run": run, "device": device, "seconds": None, "mae": None,
                   "note": f"failed: {type(exc).__name__}: {exc}"[:300]}  # fmt: skip
            self.rows.append(row)
            self.record(row)
            return None
        seconds = time.perf_counter() - start
        if isinstance(est, dict):
            mae, note = est["mae"], "its own test MAE at its kept state"
        else:
            Xt, yt = self.part("test")
            mae, note = mae_points(est.predict(Xt), yt), f"chose {est.predictor_name_}"
        row = {"run": run, "device": device, "seconds": seconds, "mae": mae, "note": note}
        self.rows.append(row)
        self.record(row)
        return est


def ours(b: Bench, device: str) -> SparseEval:
    X, y = b.part("train")
    Xv, yv = b.part("valid")
    extra = QUICK_OURS if b.args.quick else {}
    est = SparseEval.from_config(
        Settings.of(device=device).values(), n_anchors=b.args.anchors, seed=0, **extra, **QUIET
    )
    return est.fit(X, y, X_valid=Xv, y_valid=yv)


def paper(b: Bench, device: str, cuda_graphs: bool = True) -> PaperSparseEval:
    X, y = b.part("train")
    Xv, yv = b.part("valid")
    extra = QUICK_PAPER if b.args.quick else {}
    est = PaperSparseEval(
        b.args.anchors, seed=0, device=device, cuda_graphs=cuda_graphs, **extra, **QUIET
    )
    return est.fit(X, y, X_valid=Xv, y_valid=yv)


def warm_up(device: str) -> None:
    """The device's context, kernels and our code paths loaded before any timing."""
    x, t = torch.rand(64, 10, device=device).round(), torch.rand(64, device=device)
    _paper_train(ZeroOneMLP(device=device).build(10), x, t, 8, 1e-3, graphs=False)
    from sparseeval.method.predictors import MLPPredictor

    rng = np.random.default_rng(0)
    X = rng.choice([-1.0, 1.0], size=(64, 10))
    MLPPredictor(epochs=3, device=device).fit(X, rng.random(64))
    _sync(device)


def step_costs(b: Bench, device: str, steps: int, graphs: bool) -> list[dict]:
    """Milliseconds per full-batch training step of the paper's net, four ways: the
    released code's step (torch's dropout, Adam, `loss.item()` every step), our recipe's
    old step (masks drawn by NumPy on the host and copied), its eager step now (masks drawn
    on the device, fused Adam); with `graphs`, only its step replayed from a CUDA graph."""
    n, k = len(b.split.train), b.args.anchors
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(n, k, generator=g) < 0.5).float().to(device)
    t = torch.rand(n, generator=g).to(device)

    def released():
        layers, width = [], k
        for h in (128, 64, 32):
            layers += [torch.nn.Linear(width, h), torch.nn.GELU(), torch.nn.Dropout(0.1)]
            width = h
        net = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1), torch.nn.Sigmoid())
        net = net.to(device).train()
        opt = torch.optim.Adam(net.parameters(), lr=5e-4)

        def step():
            opt.zero_grad()
            loss = torch.mean((net(x).squeeze(1) - t) ** 2)
            loss.backward()
            opt.step()
            loss.item()

        return step

    def old():
        net = ZeroOneMLP().build(k)  # NumPy mask generator (a CPU net), then moved
        for m in net.modules():
            if isinstance(m, Dropout):
                m.rng = np.random.default_rng(0)
        net = net.to(device).train()
        opt = torch.optim.Adam(net.parameters(), lr=5e-4)

        def step():
            opt.zero_grad()
            torch.mean((net(x).squeeze(1) - t) ** 2).backward()
            opt.step()

        return step

    kinds = {"released code's step": released, "our recipe before": old,
             "our recipe now, eager": lambda: _Steps(ZeroOneMLP(device=device).build(k),
                                                      x, t, 5e-4, graphs=False),
             "our recipe now, CUDA graph": lambda: _Steps(ZeroOneMLP(device=device).build(k),
                                                           x, t, 5e-4, graphs=True)}  # fmt: skip
    graph_kind = "our recipe now, CUDA graph"
    kinds = {n: f for n, f in kinds.items() if (n == graph_kind) == graphs}
    out = []
    for name, make in kinds.items():
        try:
            step = make()
            for _ in range(20):  # warm-up (and the graph's capture)
                step()
            _sync(device)
            start = time.perf_counter()
            for _ in range(steps):
                step()
            _sync(device)
            row = {"step": name, "device": device,
                   "ms": 1000 * (time.perf_counter() - start) / steps}  # fmt: skip
        except Exception as exc:
            row = {"step": name, "device": device, "ms": None,
                   "note": f"failed: {type(exc).__name__}: {exc}"[:300]}  # fmt: skip
        b.record(row)
        out.append(row)
    return out


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def agreement(b: Bench, est: SparseEval, device: str, fits: dict) -> list[dict]:
    """How far `device` training is from CPU training, against the spread of two CPU seeds.

    The default MLP ensemble on `est`'s anchors three ways (CPU seed 0, `device` seed 0,
    CPU seed 1), and the whole default fits in `fits` (by device): the test MAE of each and
    the mean and largest |difference| of its test estimates from the CPU seed 0 ones (points).
    """
    X, y = b.part("train")
    Xt, yt = b.part("test")
    A = est.anchors_
    preds = []
    for name, dev, seed in (("MLP ensemble, cpu, seed 0", "cpu", 0),
                            (f"MLP ensemble, {device}, seed 0", device, 0),
                            ("MLP ensemble, cpu, seed 1", "cpu", 1)):  # fmt: skip
        members = est.set_params(device=dev, seed=seed).fit_mlp_members(X[:, A], y)
        preds.append((name, np.mean([m.predict(Xt[:, A]) for m in members], axis=0)))
        b.record({"ensemble": name, "mae": mae_points(preds[-1][1], yt)})
    est.set_params(device="cpu", seed=0)
    rows = [_diff(name, p, preds[0][1], yt) for name, p in preds]
    if "cpu" in fits and device in fits and device != "cpu":
        base = fits["cpu"].predict(Xt)
        rows += [_diff(f"whole default fit, {d}", f.predict(Xt), base, yt) for d, f in fits.items()]
    for row in rows:
        b.record(row)
    return rows


def _diff(name: str, pred: np.ndarray, base: np.ndarray, yt: np.ndarray) -> dict:
    diff = 100 * np.abs(pred - base)
    return {"ensemble": name, "mae": mae_points(pred, yt), "mean_diff": float(diff.mean()),
            "max_diff": float(diff.max())}  # fmt: skip


def _fmt(v, digits: int) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def section(b: Bench, steps: list[dict], agree: list[dict], command: str) -> str:
    a = b.args
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    lines = [
        f"## GPU (issue 47): {a.models:,} x {a.items:,}, k = {a.anchors}, one process",
        "",
        f"`{command}` on {gpu}, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
        f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f} at the end. "
        "One run each, after a warm-up of the device; synthetic matrix `make_synthetic("
        f"{a.models}, {a.items}, seed=0)`, 200 test and 200 validation models (seed 0).",
        "",
        "| run | device | wall s | test MAE (pts) | note |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {r['run']} | {r['device']} | {_fmt(r['seconds'], 1)} | {_fmt(r['mae'], 3)} "
              f"| {r['note']} |" for r in b.rows]  # fmt: skip
    lines += ["", f"One full-batch step of the paper's net ({len(b.split.train):,} x {a.anchors}),"
              " ms (mean of the timed steps):", "",
              "| step | device | ms |", "|---|---|---|"]  # fmt: skip
    lines += [
        f"| {r['step']} | {r['device']} | {_fmt(r['ms'], 3)} {r.get('note', '')}|" for r in steps
    ]
    if agree:
        lines += ["", "Training on the device against the CPU: test estimates against those of "
                  "the CPU, seed 0 (points; the MLP ensemble of 3 on the CPU fit's anchors, "
                  "and the whole default fits above):", "",
                  "| ensemble | test MAE | mean abs diff | max abs diff |",
                  "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {r['ensemble']} | {r['mae']:.3f} | {r['mean_diff']:.3f} | "
                  f"{r['max_diff']:.3f} |" for r in agree]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda", help="the accelerator (default cuda)")
    parser.add_argument("--reference", help="a copy of the paper's gd_cluster_mlp.py")
    parser.add_argument("--models", type=int, default=5000)
    parser.add_argument("--items", type=int, default=1319)
    parser.add_argument("--anchors", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="few steps: a smoke test")
    parser.add_argument("--step-count", type=int, default=300, help="steps timed per step kind")
    parser.add_argument("--skip", default="", help="comma-separated: cpu,ours,paper,steps,agree")
    parser.add_argument("--results", default=str(Path(__file__).parent / "RESULTS.md"))
    parser.add_argument("--jsonl")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no GPU here: pass --device cpu for a smoke test")
    skip, dev = set(args.skip.split(",")), args.device
    b = Bench(args)
    warm_up(dev)
    # the eager paths first, the CUDA graph's last: a failed capture can spoil the device
    steps = step_costs(b, dev, args.step_count, graphs=False) if "steps" not in skip else []
    if "paper" not in skip:
        b.timed("paper recipe, eager steps", dev, lambda: paper(b, dev, cuda_graphs=False))
    if args.reference:
        module = load_reference(args.reference)
        quick = QUICK_PAPER if args.quick else None
        b.timed("paper's released code", dev,
                lambda: run_reference(module, b.X, b.split, args.anchors, dev, quick))  # fmt: skip
    fits = {}
    for device in (dev, "cpu"):
        if ("cpu" if device == "cpu" else "ours") not in skip:
            fits[device] = b.timed("ours (defaults)", device, lambda d=device: ours(b, d))
    fits = {d: f for d, f in fits.items() if f is not None}
    agree = agreement(b, fits["cpu"], dev, fits) if "cpu" in fits and "agree" not in skip else []
    if "steps" not in skip:
        steps += step_costs(b, dev, args.step_count, graphs=True)
    if "paper" not in skip:
        b.timed("paper recipe (PaperSparseEval defaults: CUDA graph on a GPU)", dev,
                lambda: paper(b, dev))  # fmt: skip
    command = "python bench/gpu.py " + " ".join(sys.argv[1:])
    text = section(b, steps, agree, command)
    print("\n" + text)
    if args.results != "-":
        with open(args.results, "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
