"""Nights benchmark: a leaderboard arriving night by night, through the real refresh flow.

Night 1 brings `--first` models, each later night `--per-night` more (a long Parquet file in
an `inbox:DIR` watched source, or with `--feed file` the night's source), then
`--quiet-nights` bring nothing. Three policies run side by side, each in its own home:
  drift        default settings: publish when the live set drifts, through the quality gate
  every-night  drift_mae_points 1e-9, min_new_models 1: every night with new models asks
               to publish; the quality gate still applies (a worse candidate is refused)
  never        every drift threshold 0 (off): publish v1 on night 1, never again
Before each night's refresh the live set scores that night's new models (MAE, points).

Arrival order (`--data`):
  synthetic  `sparseeval.method.synthetic.make_arrivals`, rows in arrival order: families are
             released over time (newer ones more common), mean ability rises by `--drift`
             SDs from first to last model. Target: mean over the items.
  metabench  real OLLM v1 responses (../shared/data/metabench_reduced). It has no release
             dates, so key = z(leaderboard `avg`) + N(0, 0.5^2) (seed 0): stronger models
             tend to arrive later. MAE is on the store's target (mean over the stored
             items); `full` is against metabench's full-benchmark score (all items).

    python bench/nights.py --data synthetic
    python bench/nights.py --data metabench --benchmarks arc,gsm8k
    python bench/nights.py --cold-ollm        # night 1 only: 6 benchmarks, 5,000 models
    python bench/nights.py --scenario persistent-shift   # stronger models for 12 nights
    python bench/nights.py --scenario quiet              # the same leaderboard, no drift

Nights in drift: per benchmark, the longest run of nights on which the live set was
flagged as drifted and nothing new was published (target: at most 3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed
METABENCH = Path(__file__).resolve().parents[2] / "shared/data/metabench_reduced"
POLICIES = {
    "drift": {},  # the paired gate: refuse only a candidate worse beyond noise
    "drift-strict": {"gate": "strict"},  # the old gate: any worse MAE on held-out models refuses
    "every-night": {"drift_mae_points": 1e-9, "min_new_models": 1},
    "never": {"drift_mae_points": 0, "drift_mae_ratio": 0, "drift_out_of_range_frac": 0},
}
SCENARIOS = {
    "persistent-shift": {"nights": 12, "drift": 3.0, "per_night": 150},
    "quiet": {"drift": 0.0},  # no ability drift: publishing again buys nothing
}


def fmt(x, spec=".2f") -> str:
    return "-" if x is None else format(x, spec)


def z(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return (x - x.mean()) / (x.std() or 1.0)


def synthetic_data(args, n_models: int):
    """{benchmark: (values 0/1, model ids, item ids, target, None)} and the arrival order."""
    from sparseeval.method.synthetic import OLLM_V1_ITEMS, make_arrivals

    items = {b: max(20, round(OLLM_V1_ITEMS[b] * args.scale)) for b in args.benchmarks}
    board = make_arrivals(n_models, items, drift=args.drift, seed=args.seed)
    ids = np.asarray(next(iter(board.values())).model_ids, dtype=str)
    data = {b: ((m.values > 0).astype(np.int8), ids, np.asarray(m.item_ids, dtype=str), m.y, None)
            for b, m in board.items()}  # fmt: skip
    return data, list(ids)  # rows are in arrival order


def metabench_data(args):
    import polars as pl

    data = {}
    for b in args.benchmarks:
        wide = pl.read_csv(METABENCH / f"{b}_responses_train.csv", infer_schema_length=0)
        ids = wide["model"].to_numpy().astype(str)
        values = wide.drop("model").cast(pl.Int8).to_numpy()
        sc = pl.read_csv(METABENCH / f"{b}_scores.csv", columns=["model", "score"])
        score = dict(zip(sc["model"], sc["score"], strict=True))  # model ids are unique
        full = np.array([score[m] / 100 for m in ids])
        data[b] = (values, ids, np.array(wide.columns[1:], dtype=str), values.mean(1), full)
    board = pl.read_csv(METABENCH / "open-llm-leaderboard.csv", columns=["name", "avg"])
    avg = dict(zip(board["name"], board["avg"], strict=True))
    models = sorted(set().union(*(d[1] for d in data.values())))
    key = z([avg[m] for m in models]) + np.random.default_rng(args.seed).normal(0, 0.5, len(models))
    return data, [models[i] for i in np.argsort(key, kind="stable")]


def write_night(data, batch: list[str], path: Path) -> dict[str, np.ndarray]:
    """Long Parquet (model, benchmark, item, correct) of `batch`; row indices per benchmark."""
    import polars as pl

    wanted, frames, rows = set(batch), [], {}
    for b, (values, ids, items, _, _) in data.items():
        r = np.flatnonzero([m in wanted for m in ids])
        rows[b] = r
        n = len(items)
        frames.append(pl.DataFrame({
            "model": np.repeat(ids[r], n), "benchmark": [b] * (len(r) * n),
            "item": np.tile(items, len(r)), "correct": values[r].reshape(-1),
        }))  # fmt: skip
    pl.concat(frames).write_parquet(path)
    old = time.time() - 3600  # settled: the inbox reads files unchanged for 60 s
    os.utime(path, (old, old))
    return rows


def live_mae(home: Path, data, rows) -> dict[str, tuple[float, float | None]]:
    """The live set's MAE (points) on this night's new models: (store target, full score)."""
    from sparseeval.consume.sets.anchorset import load_anchor_set

    out = {}
    for b, r in rows.items():
        if not (home / "published" / b).is_dir() or not len(r):
            continue
        values, _, items, y, full = data[b]
        pred = load_anchor_set(home / "published", b).predict_matrix(values[r], items)
        f = None if full is None else 100 * np.mean(np.abs(pred - full[r]))
        out[b] = (100 * float(np.mean(np.abs(pred - y[r]))), f)
    return out


def setup_env(root: Path) -> None:
    prefect = root / "prefect"
    prefect.mkdir(parents=True)
    os.environ.update(
        PREFECT_HOME=str(prefect), PREFECT_RESULTS_LOCAL_STORAGE_PATH=str(prefect / "results"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_LOGGING_LEVEL="WARNING",
        HF_HUB_OFFLINE="1",
    )  # fmt: skip
    os.environ.pop("PREFECT_API_URL", None)


def nights(args, root: Path) -> None:
    from prefect.testing.utilities import prefect_test_harness
    from sparseeval.flows.refresh import refresh

    need = args.first + (args.nights - 1) * args.per_night
    data, order = metabench_data(args) if args.data == "metabench" else synthetic_data(args, need)
    cuts = [0] + [args.first + i * args.per_night for i in range(args.nights)]
    batches = [order[a:b] for a, b in pairwise(cuts)] + [[]] * args.quiet_nights
    inbox = root / "inbox"
    inbox.mkdir()
    base = {"n_anchors": args.anchors, "sources": [f"inbox:{inbox}"] * (args.feed == "inbox")}
    rows, t0 = [], time.perf_counter()
    with prefect_test_harness(server_startup_timeout=120):
        startup = time.perf_counter() - t0
        for night, batch in enumerate(batches, 1):
            folder = inbox if args.feed == "inbox" else Path(tempfile.mkdtemp(dir=root))
            path = folder / f"night-{night:03d}.parquet"
            idx = write_night(data, batch, path) if batch else {}
            sources = [str(path)] if idx and args.feed == "file" else None
            for pol in args.policies:
                maes = live_mae(root / pol, data, idx)
                t = time.perf_counter()
                run = refresh(sources=sources, home=str(root / pol), fill_if_empty=False,
                              settings_overrides=base | POLICIES[pol])  # fmt: skip
                secs = time.perf_counter() - t
                for r in run.results:
                    d = r.decision
                    drift = "-" if d is None or r.live is None else "yes" if d.drift else "no"
                    rows.append((night, pol, secs, r.benchmark, len(idx.get(r.benchmark, [])),
                                 *maes.get(r.benchmark, (None, None)), drift,
                                 r.published_version, describe(r)))  # fmt: skip
                print(f"night {night} {pol}: {secs:.1f}s {maes}", file=sys.stderr, flush=True)
    report(args, rows, startup, len(order))


def describe(r) -> str:
    """The outcome in one short line: published, refused by the gate (figures), or why not."""
    if r.error or r.decision is None:
        return f"failed: {r.error}"
    why = f" ({r.decision.reason})" if r.decision.drift else ""
    if r.published_version is not None:
        return f"published v{r.published_version}{why}"
    g = (r.gate.figures if r.gate else None) or {}
    if r.gate and not r.gate.accept and "candidate_mae_heldout" in g:
        out = (f"refused by the gate: candidate {g['candidate_mae_heldout']:.2f} vs live "
               f"{g['live_mae_heldout']:.2f} on {g['n_heldout']} held-out")  # fmt: skip
        if "candidate_mae_fresh_heldout" in g:
            c, live = g["candidate_mae_fresh_heldout"], g["live_mae_fresh_heldout"]
            out += f", {c:.2f} vs {live:.2f} on {g['n_fresh_heldout']} fresh"
        return out + why
    return r.outcome


def report(args, rows, startup: float, pool: int) -> None:
    full = args.data == "metabench"
    print(f"\nnights benchmark: data {args.data} ({', '.join(args.benchmarks)}), night 1 "
          f"{args.first:,} models, then {args.nights - 1} nights x {args.per_night} and "
          f"{args.quiet_nights} quiet night(s); {args.anchors} anchors; feed {args.feed}; "
          + (f"ability drift {args.drift} SD; " if args.data == "synthetic" else "") +
          f"pool {pool:,} models; {os.cpu_count()} CPUs")  # fmt: skip
    target = "the store target (mean over the stored items); `full`: vs metabench's full score"
    print(f"""Prefect temporary server start-up {startup:.1f}s (not in the times below)
