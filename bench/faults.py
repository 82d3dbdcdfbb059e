"""Fault injection: `kill -9` at seeded random moments during ingest and refresh/publish.

    python bench/faults.py                  # 6 random kills per scenario, 4 in the publish window
    python bench/faults.py --refresh-kills 4              # what bench/RESULTS.md's table ran
    python bench/faults.py --kills 12 --rows 8000000 --publish-kills 6 --seed 1 --json

The bad-input corpus is a test suite now: `python -m pytest -n 2 -m slow tests/faults`.

Scenarios (each kill is followed by a recovery run of the very same command, to completion):

  ingest              `python -m sparseeval ingest A B C A2 --store S` on a fresh store per
                      kill: long Parquet tables of `--rows` rows in all (four files, one unit
                      each; A2 is A with 5 % of its values flipped, so the update path and
                      `result_history` are exercised). Killed at uniform(0.3 s, T), T the
                      duration of an uninterrupted reference run.
  refresh             `python -m sparseeval refresh --home H --source release-B` on a copy of
                      a home where release A (200 models, arc + gsm8k) is published as v1 with
                      a weak fit; release B (60 new arc models) drifts, so the run trains and
                      publishes arc v2. Killed at uniform(0.5 s, T).
  refresh (publish)   the same, killed at uniform(0, W) after the first new entry
                      (`.tmp-v*` or `v2`) appears under published/arc, W the time from that
                      entry to `latest` moving in the reference run (+0.2 s, at least 0.5 s);
                      every second kill instead lands the instant `v2` appears (polled every
                      5 ms), before `latest` moves: a candidate written but not promoted.

After each kill, and again after the recovery run, it checks:
  store consistent    opens with `Store.open(read_only=True)`: every result, history row,
                      model, item, source ref and quarantine row belongs to an ingest run with
                      status 'ok'; no (model, item) twice; count and sum of `correct` per
                      (benchmark, model) equal the source files' for exactly the files whose
                      run is 'ok'. After recovery also: no run left 'running', the recovery
                      exited 0, a plain re-run skips every unit, and a `--force` re-ingest
                      leaves the same results (ingest scenario).
  rows lost           rows of runs recorded 'ok' that are not in the store (at the kill and
                      after recovery).
  gate                every `vN` folder under published/ that `load_anchor_set(root, b,
                      version=N)` loads although N is not in the `latest` pointer's promoted
                      record (read raw from the JSON), at the kill and after recovery; and the
                      live version must load.
  leftovers           `.tmp-v*` folders left after the recovery run.
  orphans             processes carrying this run's tag in their environment (the CLI's
                      children, e.g. the temporary Prefect server `uvicorn ...create_app`)
                      still alive 20 s after the CLI was killed or had exited (read from
                      /proc; survivors are then killed by pid so the next trial starts clean).

Measured: bench/RESULTS.md, section Faults.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed

from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import BUDGET_DIR, VERSION_DIR, AnchorSetError
from sparseeval.pipeline import sources
from sparseeval.pipeline.store import Store

TAG = "SPARSEEVAL_FAULTS_TAG"
ORPHAN_GRACE_S = 20.0
ITEMS = {"arc": 60, "gsm8k": 50}  # the refresh releases (as tests/helpers.py)
TINY = ["n_test=40", "n_valid=30", "epochs=50", "patience=10", "min_new_models=5"]
BASE_SETTINGS = [*TINY, "n_anchors=2", "refine_steps=0"]  # a weak v1, so v2 passes the gate
KILLED_SETTINGS = [*TINY, "n_anchors=8", "refine_steps=2", "drift_mae_points=0.01"]


def say(msg: str) -> None:
    print(time.strftime("%H:%M:%S ") + msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- processes


def _env(work: Path, prefect_home: Path | None = None, results: Path | None = None) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PREFECT_API_URL" and not k.startswith("SPARSEEVAL_")
    }
    env |= {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if prefect_home is not None:
        env["PREFECT_HOME"] = str(prefect_home)
    if results is not None:
        env["PREFECT_RESULTS_LOCAL_STORAGE_PATH"] = str(results)
    return env


def _tagged(tag: str) -> dict[int, str]:
    """{pid: command line} of live (not zombie) processes whose environment holds the tag."""
    needle = f"{TAG}={tag}".encode()
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if needle not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            if "\nState:\tZ" in (proc / "status").read_text():
                continue
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(proc.name)] = cmd.strip()
    return found


def _orphans(tag: str) -> list[str]:
    """Tagged processes still alive after the grace period; they are then killed (by pid)."""
    deadline = time.monotonic() + ORPHAN_GRACE_S
    while (left := _tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return [f"{pid}: {cmd[:160]}" for pid, cmd in left.items()]


def run_full(cmd: list[str], env: dict, cwd: Path, timeout: float = 600) -> dict:
    """Run to completion; exit code, seconds, stdout, orphans left after it exited."""
    tag = uuid.uuid4().hex
    t0 = time.perf_counter()
    out = subprocess.run(
        cmd, env=env | {TAG: tag}, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    seconds = time.perf_counter() - t0
    return {
        "rc": out.returncode,
        "seconds": seconds,
        "stdout": out.stdout,
        "stderr": out.stderr[-2000:],
        "orphans": _orphans(tag),
    }


def run_killed(
    cmd: list[str],
    env: dict,
    cwd: Path,
    delay: float | None = None,
    trigger=None,
    after_trigger: float = 0.0,
    timeout: float = 600,
) -> dict:
    """Start `cmd`, SIGKILL it after `delay` s (or `after_trigger` s after `trigger()` is true).

    `landed` is False when the command ended before the kill.
    """
    tag = uuid.uuid4().hex
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, env=env | {TAG: tag}, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        if trigger is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=delay)
        else:
            while proc.poll() is None and not trigger() and time.monotonic() - t0 < timeout:
                time.sleep(0.005)
            if proc.poll() is None and after_trigger > 0:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=after_trigger)
        landed = proc.poll() is None
        at = time.monotonic() - t0
        if landed:
            children = [p for p in _tagged(tag) if p != proc.pid]
            os.kill(proc.pid, signal.SIGKILL)
        else:
            children = []
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {
        "landed": landed,
        "at": at,
        "rc": proc.returncode,
        "children": len(children),
        "orphans": _orphans(tag),
    }


# --------------------------------------------------------------------------- store checks


def aggregates(frame: pl.DataFrame) -> dict[tuple[str, str], tuple[int, int]]:
    """{(benchmark, model): (rows, sum of correct)} of a long table."""
    agg = frame.group_by("benchmark", "model").agg(
        pl.len().alias("n"), pl.col("correct").cast(pl.Int64).sum().alias("s")
    )
    return {(b, m): (int(n), int(s)) for b, m, n, s in agg.iter_rows()}


OK_RUN = "SELECT 1 FROM ingest_runs i WHERE i.run_id = {col} AND i.status = 'ok'"
OK_REF = (
    "SELECT 1 FROM source_refs s JOIN ingest_runs i USING (run_id)"
    " WHERE s.ref_id = {col} AND i.status = 'ok'"
)
ORPHAN_DATA = {
    "results": ("results r", OK_REF.format(col="r.ref_id")),
    "result_history": ("result_history r", OK_REF.format(col="r.ref_id")),
    "result_history (replaced_by)": ("result_history r", OK_REF.format(col="r.replaced_by_ref")),
    "models": ("models r", OK_RUN.format(col="r.first_run")),
    "items": ("items r", OK_RUN.format(col="r.first_run")),
    "source_refs": ("source_refs r", OK_RUN.format(col="r.run_id")),
    "quarantine": ("quarantine r", OK_RUN.format(col="r.run_id")),
}


def check_store(path: Path, files: dict[str, dict], after_recovery: bool) -> dict:
    """Consistency of the store at `path` against the source files whose run is 'ok'.

    files: {file name: {(benchmark, model): (rows, sum)}}, in ingest order (later files
    replace earlier values). Returns {"problems": [...], "rows_lost": n, "runs": {...}}.
    """
    problems: list[str] = []
    if not path.exists():
        return {"problems": [], "rows_lost": 0, "runs": {}, "ok_files": [], "note": "no store"}
    try:
        store = Store.open(path, read_only=True, wait_s=30)
    except Exception as exc:
        return {"problems": [f"cannot open: {exc}"], "rows_lost": 0, "runs": {}, "ok_files": []}
    with store:
        con = store.con
        runs = con.sql("SELECT status, count(*) FROM ingest_runs GROUP BY ALL").fetchall()
        runs_by = {s: int(n) for s, n in runs}
        if after_recovery and runs_by.get("running"):
            problems.append(f"{runs_by['running']} run(s) left 'running'")
        ok_sql = "SELECT source FROM ingest_runs WHERE status = 'ok' ORDER BY run_id"
        ok_sources = [r[0] for r in con.sql(ok_sql).fetchall()]
        ok_files = [Path(s).name for s in ok_sources]
        for name, (table, exists) in ORPHAN_DATA.items():
            query = f"SELECT count(*) FROM {table} WHERE NOT EXISTS ({exists})"
            ((n,),) = con.sql(query).fetchall()
            if n:
                problems.append(f"{n:,} {name} row(s) of a run that is not 'ok'")
        ((dups,),) = con.sql(
            "SELECT count(*) FROM (SELECT 1 FROM results GROUP BY model_id, item_id"
            " HAVING count(*) > 1)"
        ).fetchall()
        if dups:
            problems.append(f"{dups:,} (model, item) pairs stored twice")
        stored = {
            (b, m): (int(n), int(s))
            for b, m, n, s in con.sql(
                "SELECT b.name, m.model, count(*), sum(r.correct::INT) FROM results r"
                " JOIN models m USING (model_id) JOIN benchmarks b USING (benchmark_id)"
                " GROUP BY ALL"
            ).fetchall()
        }
    expected: dict[tuple[str, str], tuple[int, int]] = {}
    for name in files:  # ingest order: a later file's values replace an earlier one's
        if name in ok_files:
            expected.update(files[name])
    unknown = sorted(set(ok_files) - set(files))
    if unknown:
        problems.append(f"ok runs of unknown sources {unknown}")
    lost = sum(max(0, n - stored.get(k, (0, 0))[0]) for k, (n, _) in expected.items())
    extra = sum(n for k, (n, _) in stored.items() if k not in expected) + sum(
        max(0, n - expected[k][0]) for k, (n, _) in stored.items() if k in expected
    )
    wrong = sum(1 for k, v in expected.items() if k in stored and stored[k][1] != v[1])
    if lost:
        problems.append(f"{lost:,} row(s) of 'ok' runs missing")
    if extra:
        problems.append(f"{extra:,} row(s) stored that no 'ok' run accounts for")
    if wrong:
        problems.append(f"{wrong:,} (benchmark, model) with values differing from the source")
    return {"problems": problems, "rows_lost": lost, "runs": runs_by, "ok_files": ok_files}


def snapshot_state(path: Path) -> tuple:
    """What a re-ingest must leave unchanged: count and checksum of the results."""
    with Store.open(path, read_only=True) as store:
        return store.con.sql(
            "SELECT count(*), sum(hash(model_id, item_id, correct)) FROM results"
        ).fetchall()[0]


# --------------------------------------------------------------------------- gate checks


def check_published(root: Path) -> dict:
    """Versions that load without ever being promoted; a live version that does not load."""
    unpromoted_loadable, problems, tmp_left, present = [], [], [], []
    if not root.is_dir():
        return {"unpromoted_loadable": [], "problems": [], "tmp": [], "versions": []}
    for bench_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        sets = [(bench_dir, None)] + [
            (p, int(m.group(1)))
            for p in sorted(bench_dir.iterdir())
            if p.is_dir() and (m := BUDGET_DIR.match(p.name))
        ]
        for set_folder, budget in sets:
            pointer = set_folder / "latest"
            promoted: set[int] = set()
            live = None
            if pointer.is_file():
                data = json.loads(pointer.read_text())
                live = int(data["version"])
                promoted = {int(v) for v in (data.get("promoted") or {})} | {live}
            tmp_left += [p.name for p in set_folder.iterdir() if p.name.startswith(".tmp-v")]
            for p in sorted(set_folder.iterdir()):
                m = VERSION_DIR.match(p.name)
                if not m or not p.is_dir():
                    continue
                v = int(m.group(1))
                label = f"{bench_dir.name}{'' if budget is None else f' k{budget}'} v{v}"
                present.append(label + ("" if v in promoted else " (not promoted)"))
                try:
                    load_anchor_set(root, bench_dir.name, version=v, budget=budget)
                    loads = True
                except AnchorSetError:
                    loads = False
                except Exception as exc:  # anything else is a defect of its own
                    loads = False
                    problems.append(f"{label}: {type(exc).__name__}: {exc}")
                if loads and v not in promoted:
                    unpromoted_loadable.append(label)
                if v == live and not loads:
                    problems.append(f"live {label} does not load")
            if live is not None and not (set_folder / f"v{live}").is_dir():
                problems.append(f"latest of {bench_dir.name} points at missing v{live}")
    return {
        "unpromoted_loadable": unpromoted_loadable,
        "problems": problems,
        "tmp": tmp_left,
        "versions": present,
    }


# --------------------------------------------------------------------------- scenarios


def _new_total() -> dict:
    return {
        "kills": 0,
        "missed": 0,
        "consistent": 0,
        "rows_lost": 0,
        "unpromoted_loadable": 0,
        "tmp_left": 0,
        "orphans": 0,
        "problems": [],
        "trials": [],
    }


def ingest_files(work: Path, rows: int, seed: int) -> tuple[list[Path], dict[str, dict]]:
    """Four long Parquet tables of `rows` rows in all: arc, gsm8k, mmlu, and arc again with
    5 % of its values flipped. Returns the paths (ingest order) and their aggregates."""
    n_items = 1000
    n_models = max(1, rows // 4 // n_items)
    src = sources.SyntheticLeaderboard(
        n_models=n_models, items={"arc": n_items, "gsm8k": n_items, "mmlu": n_items}, seed=seed
    )
    paths, aggs = [], {}
    cols = ("model", "benchmark", "item", "correct")
    for bench in ("arc", "gsm8k", "mmlu"):
        frame = src.frame(bench, 0, n_models).select(*cols)
        path = work / f"{bench}.parquet"
        frame.write_parquet(path)
        paths.append(path)
        aggs[path.name] = aggregates(frame)
    arc = pl.read_parquet(paths[0])
    flip = np.random.default_rng(seed).random(arc.height) < 0.05
    arc2 = arc.with_columns(
        pl.when(pl.Series(flip))
        .then(pl.when(pl.col("correct") == "1").then(pl.lit("0")).otherwise(pl.lit("1")))
        .otherwise(pl.col("correct"))
        .alias("correct")
    )
    path = work / "arc-corrected.parquet"
    arc2.write_parquet(path)
    paths.append(path)
    aggs[path.name] = aggregates(arc2)
    return paths, aggs


def scenario_ingest(work: Path, kills: int, rows: int, rng: random.Random, seed: int) -> dict:
    paths, files = ingest_files(work, rows, seed)
    say(f"ingest: {len(paths)} files, {rows:,} rows in all ({', '.join(p.name for p in paths)})")
    env = _env(work)

    def cmd(store: Path, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "sparseeval",
            "ingest",
            *map(str, paths),
            "--store",
            str(store),
            "--json",
            *extra,
        ]

    ref = run_full(cmd(work / "reference.duckdb"), env, work)
    if ref["rc"] != 0:
        raise RuntimeError(f"reference ingest failed: {ref['stderr']}")
    t_ref = ref["seconds"]
    say(f"ingest: reference run {t_ref:.1f}s")
    total = _new_total()
    attempts = 0
    while total["kills"] < kills and attempts < 3 * kills:
        attempts += 1
        store = work / f"store-{attempts}.duckdb"
        delay = rng.uniform(0.3, t_ref)
        k = run_killed(cmd(store), env, work, delay=delay)
        if not k["landed"]:
            total["missed"] += 1
            say(f"ingest: kill at {delay:.2f}s missed (finished first)")
            store.unlink(missing_ok=True)
            Path(f"{store}.wal").unlink(missing_ok=True)
            continue
        total["kills"] += 1
        at_kill = check_store(store, files, after_recovery=False)
        rec = run_full(cmd(store), env, work)
        after = check_store(store, files, after_recovery=True)
        problems = [f"at kill: {p}" for p in at_kill["problems"]] + after["problems"]
        if rec["rc"] != 0:
            problems.append(f"recovery exited {rec['rc']}: {rec['stderr'][-300:]}")
        if set(after["ok_files"]) != {p.name for p in paths}:
            problems.append(f"after recovery only {after['ok_files']} are ok")
        # idempotent: a plain re-run skips everything; a forced one leaves the same results
        state = snapshot_state(store)
        again = run_full(cmd(store), env, work)
        statuses = [r["status"] for r in json.loads(again["stdout"] or "[]")]
        if again["rc"] != 0 or statuses != ["skipped"] * len(paths):
            problems.append(f"re-run not all skipped: rc {again['rc']}, {statuses}")
        forced = run_full(cmd(store, "--force"), env, work)
        reports = json.loads(forced["stdout"] or "[]")
        if forced["rc"] != 0 or any(r["status"] != "ok" or r["n_new"] for r in reports):
            problems.append(
                f"forced re-ingest: rc {forced['rc']}, "
                f"{[(r['status'], r['n_new']) for r in reports]}"
            )
        if snapshot_state(store) != state:
            problems.append("forced re-ingest changed the results")
        final = check_store(store, files, after_recovery=True)
        problems += [f"after re-ingest: {p}" for p in final["problems"]]
        orphans = k["orphans"] + rec["orphans"] + again["orphans"] + forced["orphans"]
        running = at_kill["runs"].get("running", 0)
        done = len(at_kill["ok_files"])
        if running:
            where = f"mid-unit ({done} unit(s) done)"
        elif done == len(paths):
            where = "after the last unit"
        else:
            where = f"between units ({done} done)" if at_kill["runs"] else "before the first unit"
        trial = {
            "delay_s": round(delay, 2),
            "landed": where,
            "rows_lost_at_kill": at_kill["rows_lost"],
            "rows_lost": after["rows_lost"],
            "recovery_s": round(rec["seconds"], 1),
            "runs_after": after["runs"],
            "orphans": orphans,
            "problems": problems,
        }
        _tally(total, trial, at_kill["rows_lost"] + after["rows_lost"], 0, 0)
        say(
            f"ingest kill {total['kills']}/{kills} at {delay:.2f}s, {where}: "
            f"recovered in {rec['seconds']:.1f}s, runs {after['runs']}, "
            f"{'OK' if not problems and not orphans else problems + orphans}"
        )
        store.unlink(missing_ok=True)
        Path(f"{store}.wal").unlink(missing_ok=True)
    return total


def _tally(total: dict, trial: dict, lost: int, unpromoted: int, tmp_left: int) -> None:
    total["trials"].append(trial)
    total["consistent"] += not trial["problems"]
    total["rows_lost"] += lost
    total["unpromoted_loadable"] += unpromoted
    total["tmp_left"] += tmp_left
    total["orphans"] += len(trial["orphans"])
    total["problems"] += trial["problems"] + [f"orphan {o}" for o in trial["orphans"]]


def refresh_setup(work: Path) -> dict:
    """Releases A and B, and a base home with A published (weak fit) as v1."""
    src = sources.SyntheticLeaderboard(n_models=260, items=ITEMS, seed=3)
    files: dict[str, dict] = {}
    rel = {}
    for name, lo, hi, benches in (
        ("release-A", 0, 200, list(ITEMS)),
        ("release-B", 200, 260, ["arc"]),
    ):
        frame = pl.concat([src.frame(b, lo, hi) for b in benches]).select(
            "model", "benchmark", "item", "correct"
        )
        path = work / f"{name}.parquet"
        frame.write_parquet(path)
        files[path.name] = aggregates(frame)
        rel[name] = path
    base = work / "base"
    (base / "prefect").mkdir(parents=True, exist_ok=True)
    env = _env(work, base / "prefect", base / "results")
    out = run_full(refresh_cmd(base / "home", rel["release-A"], BASE_SETTINGS), env, work)
    if out["rc"] != 0:
        raise RuntimeError(f"base refresh failed: {out['stderr']}")
    say(f"refresh: base home (release A, v1 of arc and gsm8k) in {out['seconds']:.1f}s")
    return {"files": files, "release_b": rel["release-B"], "base": base}


def refresh_cmd(home: Path, source: Path, settings: list[str]) -> list[str]:
    sets = [a for s in settings for a in ("--set", s)]
    return [
        sys.executable,
        "-m",
        "sparseeval",
        "refresh",
        "--home",
        str(home),
        "--source",
        str(source),
        *sets,
    ]


def watch_publish(cmd: list[str], env: dict, cwd: Path, arc_dir: Path) -> dict:
    """Run to completion, noting when the first new entry, `v2` and the moved `latest` appear."""
    before = {p.name for p in arc_dir.iterdir()}
    pointer = (arc_dir / "latest").read_text()
    t0 = time.monotonic()
    seen: dict[str, float] = {}
    log = cwd / "reference.stderr"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            cmd, env=env | {TAG: uuid.uuid4().hex}, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err
        )
        while proc.poll() is None:
            now = time.monotonic() - t0
            with contextlib.suppress(OSError):
                new = {p.name for p in arc_dir.iterdir()} - before
                if new:
                    seen.setdefault("first_entry", now)
                if "v2" in new:
                    seen.setdefault("v2", now)
                if (arc_dir / "latest").read_text() != pointer:
                    seen.setdefault("latest", now)
            time.sleep(0.005)
    stderr = log.read_text()
    return {
        "rc": proc.returncode,
        "seconds": time.monotonic() - t0,
        "seen": seen,
        "stderr": stderr[-2000:],
    }


def _trial_home(setup: dict, folder: Path) -> tuple[Path, dict]:
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(setup["base"] / "home", folder / "home")
    shutil.copytree(setup["base"] / "results", folder / "results")
    (folder / "prefect").mkdir()
    env = _env(folder, folder / "prefect", folder / "results")  # a fresh Prefect server DB
    return folder / "home", env


def _phase(home: Path, at_kill: dict, pub: dict) -> str:
    runs = at_kill["runs"]
    if "release-B.parquet" not in at_kill["ok_files"]:
        return "mid-ingest" if runs.get("running") else "before ingest"
    arc = [v for v in pub["versions"] if v.startswith("arc ")]
    if pub["tmp"]:
        return "writing the candidate (.tmp-v)"
    if any("not promoted" in v for v in arc):
        return "candidate written, not promoted"
    if len(arc) > 1:
        return "after promotion"
    return "after ingest (fitting)"


def scenario_refresh(
    work: Path, setup: dict, kills: int, rng: random.Random, t_ref: float, window: float | None
) -> dict:
    """Kill at uniform(0.5 s, t_ref), or (`window` given) uniform(0, window) after the first
    new entry under published/arc."""
    publish_window = window is not None
    name = "refresh (publish)" if publish_window else "refresh"
    total = _new_total()
    attempts = 0
    while total["kills"] < kills and attempts < 3 * kills:
        attempts += 1
        folder = work / f"{'pub' if publish_window else 'ref'}-{attempts}"
        home, env = _trial_home(setup, folder)
        cmd = refresh_cmd(home, setup["release_b"], KILLED_SETTINGS)
        arc_dir = home / "published" / "arc"
        before = {p.name for p in arc_dir.iterdir()}
        if publish_window and total["kills"] % 2 == 1:  # the instant `v2` appears, unpromoted

            def trigger(arc_dir=arc_dir, before=before) -> bool:
                return "v2" not in before and (arc_dir / "v2").is_dir()

            k = run_killed(cmd, env, folder, trigger=trigger)
            when = f"{k['at']:.2f}s (as soon as v2 appeared)"
        elif publish_window:
            delay = rng.uniform(0.0, window)

            def trigger(arc_dir=arc_dir, before=before) -> bool:
                return any(
                    p.name not in before
                    and (p.name.startswith(".tmp-v") or VERSION_DIR.match(p.name))
                    for p in arc_dir.iterdir()
                )

            k = run_killed(cmd, env, folder, trigger=trigger, after_trigger=delay)
            when = f"{k['at']:.2f}s (+{delay:.2f}s after the first new entry)"
        else:
            delay = rng.uniform(0.5, t_ref)
            k = run_killed(cmd, env, folder, delay=delay)
            when = f"{delay:.2f}s"
        if not k["landed"]:
            total["missed"] += 1
            say(f"{name}: kill at {when} missed (finished first)")
            shutil.rmtree(folder, ignore_errors=True)
            continue
        total["kills"] += 1
        at_kill = check_store(_store_file(home), setup["files"], after_recovery=False)
        pub_kill = check_published(home / "published")
        phase = _phase(home, at_kill, pub_kill)
        rec = run_full(cmd, env, folder)
        after = check_store(_store_file(home), setup["files"], after_recovery=True)
        pub = check_published(home / "published")
        problems = [f"at kill: {p}" for p in at_kill["problems"] + pub_kill["problems"]]
        problems += after["problems"] + pub["problems"]
        if rec["rc"] != 0:
            problems.append(f"recovery exited {rec['rc']}: {rec['stderr'][-400:]}")
        if set(after["ok_files"]) != set(setup["files"]):
            problems.append(f"after recovery only {after['ok_files']} are ok")
        unpromoted = [f"at kill: {v}" for v in pub_kill["unpromoted_loadable"]]
        unpromoted += [f"after recovery: {v}" for v in pub["unpromoted_loadable"]]
        problems += [f"loads although never promoted: {v}" for v in unpromoted]
        problems += [f"left after recovery: {t}" for t in pub["tmp"]]
        orphans = k["orphans"] + rec["orphans"]
        trial = {
            "kill_at": when,
            "phase": phase,
            "children_at_kill": k["children"],
            "versions_at_kill": pub_kill["versions"],
            "tmp_at_kill": pub_kill["tmp"],
            "versions_after": pub["versions"],
            "recovery_s": round(rec["seconds"], 1),
            "runs_after": after["runs"],
            "rows_lost": at_kill["rows_lost"] + after["rows_lost"],
            "orphans": orphans,
            "problems": problems,
        }
        _tally(total, trial, trial["rows_lost"], len(unpromoted), len(pub["tmp"]))
        say(
            f"{name} kill {total['kills']}/{kills} at {when} [{phase}; "
            f"{k['children']} child process(es)]: at kill {pub_kill['versions']}"
            f"{' ' + str(pub_kill['tmp']) if pub_kill['tmp'] else ''}; recovered in "
            f"{rec['seconds']:.1f}s -> {pub['versions']}; "
            f"{'OK' if not problems and not orphans else problems + orphans}"
        )
        shutil.rmtree(folder, ignore_errors=True)
    return total


def _store_file(home: Path) -> Path:
    found = sorted(home.rglob("*.duckdb"))
    return found[0] if found else home / "store.duckdb"


# --------------------------------------------------------------------------- main


HEADER = (
    "scenario",
    "kills",
    "missed",
    "stores consistent after recovery",
    "rows lost",
    "versions loadable that never passed the gate",
    "leftover .tmp-v",
    "orphaned processes",
)


def table(results: dict[str, dict]) -> str:
    rows = [HEADER] + [
        (
            name,
            str(r["kills"]),
            str(r["missed"]),
            f"{r['consistent']}/{r['kills']}",
            f"{r['rows_lost']:,}",
            str(r["unpromoted_loadable"]),
            str(r["tmp_left"]),
            str(r["orphans"]),
        )
        for name, r in results.items()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kills", type=int, default=6, help="kills per scenario")
    ap.add_argument("--refresh-kills", type=int, help="random kills of refresh (default: --kills)")
    ap.add_argument(
        "--publish-kills",
        type=int,
        default=4,
        help="kills in the publish window (0: skip that scenario)",
    )
    ap.add_argument("--rows", type=int, default=4_000_000, help="rows per ingest (4 files)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--scenarios", default="ingest,refresh", help="comma-separated: ingest, refresh"
    )
    ap.add_argument("--work", help="work folder (default: a fresh temp dir, removed after)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if not Path("/proc").is_dir():
        ap.error("needs /proc (Linux)")
    rng = random.Random(args.seed)
    if args.refresh_kills is None:
        args.refresh_kills = args.kills
    wanted = {s.strip() for s in args.scenarios.split(",")}
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if args.work:
            work = Path(args.work)
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="faults-")))
        results: dict[str, dict] = {}
        if "ingest" in wanted:
            results["ingest"] = scenario_ingest(work, args.kills, args.rows, rng, args.seed)
        if "refresh" in wanted:
            setup = refresh_setup(work)
            home, env = _trial_home(setup, work / "reference")
            cmd = refresh_cmd(home, setup["release_b"], KILLED_SETTINGS)
            ref = watch_publish(cmd, env, work / "reference", home / "published" / "arc")
            pub = check_published(home / "published")
            seen = ref["seen"]
            window = max(0.5, seen.get("latest", 0) - seen.get("first_entry", 0) + 0.2)
            marks = ", ".join(f"{k} at {v:.2f}s" for k, v in seen.items())
            say(
                f"refresh: reference run {ref['seconds']:.1f}s (rc {ref['rc']}) -> "
                f"{pub['versions']}; new entries under published/arc: {marks}"
            )
            if ref["rc"] != 0 or "arc v2" not in pub["versions"]:
                raise RuntimeError(f"the reference refresh did not publish arc v2: {ref['stderr']}")
            shutil.rmtree(work / "reference", ignore_errors=True)
            results["refresh"] = scenario_refresh(
                work, setup, args.refresh_kills, rng, ref["seconds"], window=None
            )
            if args.publish_kills:
                results["refresh (publish)"] = scenario_refresh(
                    work, setup, args.publish_kills, rng, ref["seconds"], window=window
                )
    seconds = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"seconds": seconds, "args": vars(args), "results": results}, indent=1))
        return 0
    print(table(results))
    print(f"\nseed {args.seed}, {args.rows:,} rows per ingest, {seconds:.0f}s in all")
    for name, r in results.items():
        for p in dict.fromkeys(r["problems"]):
            print(f"{name}: {p}")
    for name, r in results.items():
        phases = [t.get("phase") or t.get("landed") for t in r["trials"]]
        print(
            f"{name}: kills landed "
            + "; ".join(f"{p} x{phases.count(p)}" for p in dict.fromkeys(phases))
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
