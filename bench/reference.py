"""The paper's released code, run once on our split (for `bench/gpu.py` and `bench/speed.py`).

Not part of this project and not in it: pass the path of your own copy of
`SparseEval/methods/gd_cluster_mlp.py` (https://github.com/taolinzhang/SparseEval). One run
calls its two steps as its `main` does for one repetition: `generate_anchors_mlp_high`
(k-means on the unit-length item vectors of all models, as it does, then its blind
refinement rounds) and `gradient_descent_mlp_evaluation` (its final MLP, whose test MAE at
the kept state is its result), on our training, validation and test rows. Its own output
(progress bars, prints) is swallowed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import time
from pathlib import Path

import numpy as np


def load_reference(path: str | Path):
    """The released module, imported from `path` (its import seeds random, NumPy, torch)."""
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"--reference {path}: no such file (a copy of gd_cluster_mlp.py)")
    spec = importlib.util.spec_from_file_location("paper_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_reference(
    module, X: np.ndarray, split, k: int, device: str, quick: dict | None = None
) -> dict:
    """One run of the released recipe on +-1 matrix `X` (all models) and `split` (rows):
    wall seconds and its test MAE in points. `quick` shrinks its step counts (smoke tests)."""
    import torch

    quick = quick or {}
    zero_one = (np.asarray(X, dtype=np.float32) + 1.0) / 2.0
    items = np.asarray(X, dtype=np.float64).T  # as its load_base_data: all models' item vectors
    norms = np.linalg.norm(items, axis=1, keepdims=True)
    norms[norms == 0] = 1e-10
    gpu_id = 0 if torch.device(device).type == "cuda" else None
    dev = torch.device("cuda:0" if gpu_id is not None else "cpu")
    Y = {part: torch.tensor(zero_one[rows], device=dev) for part, rows in
         (("train", split.train), ("valid", split.valid), ("test", split.test))}  # fmt: skip
    argv, sys.argv = sys.argv, ["gd_cluster_mlp.py", "arc", str(k)]  # its k-means benchmarks
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            start = time.perf_counter()
            anchors = module.generate_anchors_mlp_high(
                items / norms, Y["train"], k, gpu_id,
                num_refinement_steps=quick.get("refine_steps", 10),
                partial_epochs=quick.get("proxy_steps", 2000),
            )  # fmt: skip
            result = module.gradient_descent_mlp_evaluation(
                Y["train"], Y["valid"], Y["test"], anchors, 5e-4,
                quick.get("steps", 20000), 30, gpu_id,
            )  # fmt: skip
            seconds = time.perf_counter() - start
    finally:
        sys.argv = argv
    mae = float("nan") if result is None else 100 * float(result["best_test_error"])
    return {"seconds": seconds, "mae": mae}
