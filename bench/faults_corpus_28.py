"""Issue 28's case families for the corpus (`bench/faults_corpus.py` imports this): cache
entries that are not what was written, manifest fields without a check, lease lines."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

from faults_corpus import (
    CLASSES,
    case,
    copy_published,
    fresh_home,
    predict,
    refused,
    reseal,
    settings_args,
    succeeded,
)

CACHE, FIELDS, LEASE = (CLASSES.index(c) for c in CLASSES[-3:])


def _refresh(w, d, home: Path, **extra):
    return w.cli("refresh", "--home", home, *settings_args(extra), cwd=d, timeout=400)


# -- cache entries that are not what was written -----------------------------------------


def _cache_damage(fn: Callable[[Path], None]):
    def run(d, w):
        home = fresh_home(w, d)
        fn(home / "artifacts")
        return succeeded(_refresh(w, d, home), "benchmarks")

    return run


def _truncate(glob: str, keep: int = 64):
    def fn(art: Path) -> None:
        for p in art.rglob(glob):
            p.write_bytes(p.read_bytes()[:keep])

    return fn


def _swap_matrices(art: Path) -> None:
    mats = sorted((art / "matrix").glob("*.npz"))
    if len(mats) >= 2:
        a, b = mats[0].read_bytes(), mats[1].read_bytes()
        mats[0].write_bytes(b)
        mats[1].write_bytes(a)


for _name, _fn in [
    ("truncated matrix", _truncate("*.npz")),
    ("garbled summary.json", _truncate("summary.json", 7)),
    ("garbled pool_check.json", _truncate("pool_check.json", 9)),
    ("garbled items.json", _truncate("*.items.json", 5)),
    ("matrices swapped between benchmarks", _swap_matrices),
    ("garbled ledger and drift history", _truncate("*-*.json*", 3)),
]:
    case(CACHE, _name, f"{_name} in artifacts/, refresh: ok (a logged miss, rebuilt)")(
        _cache_damage(_fn)
    )


@case(CACHE, "artifacts folder is a file", "home/artifacts a file, refresh: one line, exit 2")
def _(d, w):
    home = fresh_home(w, d)
    shutil.rmtree(home / "artifacts", ignore_errors=True)
    (home / "artifacts").write_text("not a folder")
    return refused(_refresh(w, d, home), "artifacts folder", "cannot be written")


# -- manifest fields without a check -----------------------------------------------------


def _set(path: str, value):
    def change(m: dict) -> None:
        *parents, last = path.split(".")
        for p in parents:
            m = m.setdefault(p, {})
        m[last] = value

    return change


def _adaptive(edges, floor=0.02):
    spread = {"coef": [0.05, 0.0, 0.0], "floor": floor, "low": 0.1, "high": 0.9}
    qs = [1.0] * (len(edges) + 1)
    return _set("interval.adaptive", {"spread": spread, "edges": edges, "quantiles": qs})


def _field_case(change: Callable[[dict], None], word: str):
    def run(d, w):
        root = copy_published(w, d)
        reseal(root / "arc" / f"v{json.loads((root / 'arc' / 'latest').read_text())['version']}",
               change)  # fmt: skip
        answers = d / "a.csv"
        answers.write_text("item,correct\n" + "".join(f"{i},1\n" for i in w.arc_items))
        return refused(predict(w, d, root, answers), "manifest field", word)

    return run


for _name, _change, _word in [
    ("pool check threshold NaN", _set("pool_check.threshold", math.nan), "threshold"),
    ("pool check widen 0", _set("pool_check.widen", 0), "widen"),
    ("pool check widen -3", _set("pool_check.widen", -3), "widen"),
    ("pool check low above high", _set("pool_check.low", 5.0), "pool_check"),
    ("adaptive band edges reversed", _adaptive([0.7, 0.3]), "edges"),
    ("adaptive spread negative", _adaptive([0.5], floor=-0.3), "floor"),
    ("item_sources a list", _set("item_sources", ["a", "b"]), "item_sources"),
    ("item_sources a string", _set("item_sources", "arc_challenge"), "item_sources"),
    ("coverage_check NaN", _set("interval.coverage_check",
                                {"coverage_before": math.nan, "action": "kept"}), "coverage"),
    ("coverage_check a string", _set("interval.coverage_check", "fine"), "coverage_check"),
    ("n_anchors not the items'", _set("n_anchors", 999), "n_anchors"),
]:  # fmt: skip
    case(FIELDS, _name, f"{_name} in a resealed manifest: predict refuses naming the field")(
        _field_case(_change, _word)
    )


def _drift_case(rows):
    def run(d, w):
        p = d / "drift.json"
        p.write_text(json.dumps(rows))
        r = w.cli("report", "--anchor-set", w.home / "published", "--benchmark", "arc",
                  "--drift", p, "--out", d / "out", cwd=d)  # fmt: skip
        return refused(r, "drift row")

    return run


for _name, _rows in [
    ("report --drift NaN mae", [{"version": 1, "mae": math.nan, "n_models": 3}]),
    ("report --drift row without n_models", [{"version": 1, "mae": 1.0}]),
    ("report --drift version 0", [{"version": 0, "mae": 1.0, "n_models": 3}]),
]:
    case(FIELDS, _name, f"{_name}: one line naming the row")(_drift_case(_rows))


# -- lease lines -------------------------------------------------------------------------


def _lease(record: dict | None):
    def put(home: Path) -> None:
        if record is None:
            (home / ".lease").mkdir()
        else:
            (home / ".lease").write_text(json.dumps(record))

    return put


@case(LEASE, "lease file is a folder", "home/.lease a folder: refresh refuses in one line")
def _(d, w):
    home = fresh_home(w, d)
    _lease(None)(home)
    return refused(_refresh(w, d, home), "is a folder")


@case(LEASE, "lease held by a live run", "a live holder, no wait: one line naming it, exit 2")
def _(d, w):
    home = fresh_home(w, d)
    _lease({"holder": "nightly 03:00", "token": "t", "pid": os.getpid(),
            "host": socket.gethostname(), "renewed": time.time()})(home)  # fmt: skip
    return refused(_refresh(w, d, home, lease_wait_seconds=0), "in use by", "nightly 03:00")


for _name, _renewed in [("renewed in the future", time.time() + 3e8), ("renewed 'soon'", "soon")]:

    def _run(d, w, renewed=_renewed):
        home = fresh_home(w, d)
        _lease({"holder": "x", "token": "t", "pid": 1, "host": "elsewhere",
                "renewed": renewed})(home)  # fmt: skip
        return succeeded(_refresh(w, d, home), "benchmarks")

    case(LEASE, f"lease {_name}", f"a lease {_name} on another host: stale, refresh ok")(_run)
