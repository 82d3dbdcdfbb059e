"""Ingest speed of the cold OLLM-scale night's data, with CPU time and a per-SQL-file profile.

The source `bench/refresh.py` ingests first (the synthetic leaderboard shaped like the Open
LLM Leaderboard v1: 5,000 models, 6 benchmarks, 28,659 items, 143.3M result rows in 39
units), into a fresh store; the leaderboard is generated before the clock starts. Prints
one JSON line (rows, units, wall and CPU seconds, load average at start and end, a hash
signature of the stored results, the quarantine count), then, with `prof`, each SQL file's
calls, wall and CPU seconds (CPU of the whole process while that file ran).

    python bench/ingest_ollm.py 5000 1.0 prof     # the issue's size (models, item scale)
    python bench/ingest_ollm.py 1000 0.5 prof     # 14.3M rows, a minute
"""

from __future__ import annotations

import collections
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from sparseeval.method.synthetic import OLLM_V1_ITEMS
from sparseeval.pipeline.store import Store, db
from sparseeval.pipeline.store import ingestion as ing
from sparseeval.pipeline.store.synthetic import SyntheticLeaderboard

SIGNATURE = (
    "SELECT count(*), sum(hash(benchmark_id, model_id, item_id, correct, ref_id)) FROM results"
)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def profile_sql(stats: dict) -> None:
    """Time every `db.execute` / `db.fetch` call by SQL file (calls, wall s, CPU s)."""
    for name in ("execute", "fetch"):
        orig = getattr(db, name)

        def wrap(con, file, params, _orig=orig):
            c, t = cpu(), time.perf_counter()
            out = _orig(con, file, params)
            s = stats[file]
            s[0], s[1], s[2] = s[0] + 1, s[1] + time.perf_counter() - t, s[2] + cpu() - c
            return out

        for mod in list(sys.modules.values()):
            named = getattr(mod, "__name__", "").startswith("sparseeval.pipeline")
            if named and getattr(mod, name, None) is orig:
                setattr(mod, name, wrap)


def main() -> None:
    n_models, scale, prof = int(sys.argv[1]), float(sys.argv[2]), len(sys.argv) > 3
    stats: dict = collections.defaultdict(lambda: [0, 0.0, 0.0])
    if prof:
        profile_sql(stats)
    items = {b: max(20, round(n * scale)) for b, n in OLLM_V1_ITEMS.items()}
    src = SyntheticLeaderboard(n_models=n_models, items=items, seed=0)
    _ = src.leaderboard  # generated before the clock starts
    home = Path(tempfile.mkdtemp(prefix="sparseeval-ingest-"))
    load0 = os.getloadavg()[0]
    with Store.open(home / "store.duckdb") as st:
        c, t = cpu(), time.perf_counter()
        reports = ing.ingest(st, src)
        wall, cpu_s = time.perf_counter() - t, cpu() - c
        ((n,),) = st.con.execute("SELECT count(*) FROM results").fetchall()
        sig = st.con.execute(SIGNATURE).fetchall()
        quarantined = st.con.execute("SELECT count(*) FROM quarantine").fetchall()
    shutil.rmtree(home)
    line = {"rows": n, "units": len(reports), "wall": round(wall, 1), "cpu": round(cpu_s, 1),
            "load": [load0, os.getloadavg()[0]], "sig": str(sig), "quar": quarantined}  # fmt: skip
    print(json.dumps(line))
    for k, v in sorted(stats.items(), key=lambda kv: -kv[1][1])[:20]:
        print(f"{k:<28}{v[0]:>5}{v[1]:>9.2f}{v[2]:>9.2f}")


if __name__ == "__main__":
    main()
