"""Coverage benchmark: do the published 90% intervals cover held-out models, in every band?

Two kinds of data, each fitted per seed exactly as the pipeline fits it:

* metabench (`arc,gsm8k,mmlu,truthfulqa,winogrande`, data in
  `../shared/data/metabench_reduced`): 400 random test models, 200 validation models and
  200 calibration models taken from the training share, the default `SparseEval` at k
  anchors, then `calibrate` on the calibration models.
* the suite (`suite`): `SuiteSparseEval` as bench/suite.py fits it (the models in all five
  metabench benchmarks; 400 test, 200 validation, 200 calibration), each benchmark's joint
  reader and the suite average;
* the built-in demo leaderboard (`demo`, or `demo:arc+gsm8k`): the synthetic 1,000-model
  leaderboard that `sparseeval refresh` fills an empty store with, split and fitted by the
  pipeline's own steps (`recipe.split_step` and `recipe.select_step`), `Settings.of(seed=seed)`.

Each fit is saved (`--cache`, one .npz per data, k and seed: the predictions and true
scores of the calibration, validation and test models), so the intervals are evaluated
without refitting. Two intervals from the same calibration models are compared:
"constant" (one half-width for every model, the published interval before issue 20) and
"adaptive" (`ConformalInterval.fit(residuals, level, pred=...)`, the published one now).
The tables: coverage and mean width by third of the test models' predicted score (equal
counts, per seed), overall, and the signed error (estimate - truth, points) by predicted
band and by true-score third.

    python bench/coverage.py                               # metabench, k = 50, 5 seeds
    python bench/coverage.py --data demo --anchors 100
    python bench/coverage.py --data arc --seeds 1 --cache /tmp/cov
    python bench/coverage.py --data suite --out bench/out/coverage_bands_suite.txt
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from accuracy import QUIET, load

from sparseeval import Settings
from sparseeval.consume.scoring.conformal import BAND_NAMES, ConformalInterval, by_band
from sparseeval.method.estimator import SparseEval

N_TEST, N_VALID, N_CALIB = 400, 200, 200
DEMO = ("arc", "gsm8k", "hellaswag", "mmlu", "truthfulqa", "winogrande")
BANDS = ("low", "mid", "high")
KINDS = ("constant", "adaptive")


def _arrays(est, X, y, calib, valid, test) -> dict[str, np.ndarray]:
    """What the evaluation needs from one fit: predictions and truths of each held-out group."""
    return {
        "calib_pred": est.predict(X[calib]),
        "calib_true": y[calib],
        "valid_pred": est.valid_residuals_ + y[valid],
        "valid_true": y[valid],
        "test_pred": est.predict(X[test]),
        "test_true": y[test],
        "predictor": np.array(est.predictor_name_),
    }


def metabench_seed(X, y, k: int, seed: int) -> dict:
    order = np.random.default_rng(1000 + seed).permutation(len(y))
    test, valid = order[:N_TEST], order[N_TEST : N_TEST + N_VALID]
    calib = order[N_TEST + N_VALID : N_TEST + N_VALID + N_CALIB]
    train = order[N_TEST + N_VALID + N_CALIB :]
    est = SparseEval.from_config(Settings.of().values(), n_anchors=k, seed=seed, **QUIET)
    est.fit(X[train], y[train], X_valid=X[valid], y_valid=y[valid])
    return _arrays(est, X, y, calib, valid, test)


def demo_seed(matrix, k: int, seed: int) -> dict:
    from sparseeval.pipeline.recipe import select_step, split_step

    settings = Settings.of(seed=seed, n_anchors=k)
    split = split_step(matrix, settings, "demo")
    est = select_step(matrix, split, settings, lambda s: None)
    return _arrays(est, matrix.values, matrix.y, split.calib, split.valid, split.test)


def suite_seed(k: int, seed: int) -> dict:
    """One `SuiteSparseEval` on bench/suite.py's split of the models in all five benchmarks:
    the joint readers' arrays per benchmark and the average's, keys "{benchmark}:{name}"."""
    import suite as bench_suite

    from sparseeval.method.suite import AVERAGE, SuiteSparseEval, suite_average

    X, y, _ = bench_suite.common_models()
    order = np.random.default_rng(2000 + seed).permutation(len(next(iter(y.values()))))
    sizes = [bench_suite.N_TEST, bench_suite.N_VALID, bench_suite.N_CALIB]
    te, va, ca, tr = np.split(order, np.cumsum(sizes))
    y = y | {AVERAGE: suite_average(y)}
    rows = lambda d, r: {b: v[r] for b, v in d.items() if b != AVERAGE}  # noqa: E731
    suite = SuiteSparseEval(k, SparseEval(seed=seed, **QUIET))
    suite.fit(rows(X, tr), rows(y, tr), rows(X, va), rows(y, va))
    suite.calibrate(rows(X, ca), rows(y, ca))
    pred = suite.predict(rows(X, te))
    out = {}
    for b in (*suite.benchmarks_, AVERAGE):
        out |= {f"{b}:calib_pred": suite.calibration_predictions_[b], f"{b}:calib_true": y[b][ca],
                f"{b}:test_pred": pred[b], f"{b}:test_true": y[b][te]}  # fmt: skip
    return out


def expand(label: str, runs: list[dict]) -> dict[str, list[dict]]:
    """A suite's runs as one entry per benchmark ("suite arc", ..., "suite average")."""
    if not any(":" in key for key in runs[0]):
        return {label: runs}
    names = dict.fromkeys(key.partition(":")[0] for key in runs[0])
    return {f"{label} {b}": [_part(r, b) for r in runs] for b in names}