MAE: the live set (before the night's refresh) on that night's new models, in points, vs \
{target if full else "their true accuracy (mean over items)"}
every-night asks to publish every night with new models; the quality gate still applies
targets: drift's mean MAE (nights 2..N) <= 1.10 x every-night's, with <= 1/3 of its \
republishes (nights 2..N); quiet night < 30 s; cold first night at OLLM scale < 15 min
""")
    head = (f"{'night':>5} {'policy':<12}{'secs':>7}  {'bench':<11}{'new':>6}{'MAE':>7}"
            + (f"{'full':>7}" if full else "") + f"  {'drift':<6}outcome")  # fmt: skip
    print(head + "\n" + "-" * len(head))
    for night, pol, secs, b, new, mae, fmae, drift, _, outcome in rows:
        print(f"{night:>5} {pol:<12}{secs:>7.1f}  {b:<11}{new:>6}{fmt(mae):>7}"
              + (f"{fmt(fmae):>7}" if full else "") + f"  {drift:<6}{outcome[:150]}")  # fmt: skip
    print("\nsummary (MAE: mean over benchmarks and nights 2..N with new models)\n")
    head = (f"{'policy':<12}{'MAE':>7}" + (f"{'full':>7}" if full else "")
            + f"{'publishes':>11}{'republishes':>13}{'refused':>9}{'quiet s':>9}"
            f"{'night-1 s':>11}{'batch s':>9}")  # fmt: skip
    print(head + "\n" + "-" * len(head))
    summ = {}
    for pol in args.policies:
        mine = [r for r in rows if r[1] == pol]
        secs = {n: s for n, _, s, *_ in mine}
        scored = [r for r in mine if r[0] > 1 and r[5] is not None]
        mae = statistics.fmean(r[5] for r in scored) if scored else None
        fm = statistics.fmean(r[6] for r in scored) if full and scored else None
        pubs = sum(r[8] is not None for r in mine)
        repubs = sum(r[8] is not None for r in mine if r[0] > 1)  # republishes: nights 2..N
        refused = sum("refused" in r[9] for r in mine)
        quiet = [secs[n] for n in secs if n > args.nights]
        batch = [secs[n] for n in secs if 1 < n <= args.nights]
        q = statistics.median(quiet) if quiet else None
        summ[pol] = (mae, repubs, q)
        print(f"{pol:<12}{fmt(mae):>7}" + (f"{fmt(fm):>7}" if full else "")
              + f"{pubs:>11}{repubs:>13}{refused:>9}{fmt(q, '.1f'):>9}{secs[1]:>11.1f}"
              f"{fmt(statistics.median(batch) if batch else None, '.1f'):>9}")  # fmt: skip
    if {"drift", "every-night"} <= set(summ) and summ["every-night"][0]:
        (dm, dp, _), (em, ep, _) = summ["drift"], summ["every-night"]
        print(f"\ntarget drift MAE <= 1.10 x every-night: {dm:.2f} vs {1.1 * em:.2f}: "
              f"{'met' if dm <= 1.1 * em else 'NOT met'}; republishes {dp} <= {ep}/3: "
              f"{'met' if dp <= ep / 3 else 'NOT met'}")  # fmt: skip
    print_nights_in_drift(args, rows)
    qs = [s[2] for s in summ.values() if s[2] is not None]
    if qs:
        print(f"target quiet night < 30 s: worst median {max(qs):.1f}s: "
              f"{'met' if max(qs) < 30 else 'NOT met'}")  # fmt: skip


def nights_in_drift(rows, policy: str, benchmark: str) -> int:
    """The longest run of nights the live set stayed drifted with nothing new published."""
    longest = run = 0
    for _, pol, _, b, _, _, _, drift, version, _ in sorted(rows, key=lambda r: r[0]):
        if pol != policy or b != benchmark:
            continue
        run = run + 1 if drift == "yes" and version is None else 0
        longest = max(longest, run)
    return longest


def print_nights_in_drift(args, rows) -> None:
    print("\nnights in drift (longest run per benchmark; target <= 3)\n")
    head = f"{'policy':<14}" + "".join(f"{b:>12}" for b in args.benchmarks) + f"{'worst':>8}"
    print(head + "\n" + "-" * len(head))
    for pol in args.policies:
        n = [nights_in_drift(rows, pol, b) for b in args.benchmarks]
        print(f"{pol:<14}" + "".join(f"{k:>12}" for k in n) + f"{max(n):>8}")


def cold_ollm(args, root: Path) -> None:
    """Night 1 at OLLM scale (6 benchmarks, `--first` models), then one quiet night."""
    from prefect.testing.utilities import prefect_test_harness
    from sparseeval.flows.refresh import refresh

    t0, out, spec = time.perf_counter(), [], f"synthetic:n_models={args.first},items=ollm"
    with prefect_test_harness(server_startup_timeout=120):
        startup = time.perf_counter() - t0
        for name, src in (("cold first night", [spec]), ("quiet night", [])):
            t = time.perf_counter()
            over = {"n_anchors": args.anchors, "sources": []}
            run = refresh(src, home=str(root / "drift"), fill_if_empty=False,
                          settings_overrides=over)  # fmt: skip
            out.append((name, time.perf_counter() - t, run.ingest.seconds, run.n_trained,
                        run.n_published))  # fmt: skip
    print(f"\ncold OLLM night: {spec} (6 benchmarks, 817-14,042 items), {args.anchors} anchors,"
          f" default settings otherwise, {os.cpu_count()} CPUs\nPrefect temporary server "
          f"start-up {startup:.1f}s (not included)\n\n{'run':<18}{'total s':>9}{'ingest s':>10}"
          f"{'trained':>9}{'published':>11}")  # fmt: skip
    for name, secs, ing, n, pub in out:
        print(f"{name:<18}{secs:>9.1f}{ing:>10.1f}{n:>9}{pub:>11}")
    ok = "met" if out[0][1] < 900 else "NOT met"
    print(f"\ntarget cold first night < 15 min: {out[0][1] / 60:.1f} min: {ok}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", choices=["synthetic", "metabench"], default="synthetic")
    ap.add_argument("--nights", type=int, default=9, help="nights with new models, night 1 too")
    ap.add_argument("--first", type=int, help="models on night 1 (1,500; --cold-ollm 5,000)")
    ap.add_argument("--per-night", type=int, default=150)
    ap.add_argument("--quiet-nights", type=int, default=2, help="then nights with no new data")
    ap.add_argument("--benchmarks", default="arc,gsm8k")
    ap.add_argument("--anchors", type=int, help="30 (--cold-ollm: 100)")
    ap.add_argument("--scale", type=float, default=0.5, help="synthetic: x OLLM v1 item counts")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--feed", choices=["inbox", "file"], default="inbox")
    ap.add_argument("--drift", type=float, default=1.5, help="synthetic: ability rise, SDs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cold-ollm", action="store_true", help="time night 1 at OLLM scale only")
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), help="preset nights/drift")
    args = ap.parse_args(argv)
    for key, value in SCENARIOS.get(args.scenario, {}).items():
        if getattr(args, key) == ap.get_default(key):  # what the command line says wins
            setattr(args, key, value)
    args.first = args.first or (5000 if args.cold_ollm else 1500)
    args.anchors = args.anchors or (100 if args.cold_ollm else 30)
    args.benchmarks = args.benchmarks.split(",")
    args.policies = args.policies.split(",")
    if unknown := set(args.policies) - set(POLICIES):
        ap.error(f"unknown policies: {', '.join(sorted(unknown))}")
    root = Path(tempfile.mkdtemp(prefix="sparseeval-nights-"))
    setup_env(root)
    (cold_ollm if args.cold_ollm else nights)(args, root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
