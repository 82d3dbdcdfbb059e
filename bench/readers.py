"""Readers under load: processes scoring a model from `latest` while new versions are published.

    python bench/readers.py                           # 8 readers, 30 publishes
    python bench/readers.py --readers 16 --publishes 100 --json

Three fitted estimators (`SparseEval(n_anchors=8, refine_steps=1, epochs=50, ensemble=1,
predictor="ridge")` on `make_synthetic(300, 60, seed=s)`, s = 0, 1, 2) give three different
estimates for one fixed set of answers (all 60 items). The main process publishes them in
turn as v1, v2, ... of one benchmark (`new_version`, `write_version`, then `set_latest`, as
the pipeline's publish step does) while `--readers` processes loop
`load_anchor_set(root, b).predict(answers)` and record, for every read, the version the
manifest names, the version the estimate names, the estimate and its interval, or the
exception. The expected (estimate, low, high) of each
fit is taken beforehand from a scratch copy, loaded the same way.

A read is consistent when its estimate and interval equal those of the version it names
(and of no other fit) and the manifest and estimate name the same version; anything else is
a mixed (or unknown) read. Checks: no errors, no mixed reads, and every version read was
one that `latest` pointed at.

Measured: bench/RESULTS.md, section Readers during publishes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed

BENCHMARK = "arc"
N_FITS = 3


def fit(seed: int):
    """One tiny fitted estimator (as tests/helpers.py `tiny_fit`) with its matrix and split."""
    from sparseeval.method.estimator import SparseEval
    from sparseeval.method.splits import split_models
    from sparseeval.method.synthetic import make_synthetic

    m = make_synthetic(300, 60, seed=seed)
    sp = split_models(m.model_ids, n_test=80, n_valid=80, seed=seed)
    est = SparseEval(
        n_anchors=8, refine_steps=1, epochs=50, ensemble=1, predictor="ridge",
        progress=lambda s: None,
    )  # fmt: skip
    est.fit(m.values[sp.train], m.y[sp.train], X_valid=m.values[sp.valid],
            y_valid=m.y[sp.valid], item_ids=m.item_ids)  # fmt: skip
    return m, sp, est


def publish(root: Path, fitted) -> int:
    """Write `fitted` as the next version and promote it; the version number."""
    from sparseeval.method.metrics import evaluate
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.versions import new_version, set_latest, write_version

    m, sp, est = fitted
    pred = est.predict(m.values[sp.test])
    decided = new_version(
        BENCHMARK, est, data_fingerprint=m.fingerprint(), split_sizes=sp.sizes(),
        metrics={"test": evaluate(pred, m.y[sp.test])}, settings=Settings.of(home=root),
        report_inputs={"test_pred": pred, "test_true": m.y[sp.test]},
    )  # fmt: skip
    folder = write_version(root, decided)
    version = int(folder.name.removeprefix("v"))
    set_latest(root, BENCHMARK, version)
    return version


def reader(root: str, answers: dict, stop, ready, out) -> None:
    """Loop load + predict from `latest` until `stop` is set; put every read on `out`."""
    from sparseeval.consume.sets.anchorset import load_anchor_set

    reads, errors = [], []
    ready.release()
    while not stop.is_set():
        try:
            aset = load_anchor_set(root, BENCHMARK)
            est = aset.predict(answers)
            reads.append((int(aset.manifest["version"]), est.version, est.value, est.low,
                          est.high))  # fmt: skip
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc} | "
                          + traceback.format_exc(limit=-2).replace("\n", " "))  # fmt: skip
    out.put((reads, errors))


def expected_estimates(fits, answers: dict) -> list[tuple[float, float, float]]:
    """(estimate, low, high) of each fit, published in a scratch root and loaded as readers do."""
    from sparseeval.consume.sets.anchorset import load_anchor_set

    out = []
    with tempfile.TemporaryDirectory(prefix="readers-scratch-") as scratch:
        for f in fits:
            publish(Path(scratch), f)
            e = load_anchor_set(scratch, BENCHMARK).predict(answers)
            out.append((e.value, e.low, e.high))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--publishes", type=int, default=30)
    ap.add_argument("--pause", type=float, default=0.0, help="seconds between publishes")
    ap.add_argument("--seed", type=int, default=0, help="seed of the answers")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    fits = [fit(s) for s in range(N_FITS)]
    items = [str(i) for i in fits[0][0].item_ids]
    rng = np.random.default_rng(args.seed)
    answers = {item: int(v) for item, v in zip(items, rng.integers(0, 2, len(items)), strict=True)}
    expected = expected_estimates(fits, answers)
    values = [e[0] for e in expected]
    if len(set(values)) != N_FITS:
        raise SystemExit(f"the fits' estimates are not all different: {values}")
    print(f"expected estimates per fit: {[f'{v:.6f}' for v in values]} "
          f"({time.perf_counter() - t0:.1f}s to fit)", file=sys.stderr)  # fmt: skip

    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="readers-") as tmp:
        root = Path(tmp) / "published"
        fit_of: dict[int, int] = {publish(root, fits[0]): 0}  # readers need a `latest`
        stop, ready, out = ctx.Event(), ctx.Semaphore(0), ctx.Queue()
        procs = [ctx.Process(target=reader, args=(str(root), answers, stop, ready, out))
                 for _ in range(args.readers)]  # fmt: skip
        for p in procs:
            p.start()
        for _ in procs:
            ready.acquire()  # every reader is looping before the first publish
        t_pub = time.perf_counter()
        for n in range(1, args.publishes + 1):
            fit_of[publish(root, fits[n % N_FITS])] = n % N_FITS
            if args.pause:
                time.sleep(args.pause)
        pub_s = time.perf_counter() - t_pub
        time.sleep(0.5)  # a few reads of the last version
        stop.set()
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        exit_codes = [p.exitcode for p in procs]

    reads = [r for rs, _ in results for r in rs]
    errors = [e for _, es in results for e in es]
    consistent, mixed, versions_seen = 0, [], set()
    for manifest_v, est_v, value, low, high in reads:
        versions_seen.add(manifest_v)
        got = (value, low, high)
        matches = [j for j, e in enumerate(expected) if np.allclose(got, e, rtol=0, atol=1e-12)]
        ok = manifest_v == est_v and manifest_v in fit_of and matches == [fit_of[manifest_v]]
        if ok:
            consistent += 1
        else:
            mixed.append({"manifest_version": manifest_v, "estimate_version": est_v,
                          "estimate": got, "matches_fits": matches})  # fmt: skip
    row = {
        "readers": args.readers,
        "reads": len(reads),
        "errors": len(errors),
        "estimates matching exactly one version": consistent,
        "mixed/unknown": len(mixed),
        "publishes": args.publishes,
        "versions read": len(versions_seen),
        "reader exit codes nonzero": sum(1 for c in exit_codes if c != 0),
    }
    if args.json:
        print(json.dumps({"row": row, "publish_seconds": pub_s, "errors": errors[:20],
                          "mixed": mixed[:20], "expected": expected}, indent=1))  # fmt: skip
        return 0
    head = list(row)
    cells = [str(v) if not isinstance(v, int) else f"{v:,}" for v in row.values()]
    widths = [max(len(h), len(c)) for h, c in zip(head, cells, strict=True)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print("| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |")
    print(f"\n{args.publishes} publishes in {pub_s:.1f}s (v1 before the readers started, "
          f"v2..v{args.publishes + 1} under load); {len(versions_seen)} distinct versions read; "
          f"{time.perf_counter() - t0:.0f}s in all")  # fmt: skip
    for e in dict.fromkeys(errors):
        print(f"error ({errors.count(e)}x): {e[:600]}")
    for m in mixed[:20]:
        print(f"mixed: {m}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