def _part(run: dict, b: str) -> dict:
    return {key.partition(":")[2]: v for key, v in run.items() if key.startswith(f"{b}:")}


def datasets(spec: str):
    """(label, fit-one-seed function) per benchmark named in `--data`."""
    for name in spec.split(","):
        if name == "suite":
            yield "suite", suite_seed
        elif name == "demo" or name.startswith("demo:"):
            from sparseeval.pipeline.sources import SyntheticLeaderboard

            board = SyntheticLeaderboard().leaderboard
            wanted = name.partition(":")[2].split("+") if ":" in name else DEMO
            for bench in wanted:
                yield f"demo {bench}", (lambda k, s, m=board[bench]: demo_seed(m, k, s))
        else:
            yield name, (lambda k, s, name=name: metabench_seed(*_xy(name), k, s))


@functools.cache
def _xy(name: str):
    matrix = load(name)
    return matrix.values.astype(np.float32), matrix.y


def cached_fit(cache: Path, label: str, k: int, seed: int, fit_one) -> dict:
    """The arrays of one fit, read from `cache` or fitted and written there."""
    path = cache / f"{re.sub(r'[^A-Za-z0-9]+', '-', label)}_k{k}_s{seed}.npz"
    if not path.exists():
        t = time.perf_counter()
        arrays = fit_one(k, seed)
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, **arrays)
        print(f"fitted {label} k={k} seed={seed} in {time.perf_counter() - t:.0f} s", flush=True)
    with np.load(path) as f:
        return {key: f[key] for key in f.files}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default="arc,gsm8k,mmlu,truthfulqa,winogrande")
    parser.add_argument("--anchors", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--cache", default="bench/out/coverage", help="folder of saved fits")
    parser.add_argument("--fit-only", action="store_true", help="fill the cache, print nothing")
    parser.add_argument("--out", default=None, help="also write the tables (and the command) here")
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    fits = {}
    for label, fit_one in datasets(args.data):
        runs = [cached_fit(Path(args.cache), label, args.anchors, s, fit_one) for s in seeds]
        fits |= expand(label, runs)
    if args.fit_only:
        return
    text = report(fits, args.anchors, args.level)
    print(text)
    if args.out:
        command = "python bench/coverage.py " + " ".join(sys.argv[1:])
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(f"$ {command}\n\n{text}\n")


def intervals(fit: dict, level: float) -> dict[str, ConformalInterval]:
    """The constant and the adaptive interval from one fit's calibration models."""
    resid = fit["calib_pred"] - fit["calib_true"]
    return {"constant": ConformalInterval.fit(resid, level),
            "adaptive": ConformalInterval.fit(resid, level, pred=fit["calib_pred"])}  # fmt: skip


def _band_stats(runs: list[dict], kind: str, level: float) -> dict:
    """Per band and overall, means over seeds: coverage, half-width; overall min and max."""
    rows = [by_band(intervals(f, level)[kind], f["test_pred"], f["test_true"]) for f in runs]
    whole = [by_band(intervals(f, level)[kind], f["test_pred"], f["test_true"], bands=1)[0]
             for f in runs]  # fmt: skip
    mean = lambda key: [np.mean([r[b][key] for r in rows]) for b in range(3)]  # noqa: E731
    cov = [w["coverage"] for w in whole]
    return {"coverage": mean("coverage"), "halfwidth": mean("halfwidth"),
            "overall": (np.mean(cov), min(cov), max(cov)),
            "width": np.mean([w["halfwidth"] for w in whole])}  # fmt: skip


def coverage_table(fits: dict[str, list[dict]], k: int, level: float) -> str:
    """Coverage and half-width by third of the estimate, constant vs adaptive, per data."""
    thirds = " / ".join(BAND_NAMES)
    lines = [
        f"| data | k | seeds | interval | coverage at {level:.0%} by estimate third ({thirds}) "
        f"| overall (min-max) | half-width by third (pts) | mean half-width (pts) | x constant "
        "| targets |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, runs in fits.items():
        base = None
        for kind in KINDS:
            s = _band_stats(runs, kind, level)
            base = base or s["width"]
            m, lo, hi = s["overall"]
            ok = all(0.87 <= c <= 0.93 for c in s["coverage"]) and 0.88 <= m <= 0.92
            ok &= s["width"] <= 1.10 * base
            lines.append(
                f"| {label} | {k} | {len(runs)} | {kind} "
                f"| {' / '.join(f'{c:.1%}' for c in s['coverage'])} | {m:.1%} ({lo:.1%}-{hi:.1%}) "
                f"| {' / '.join(f'{h:.2f}' for h in s['halfwidth'])} | {s['width']:.2f} "
                f"| {s['width'] / base:.3f} | {'met' if ok else 'missed'} |"
            )
    return "\n".join(lines)


def bias_table(fits: dict[str, list[dict]], k: int) -> str:
    """Signed error (estimate - truth, points) by third of the estimate and of the truth."""
    thirds = " / ".join(BAND_NAMES)
    lines = [
        f"| data | k | seeds | signed error by estimate third ({thirds}) "
        f"| by true-score third ({thirds}) | overall | within +-0.3 by estimate |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, runs in fits.items():
        conf = [intervals(f, 0.9)["constant"] for f in runs]
        cells = []
        for key in ("test_pred", "test_true"):
            rows = [by_band(c, f["test_pred"], f["test_true"], key=f[key])
                    for c, f in zip(conf, runs, strict=True)]  # fmt: skip
            cells.append([np.mean([r[b]["signed_error"] for r in rows]) for b in range(3)])
        overall = np.mean([100 * np.mean(f["test_pred"] - f["test_true"]) for f in runs])
        ok = all(abs(e) <= 0.3 for e in cells[0])
        lines.append(
            f"| {label} | {k} | {len(runs)} | {' / '.join(f'{e:+.2f}' for e in cells[0])} "
            f"| {' / '.join(f'{e:+.2f}' for e in cells[1])} | {overall:+.2f} "
            f"| {'yes' if ok else 'no'} |"
        )
    return "\n".join(lines)


def report(fits: dict[str, list[dict]], k: int, level: float) -> str:
    return coverage_table(fits, k, level) + "\n\n" + bias_table(fits, k)


if __name__ == "__main__":
    main()
