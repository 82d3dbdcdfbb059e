"""The fault-and-bad-input corpus (`tests/faults/test_corpus.py`, marked slow): each class of
bad input and fault built as files, the real CLI run on each (a subprocess with a timeout);
a case fails on any of:

  tracebacks     a Python traceback in the output
  silent wrong   exit 0 with a wrong result: an answer conflict merged, a refusal that
                 did not happen, code from cached data that ran, a damaged file used
  rows lost      good rows of an input that are not in the store afterwards
  hangs          the command ran past its timeout (killed)
  other          a case that failed otherwise: an error where success was due, a refusal
                 that did not say what it should, a store left changed

Every case names what it expects (`Case.note`, the test's message). The classes:
conflicting sources of one answer, caches that outlive their files, one bad line in a big
file, code in cached data, waits that never end, names that cannot be published, ids that
differ invisibly, damaged published files, messages that are tracebacks.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np

TRACEBACK = "Traceback (most recent call last)"
TINY = {
    "n_test": 40,
    "n_valid": 30,
    "epochs": 40,
    "patience": 8,
    "min_new_models": 5,
    "n_anchors": 4,
    "refine_steps": 0,
}
MARKER = "CODE-RAN"
CLASSES = (
    "conflicting sources of one answer",
    "caches that outlive their files",
    "one bad line in a big file",
    "code in cached data",
    "waits that never end",
    "names that cannot be published",
    "ids that differ invisibly",
    "damaged published files",
    "messages that are tracebacks",
    "cache entries not as written",
    "manifest fields unchecked",
    "lease lines",
    "reported scores bypass id and range rules",
    "id maps and hash checks",
    "scale and odd inputs",
    "tracebacks and unclear lines (28)",
)


# --------------------------------------------------------------------------- running


@dataclass
class Ran:
    argv: list[str]
    rc: int | None
    out: str
    err: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.rc is None

    @property
    def text(self) -> str:
        return self.out + self.err

    @property
    def traceback(self) -> bool:
        return TRACEBACK in self.text


@dataclass
class Verdict:
    traceback: bool = False
    wrong: bool = False
    lost: int = 0
    hang: bool = False
    other: bool = False
    why: str = ""


@dataclass
class Case:
    cls: str
    name: str
    note: str
    run: Callable[[Path, World], Verdict]


@dataclass
class World:
    """What every case starts from: a published home and the CLI's environment."""

    root: Path
    env: dict
    home: Path = field(init=False)
    release: Path = field(init=False)
    arc_items: list[str] = field(default_factory=list)
    suite_items: dict[str, list[str]] = field(default_factory=dict)
    ran: list[Ran] = field(default_factory=list)

    def cli(self, *argv, cwd: Path, timeout: float = 60, limit_bytes: int | None = None) -> Ran:
        """`python -m sparseeval ARGV` in `cwd`; rc None when it ran past `timeout`."""
        cmd = [sys.executable, "-m", "sparseeval", *map(str, argv)]
        pre = None
        if limit_bytes is not None:  # a disk that fills up: writes past it fail (EFBIG)

            def pre():
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

        t0 = time.perf_counter()
        try:
            p = subprocess.run(
                cmd,
                cwd=cwd,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                preexec_fn=pre,
            )
            ran = Ran(cmd, p.returncode, p.stdout, p.stderr, time.perf_counter() - t0)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else ""
            ran = Ran(cmd, None, out, "", time.perf_counter() - t0)
        self.ran.append(ran)
        return ran


def settings_args(extra: dict | None = None) -> list[str]:
    return [f"--set={k}={v}" for k, v in (TINY | (extra or {})).items()]


# --------------------------------------------------------------------------- verdicts


def refused(r: Ran, *words: str, code: int = 2) -> Verdict:
    """The command must refuse (exit `code`) in words naming the problem, no traceback."""
    v = Verdict(traceback=r.traceback, hang=r.hung)
    if r.hung:
        return v
    if r.rc == 0:
        v.wrong, v.why = True, "exit 0 (accepted)"
    elif r.rc != code or not all(w.lower() in r.text.lower() for w in words):
        v.other, v.why = True, f"rc {r.rc}: {r.text.strip()[-160:]}"
    return v


def succeeded(r: Ran, *words: str) -> Verdict:
    v = Verdict(traceback=r.traceback, hang=r.hung)
    if not r.hung and (r.rc != 0 or not all(w in r.text for w in words)):
        v.other, v.why = True, f"rc {r.rc}: {r.text.strip()[-200:]}"
    return v


def store_rows(store: Path, where: str = "TRUE") -> int:
    if not store.exists():
        return 0
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM results_view WHERE {where}").fetchone()[0]
    finally:
        con.close()


def store_query(store: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def rows_landed(r: Ran, store: Path, good: int, where: str = "TRUE") -> Verdict:
    """`good` rows must be in the store (the bad line quarantined, the file 'ok')."""
    v = Verdict(traceback=r.traceback, hang=r.hung)
    have = store_rows(store, where) if not r.hung else 0
    v.lost = max(0, good - have)
    if v.lost:
        v.why = f"{have} of {good} good rows stored (rc {r.rc}): {r.text.strip()[-160:]}"
    return v


# --------------------------------------------------------------------------- files


def long_csv(path: Path, models: int, items: int, bench: str = "arc", extra: str = "") -> Path:
    rows = [f"m{m},{bench},{i},{(m * 7 + i) % 2}\n" for m in range(models) for i in range(items)]
    path.write_text("model,benchmark,item,correct\n" + "".join(rows) + extra)
    return path


def answers_csv(path: Path, items, value, header: str = "item,correct") -> Path:
    path.write_text(header + "\n" + "".join(f"{i},{value}\n" for i in items))
    return path


def samples_run(folder: Path, lines: list[str], task: str = "arc_challenge") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    ts = "2025-01-01T00-00-00.000000"
    (folder / f"results_{ts}.json").write_text(json.dumps({"model_name": "org/m"}))
    (folder / f"samples_{task}_{ts}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def good_samples(n: int) -> list[str]:
    return [json.dumps({"doc_id": d, "acc_norm": d % 2}) for d in range(n)]


def copy_published(world: World, d: Path) -> Path:
    root = d / "published"
    shutil.copytree(world.home / "published", root)
    return root


def reseal(version_dir: Path, change: Callable[[dict], None]) -> None:
    """Change the manifest, re-hash its files, reseal and re-pin `latest`: a consistent damage."""
    from sparseeval.consume.hashing import file_sha256
    from sparseeval.consume.sets.layout import seal

    path = version_dir / "manifest.json"
    m = json.loads(path.read_text())
    change(m)
    for rel in m.get("files", {}):
        if (version_dir / rel).is_file():
            m["files"][rel] = file_sha256(version_dir / rel)
    m = seal(m)
    path.write_text(json.dumps(m))
    pointer = version_dir.parent / "latest"
    live = json.loads(pointer.read_text())
    live["manifest_sha256"] = m["manifest_sha256"]
    live["promoted"] = {str(m.get("version")): m["manifest_sha256"]}
    pointer.write_text(json.dumps(live))


class _RunsCode:
    """Unpickling this creates the marker file: code in cached data ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def predict(world: World, d: Path, root: Path, *files, bench: str = "arc", more=()) -> Ran:
    return world.cli(
        "predict", "--anchor-set", root, "--benchmark", bench, "--responses", *files, *more, cwd=d
    )


# --------------------------------------------------------------------------- the cases

CASES: list[Case] = []


def case(cls: int, name: str, note: str):
    def add(fn):
        CASES.append(Case(CLASSES[cls], name, note, fn))
        return fn

    return add


# -- 0 conflicting sources of one answer ----------------------------------------------


@case(0, "suite own file vs joint file", "arc=arc.csv all 0, all.csv arc/* all 1: refused")
def _(d, w):
    arc = answers_csv(d / "arc.csv", w.suite_items["arc"], 0)
    rows = [f"{b}/{i}" for b, items in w.suite_items.items() for i in items]
    joint = answers_csv(d / "all.csv", rows, 1)
    return refused(
        predict(w, d, w.home / "published", f"arc={arc}", joint, bench="suite"), "conflicting"
    )


@case(0, "two correct columns", "a CSV header naming correct twice: refused")
def _(d, w):
    p = d / "a.csv"
    p.write_text("item,correct,correct\n" + "".join(f"{i},0,1\n" for i in w.arc_items))
    return refused(predict(w, d, w.home / "published", p), "repeated")


@case(0, "one item twice in a CSV", "the same anchor answered 0 and 1: refused")
def _(d, w):
    p = answers_csv(d / "a.csv", w.arc_items, 1)
    p.write_text(p.read_text() + f"{w.arc_items[0]},0\n")
    return refused(predict(w, d, w.home / "published", p), "conflicting")


@case(0, "CSV and JSONL disagree", "a.csv says 1, b.jsonl says 0 for every anchor: refused")
def _(d, w):
    a = answers_csv(d / "a.csv", w.arc_items, 1)
    b = d / "b.jsonl"
    b.write_text("".join(json.dumps({"item": i, "correct": 0}) + "\n" for i in w.arc_items))
    return refused(predict(w, d, w.home / "published", a, b), "conflicting")


@case(0, "JSON object with a repeated key", '{"ITEM": 1, ..., "ITEM": 0}: refused')
def _(d, w):
    body = ", ".join(f'"{i}": 1' for i in w.arc_items) + f', "{w.arc_items[0]}": 0'
    p = d / "a.json"
    p.write_text("{" + body + "}")
    return refused(predict(w, d, w.home / "published", p), "conflicting")


@case(0, "JSONL record with two answers", '{"item": I, "correct": 1, "correct": 0}: refused')
def _(d, w):
    p = d / "a.jsonl"
    lines = [json.dumps({"item": i, "correct": 1}) for i in w.arc_items[1:]]
    lines.append(f'{{"item": "{w.arc_items[0]}", "correct": 1, "correct": 0}}')
    p.write_text("\n".join(lines) + "\n")
    return refused(predict(w, d, w.home / "published", p), "repeated")


@case(0, "'1 ' beside '1' with other answers", "padded id is the same anchor: refused")
def _(d, w):
    p = answers_csv(d / "a.csv", w.arc_items, 1)
    p.write_text(p.read_text() + f"{w.arc_items[0]} ,0\n")
    return refused(predict(w, d, w.home / "published", p), "conflicting")


@case(0, "compare-to file conflicting with itself", "--compare-to b.csv with a conflict: refused")
def _(d, w):
    a = answers_csv(d / "a.csv", w.arc_items, 1)
    b = answers_csv(d / "b.csv", w.arc_items, 0)
    b.write_text(b.read_text() + f"{w.arc_items[0]},1\n")
    return refused(predict(w, d, w.home / "published", a, more=("--compare-to", b)), "conflicting")


@case(
    0,
    "store: one result twice in one file",
    "m,arc,1 as 0 and 1 in one file: not stored as either silently",
)
def _(d, w):
    p = long_csv(d / "a.csv", 3, 5, extra="m0,arc,1,0\nm0,arc,1,1\n")
    r = w.cli("ingest", p, "--store", d / "s.duckdb", "--json", cwd=d)
    v = Verdict(traceback=r.traceback, hang=r.hung)
    if not r.hung:
        rep = json.loads(r.out)[0] if r.rc == 0 and r.out.strip() else {}
        if not (rep.get("n_duplicates", 0) or rep.get("n_quarantined", 0)):
            v.wrong, v.why = True, f"no duplicate or quarantine reported: {r.out[-200:]}"
    return v


# -- 1 caches that outlive their files ----------------------------------------------------


def fresh_home(w: World, d: Path) -> Path:
    home = d / "home"
    shutil.copytree(w.home, home, ignore=shutil.ignore_patterns(".lease"))
    return home


@case(
    1, "home rebuilt from scratch", "ingest, refresh, delete home, ingest, refresh --anchors 3: ok"
)
def _(d, w):
    home = d / "home"
    r1 = w.cli(
        "refresh", "--home", home, "--source", w.release, *settings_args(), cwd=d, timeout=400
    )
    shutil.rmtree(home)
    w.cli("ingest", w.release, "--store", home / "store.duckdb", cwd=d)
    r2 = w.cli("refresh", "--home", home, *settings_args({"n_anchors": 3}), cwd=d, timeout=400)
    v = succeeded(r2, "published")
    v.traceback |= r1.traceback
    return v


@case(1, "artifacts folder deleted", "rm -r home/artifacts, refresh --anchors 3: ok")
def _(d, w):
    home = fresh_home(w, d)
    shutil.rmtree(home / "artifacts", ignore_errors=True)
    return succeeded(
        w.cli("refresh", "--home", home, *settings_args({"n_anchors": 3}), cwd=d, timeout=400),
        "benchmarks",
    )


@case(1, "one matrix file deleted", "rm artifacts/matrix/*.npz, refresh: ok (rebuilt)")
def _(d, w):
    home = fresh_home(w, d)
    for p in (home / "artifacts").rglob("*.npz"):
        p.unlink()
    return succeeded(
        w.cli("refresh", "--home", home, *settings_args({"n_anchors": 3}), cwd=d, timeout=400),
        "benchmarks",
    )


@case(1, "published folder deleted", "rm -r home/published, refresh: ok, publishes again")
def _(d, w):
    home = fresh_home(w, d)
    shutil.rmtree(home / "published")
    r = w.cli("refresh", "--home", home, *settings_args(), cwd=d, timeout=400)
    v = succeeded(r, "published")
    if not v.other and not (_set(home / "published", "arc") / "latest").is_file():
        v.other, v.why = True, "nothing published again"
    return v


# -- 2 one bad line in a big file -------------------------------------------------------


def _lm_eval_line(bad: str):
    def run(d, w):
        lines = good_samples(2000)
        lines.insert(1000, bad)
        run_dir = samples_run(d / "run", lines)
        r = w.cli("ingest", run_dir, "--store", d / "s.duckdb", cwd=d)
        return rows_landed(r, d / "s.duckdb", 2000)

    return run


for _name, _bad in [
    ("doc_id 2**70", json.dumps({"doc_id": 2**70, "acc_norm": 1})),
    ("100,000 nested brackets", '{"doc_id": 7, "acc_norm": ' + "[" * 100_000),
    ("truncated JSON line", '{"doc_id": 5, "acc_norm"'),
    ("doc_id 1e999", '{"doc_id": 1e999, "acc_norm": 1}'),
    ("a 5,000-digit number", '{"doc_id": ' + "9" * 5000 + ', "acc_norm": 1}'),
    ("acc_norm NaN", '{"doc_id": 3, "acc_norm": NaN}'),
    ("a NUL byte", '{"doc_id": 3, "acc_norm": 1, "x": "\\u0000"}\x00'),
]:
    case(2, f"lm-eval samples: {_name}", "2,000 good lines land, the bad one quarantined")(
        _lm_eval_line(_bad)
    )


def _csv_line(bad: str, good: int = 20_000):
    def run(d, w):
        p = long_csv(d / "big.csv", 200, 100)
        text = p.read_text().splitlines(keepends=True)
        text.insert(5000, bad)
        p.write_text("".join(text))
        r = w.cli("ingest", p, "--store", d / "s.duckdb", cwd=d)
        return rows_landed(r, d / "s.duckdb", good)

    return run


for _name, _bad in [
    ("an extra column", "m9,arc,1,1,1\n"),
    ("a bad answer word", "m9,arc,1,maybe\n"),
    ("an unterminated quote", 'm9,arc,"1,1\n'),
    ("a NUL byte", "m9,arc,1\x00,1\n"),
    ("an escape sequence id", "m9\x1b[31m,arc,1,1\n"),
    ("a 100,000-character id", "m" * 100_000 + ",arc,1,1\n"),
]:
    case(2, f"long CSV: {_name}", "20,000 good rows land, the bad line quarantined")(
        _csv_line(_bad)
    )


@case(
    2,
    "one unreadable path beside a good file",
    "ingest good.csv folder/ pipe: good.csv lands, exit 1",
)
def _(d, w):
    good = long_csv(d / "good.csv", 50, 40)
    (d / "notes").mkdir()
    os.mkfifo(d / "pipe.csv")
    r = w.cli("ingest", good, d / "notes", d / "pipe.csv", "--store", d / "s.duckdb", cwd=d)
    v = rows_landed(r, d / "s.duckdb", 2000)
    if not v.lost and not r.hung and r.rc != 1:
        v.other, v.why = True, f"exit {r.rc}, expected 1 (partly failed)"
    return v


@case(2, "wide CSV: one bad cell", "wide table 50 x 40, one cell 'x': 1,999 cells land")
def _(d, w):
    p = d / "wide.csv"
    rows = [f"m{m}," + ",".join(str((m + i) % 2) for i in range(40)) for m in range(50)]
    rows[10] = rows[10].rsplit(",", 1)[0] + ",x"
    p.write_text("model," + ",".join(map(str, range(40))) + "\n" + "\n".join(rows) + "\n")
    r = w.cli("ingest", p, "--benchmark", "arc", "--store", d / "s.duckdb", cwd=d)
    return rows_landed(r, d / "s.duckdb", 1999)


MAX_ANSWERS_RSS_MB = 256  # the bound for a 54 MB answers file (it held 1.6 GB before)


_HWM = """
import atexit, os, runpy, sys
def hwm():
    with open("/proc/self/status") as f, open(os.environ["CORPUS_HWM_FILE"], "w") as out:
        out.write(next(line for line in f if line.startswith("VmHWM")))
atexit.register(hwm)
sys.argv = ["sparseeval", *sys.argv[1:]]
runpy.run_module("sparseeval", run_name="__main__", alter_sys=True)
"""


def peak_rss_mb(w: World, cwd: Path, *argv) -> tuple[int, float]:
    """(exit code, peak resident memory in MB) of the CLI: VmHWM of its own address space
    (read at exit; rusage would also count the copy of this process before the exec)."""
    out = cwd / "hwm.txt"
    env = w.env | {"CORPUS_HWM_FILE": str(out)}
    p = subprocess.run([sys.executable, "-c", _HWM, *map(str, argv)], cwd=cwd, env=env,
                       capture_output=True, timeout=300)  # fmt: skip
    kb = int(out.read_text().split()[1]) if out.exists() else 0
    return p.returncode, kb / 1024


@case(2, "a 54 MB answers file", f"predict reads it in at most {MAX_ANSWERS_RSS_MB} MB (peak RSS)")
def _(d, w):
    p = answers_csv(d / "big.csv", w.arc_items, 1)
    with open(p, "a") as f:
        n = 0
        while f.tell() < 54_000_000:
            f.write("".join(f"extra-item-{n + k:09d},1\n" for k in range(10_000)))
            n += 10_000
    rc, mb = peak_rss_mb(w, d, "predict", "--anchor-set", w.home / "published", "--benchmark",
                         "arc", "--responses", p)  # fmt: skip
    v = Verdict(other=rc != 0 or mb > MAX_ANSWERS_RSS_MB)
    size = p.stat().st_size / 1e6
    v.why = f"measured: {size:.0f} MB answers CSV, exit {rc}, peak RSS {mb:.0f} MB"
    return v


# -- 3 code in cached data --------------------------------------------------------------


def _marker_verdict(r: Ran, d: Path, expect_ok: bool) -> Verdict:
    v = succeeded(r) if expect_ok else refused(r)
    v.wrong = v.wrong or (d / MARKER).exists()
    if (d / MARKER).exists():
        v.why = "the pickled code ran"
    return v


@case(
    3,
    "Prefect result files replaced by pickles",
    "every file in the result storage a pickle of os.system: refresh never runs it",
)
def _(d, w):
    home = fresh_home(w, d)
    results = Path(w.env["PREFECT_RESULTS_LOCAL_STORAGE_PATH"])
    payload = pickle.dumps(_RunsCode(d / MARKER))
    saved = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    try:
        for p in saved:
            p.write_bytes(payload)
        r = w.cli("refresh", "--home", home, *settings_args(), cwd=d, timeout=400)
    finally:
        for p, data in saved.items():
            p.write_bytes(data)
    return _marker_verdict(r, d, expect_ok=True)


@case(
    3,
    "predictor weights holding a pickle",
    "weights.npz with an object array (resealed): refused, nothing runs",
)
def _(d, w):
    root = copy_published(w, d)
    v1 = _set(root, "arc") / f"v{_live(root, 'arc')}"
    weights = v1 / "predictor" / "weights.npz"
    with np.load(weights) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays[next(iter(arrays))] = np.array([_RunsCode(d / MARKER)], dtype=object)
    np.savez(weights, **arrays)
    reseal(v1, lambda m: None)
    r = predict(w, d, root, answers_csv(d / "a.csv", w.arc_items, 1))
    return _marker_verdict(r, d, expect_ok=False)


@case(
    3,
    "matrix artifact holding a pickle",
    "artifacts/**/*.npz with an object array: refresh never runs it",
)
def _(d, w):
    home = fresh_home(w, d)
    for p in (home / "artifacts").rglob("*.npz"):
        np.savez(p, values=np.array([_RunsCode(d / MARKER)], dtype=object))
    r = w.cli("refresh", "--home", home, *settings_args({"n_anchors": 3}), cwd=d, timeout=400)
    v = Verdict(traceback=r.traceback, hang=r.hung, wrong=(d / MARKER).exists())
    return v


@case(3, "answers file that is a pickle", "answers.json holding a pickle: refused, nothing runs")
def _(d, w):
    p = d / "a.json"
    p.write_bytes(pickle.dumps(_RunsCode(d / MARKER)))
    return _marker_verdict(predict(w, d, w.home / "published", p), d, expect_ok=False)


# -- 4 waits that never end -------------------------------------------------------------


@case(4, "FIFO given to ingest", "ingest pipe.csv: refused at once")
def _(d, w):
    os.mkfifo(d / "pipe.csv")
    return refused(w.cli("ingest", d / "pipe.csv", "--store", d / "s.duckdb", cwd=d, timeout=30))


@case(4, "FIFO given to predict", "predict --responses pipe.csv: refused at once")
def _(d, w):
    os.mkfifo(d / "pipe.csv")
    return refused(predict(w, d, w.home / "published", d / "pipe.csv"))


@case(4, "home is a regular file", "SPARSEEVAL_HOME a file: refresh fails at once")
def _(d, w):
    (d / "home").write_text("x")
    return refused(w.cli("refresh", "--home", d / "home", cwd=d, timeout=120), "not a folder")


@case(4, "manifest.json is a FIFO", "published manifest replaced by a FIFO: refused at once")
def _(d, w):
    root = copy_published(w, d)
    m = _set(root, "arc") / f"v{_live(root, 'arc')}" / "manifest.json"
    m.unlink()
    os.mkfifo(m)
    return refused(predict(w, d, root, answers_csv(d / "a.csv", w.arc_items, 1)))


@case(4, "latest is a FIFO", "published latest replaced by a FIFO: refused at once")
def _(d, w):
    root = copy_published(w, d)
    (_set(root, "arc") / "latest").unlink()
    os.mkfifo(_set(root, "arc") / "latest")
    return refused(predict(w, d, root, answers_csv(d / "a.csv", w.arc_items, 1)))


@case(4, "store path is a FIFO", "ingest --store pipe: refused at once")
def _(d, w):
    os.mkfifo(d / "s.duckdb")
    return refused(
        w.cli("ingest", long_csv(d / "a.csv", 2, 2), "--store", d / "s.duckdb", cwd=d, timeout=30)
    )


@case(4, "lm-eval samples file is a FIFO", "a run folder whose samples file is a FIFO: no hang")
def _(d, w):
    run_dir = samples_run(d / "run", good_samples(3))
    (f,) = run_dir.glob("samples_*.jsonl")
    f.unlink()
    os.mkfifo(f)
    r = w.cli("ingest", run_dir, "--store", d / "s.duckdb", cwd=d, timeout=30)
    return Verdict(traceback=r.traceback, hang=r.hung)


@case(4, "sparseeval.toml is a FIFO", "a FIFO settings file in the working folder: no hang")
def _(d, w):
    os.mkfifo(d / "sparseeval.toml")
    r = w.cli("matrix", "--store", d / "s.duckdb", cwd=d, timeout=30)
    return Verdict(traceback=r.traceback, hang=r.hung)


@case(4, "store locked by another writer", "a second writer waits --wait 1 s, then refuses")
def _(d, w):
    store = d / "s.duckdb"
    w.cli("ingest", long_csv(d / "a.csv", 2, 2), "--store", store, cwd=d)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb,sys,time; "
            f"c=duckdb.connect({str(store)!r}); print('held', flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        holder.stdout.readline()
        r = w.cli(
            "ingest",
            long_csv(d / "b.csv", 3, 2),
            "--store",
            store,
            "--wait",
            "1",
            cwd=d,
            timeout=30,
        )
    finally:
        holder.kill()
        holder.wait()
    return refused(r, "in use")


# -- 5 names that cannot be published ----------------------------------------------------


def _bad_name(name: str):
    def run(d, w):
        p = d / "a.csv"
        p.write_text(
            "model,benchmark,item,correct\n"
            + "".join(
                f'm{m},"{name.replace(chr(34), 2 * chr(34))}",{i},1\n'
                for m in range(3)
                for i in range(3)
            )
        )
        r1 = w.cli("ingest", "--new-benchmark", name, "--store", d / "s.duckdb", p, cwd=d)
        v = refused(r1)
        if (d / "s.duckdb").exists() and store_rows(d / "s.duckdb"):
            v.wrong, v.why = True, "rows of an unpublishable benchmark were stored"
        return v

    return run


for _name in [
    "my bench",
    "../../x",
    "x/y",
    "..",
    "a'b",
    'a"b',
    "x" * 100,
    ".hidden",
    "suite",
    "latest",
    "tab\there",
    "k25",
]:
    case(5, f"--new-benchmark {_name[:20]!r}", "refused at ingest, no row stored")(_bad_name(_name))


# -- 6 ids that differ invisibly -----------------------------------------------------------


def _model_spellings(spellings: list[str], models: int):
    def run(d, w):
        p = d / "a.csv"
        p.write_text(
            "model,benchmark,item,correct\n"
            + "".join(f"{s},arc,{i},{i % 2}\n" for s in spellings for i in range(5)),
            encoding="utf-8",
        )
        r = w.cli("ingest", p, "--store", d / "s.duckdb", cwd=d)
        v = Verdict(traceback=r.traceback, hang=r.hung)
        if not r.hung and (d / "s.duckdb").exists():
            n = store_query(d / "s.duckdb", "SELECT count(DISTINCT model) FROM results_view")[0][0]
            if n != models:
                v.wrong, v.why = True, f"{n} models stored, expected {models}"
        return v

    return run


_NFC = unicodedata.normalize("NFC", "org/café")
for _name, _sp, _n in [
    ("org/a with spaces", ["org/a", "org/a ", " org/a"], 1),
    ("zero-width space", ["org/a", "org/\u200ba"], 1),
    ("NFC vs NFD", [_NFC, unicodedata.normalize("NFD", _NFC)], 1),
    ("BOM inside", ["org/a", "\ufefforg/a"], 1),
    ("non-breaking space edge", ["org/a", "org/a\u00a0"], 1),
]:
    case(6, f"model ids: {_name}", f"{len(_sp)} spellings are {_n} model")(
        _model_spellings(_sp, _n)
    )


@case(6, "item '1 ' beside '1' with other answers", "a conflict, not two results")
def _(d, w):
    p = d / "a.csv"
    p.write_text("model,benchmark,item,correct\nm,arc,1,1\nm,arc,1 ,0\nm,arc,2,1\n")
    r = w.cli("ingest", p, "--store", d / "s.duckdb", "--json", cwd=d)
    v = Verdict(traceback=r.traceback, hang=r.hung)
    if not r.hung and (d / "s.duckdb").exists():
        n = store_rows(d / "s.duckdb", "item = '1'")
        rep = json.loads(r.out)[0] if r.out.strip() else {}
        if n > 1 or not (rep.get("n_duplicates") or rep.get("n_quarantined")):
            v.wrong, v.why = True, f"{n} results for item 1, report {rep.get('n_duplicates')}"
    return v


@case(6, "ids with newline, NUL, escape", "rows quarantined, never stored as good rows")
def _(d, w):
    p = d / "a.csv"
    p.write_text(
        'model,benchmark,item,correct\n"m\nx",arc,1,1\nm\x00y,arc,1,1\nm\x1bz,arc,1,1\nok,arc,1,1\n'
    )
    r = w.cli("ingest", p, "--store", d / "s.duckdb", cwd=d)
    v = rows_landed(r, d / "s.duckdb", 1)
    if (d / "s.duckdb").exists() and store_rows(d / "s.duckdb") > 1:
        v.wrong, v.why = True, "a control-character id was stored"
    return v


@case(6, "answers keyed with invisible differences", "' 3', '3\\u200b', NFD: read as the anchors")
def _(d, w):
    p = d / "a.json"
    keys = [f" {i}\u200b " for i in w.arc_items]
    p.write_text(json.dumps(dict.fromkeys(keys, 1)))
    r = predict(w, d, w.home / "published", p)
    return succeeded(r, f"from {len(w.arc_items)}/{len(w.arc_items)} anchors")


# -- 7 damaged published files -----------------------------------------------------------


def _set(root: Path, bench: str) -> Path:
    """The folder of the set readers load (`{bench}/k{K}`, the one published layout)."""
    from sparseeval.consume.sets.layout import live_budget, set_dir

    return set_dir(root, bench, live_budget(root, bench))


def _live(root: Path, bench: str) -> int:
    return json.loads((_set(root, bench) / "latest").read_text())["version"]


def _damage(fn: Callable[[Path], None], words: tuple[str, ...] = (), bench: str = "arc"):
    def run(d, w):
        root = copy_published(w, d)
        fn(_set(root, bench) / f"v{_live(root, bench)}")
        files = [answers_csv(d / "a.csv", w.arc_items, 1)]
        if bench == "suite":
            rows = [f"{b}/{i}" for b, items in w.suite_items.items() for i in items]
            files = [answers_csv(d / "all.csv", rows, 1)]
        r = predict(w, d, root, *files, bench=bench, more=("--json",))
        v = refused(r, *words)
        if r.rc == 0:
            try:
                json.loads(r.out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError:
                v.why = "invalid JSON output"
        return v

    return run


def _set_weights(value: float):
    def fn(v: Path):
        weights = v / "predictor" / "weights.npz"
        with np.load(weights) as npz:
            arrays = {k: npz[k].copy() for k in npz.files}
        arrays[next(iter(arrays))].flat[0] = value
        np.savez(weights, **arrays)
        reseal(v, lambda m: None)

    return fn


def _member_folder(folder):
    def fn(v: Path):
        def change(m):
            m["suite"]["members"]["arc"]["own"]["folder"] = folder
            m["suite"]["members"]["arc"]["joint"]["folder"] = folder

        reseal(v, change)

    return fn


_DAMAGES = [
    ("nested manifest.json", lambda v: (v / "manifest.json").write_text("[" * 100_000), ()),
    ("nested latest", lambda v: (v.parent / "latest").write_text("[" * 100_000), ()),
    ("latest version 1e999", lambda v: (v.parent / "latest").write_text('{"version": 1e999}'), ()),
    ("latest version '1'", lambda v: (v.parent / "latest").write_text('{"version": "1"}'), ()),
    ("latest version true", lambda v: (v.parent / "latest").write_text('{"version": true}'), ()),
    (
        "latest 5,000 digits",
        lambda v: (v.parent / "latest").write_text('{"version": ' + "9" * 5000 + "}"),
        (),
    ),
    ("latest -> v99", lambda v: (v.parent / "latest").write_text('{"version": 99}'), ("v99",)),
    (
        "truncated manifest",
        lambda v: (v / "manifest.json").write_text((v / "manifest.json").read_text()[:200]),
        ("damaged",),
    ),
    ("manifest without items", lambda v: reseal(v, lambda m: m.pop("items")), ("items",)),
    ("manifest without interval", lambda v: reseal(v, lambda m: m.pop("interval")), ("interval",)),
    (
        "interval a string",
        lambda v: reseal(v, lambda m: m.__setitem__("interval", "wide")),
        ("interval",),
    ),
    (
        "NaN half-width",
        lambda v: reseal(v, lambda m: m["interval"].update(halfwidth=float("nan"))),
        ("halfwidth",),
    ),
    (
        "negative half-width",
        lambda v: reseal(v, lambda m: m["interval"].update(halfwidth=-1)),
        ("halfwidth",),
    ),
    ("level 1.5", lambda v: reseal(v, lambda m: m["interval"].update(level=1.5)), ("level",)),
    ("NaN weight", _set_weights(float("nan")), ("not finite",)),
    ("infinite weight", _set_weights(float("inf")), ("not finite",)),
    (
        "predictor folder ../../",
        lambda v: reseal(v, lambda m: m["predictor"].update(folder="../../gsm8k/v1/predictor")),
        ("predictor folder",),
    ),
    (
        "predictor folder absolute",
        lambda v: reseal(v, lambda m: m["predictor"].update(folder=str(v / "predictor"))),
        ("predictor folder",),
    ),
    (
        "weights truncated",
        lambda v: os.truncate(v / "predictor" / "weights.npz", 100),
        ("checksum",),
    ),
    (
        "a 100 MB manifest",
        lambda v: (v / "manifest.json").write_text('{"a": "' + "x" * 100_000_000 + '"}'),
        (),
    ),
]
for _name, _fn, _words in _DAMAGES:
    case(7, _name, "refused in one line (exit 2), never nan% or invalid JSON")(_damage(_fn, _words))
for _name, _folder in [
    ("suite member ../../arc/v1/predictor", "../../arc/v1/predictor"),
    ("suite member absolute path", "/tmp"),
    ("suite member folder missing", None),
]:
    case(7, _name, "refused: member folders follow the predictor folder's rules")(
        _damage(_member_folder(_folder), ("reader folder",), bench="suite")
    )
case(7, "suite member NaN level", "refused")(
    _damage(
        lambda v: reseal(
            v,
            lambda m: m["suite"]["members"]["gsm8k"]["joint"]["interval"].update(
                level=float("nan")
            ),
        ),
        ("level",),
        bench="suite",
    )
)


# -- 8 messages that are tracebacks ------------------------------------------------------


def _message(argv_fn, words=(), code=2, timeout=120, limit=None):
    def run(d, w):
        r = w.cli(*argv_fn(d, w), cwd=d, timeout=timeout, limit_bytes=limit)
        return refused(r, *words, code=code)

    return run


def _truncated_store(d: Path, w: World) -> list:
    store = d / "s.duckdb"
    shutil.copy(w.home / "store.duckdb", store)
    os.truncate(store, os.path.getsize(store) // 2)
    return ["matrix", "arc", "--store", store]


def _newer_store(d: Path, w: World) -> list:
    con = duckdb.connect(str(d / "s.duckdb"))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '9')")
    con.close()
    return ["ingest", long_csv(d / "a.csv", 2, 2), "--store", d / "s.duckdb"]


def _full_disk(d: Path, w: World) -> list:
    store = d / "s.duckdb"
    shutil.copy(w.home / "store.duckdb", store)
    return ["ingest", long_csv(d / "big.csv", 400, 300), "--store", store]


def _compressed(d: Path, w: World) -> list:
    (d / "a.csv").write_bytes(gzip.compress(long_csv(d / "raw.csv", 2, 2).read_bytes()))
    return ["ingest", d / "a.csv", "--store", d / "s.duckdb"]


_MESSAGES = [
    (
        "refresh --benchmark ../../x",
        lambda d, w: ["refresh", "--home", fresh_home(w, d), "--benchmark", "../../x"],
        ("../../x",),
        2,
        400,
    ),
    (
        "refresh --set n_test=inf",
        lambda d, w: ["refresh", "--home", d / "h", "--set", "n_test=inf"],
        ("finite",),
        2,
        120,
    ),
    (
        "refresh --set lr=nan",
        lambda d, w: ["refresh", "--home", d / "h", "--set", "lr=nan"],
        ("finite",),
        2,
        120,
    ),
    (
        "refresh --set n_anchors=1e999",
        lambda d, w: ["refresh", "--home", d / "h", "--set", "n_anchors=1e999"],
        (),
        2,
        120,
    ),
    (
        "refresh --set nope=1",
        lambda d, w: ["refresh", "--home", d / "h", "--set", "nope=1"],
        ("unknown",),
        2,
        120,
    ),
    ("truncated store", _truncated_store, ("damaged store",), 2, 60),
    ("store of a newer schema", _newer_store, ("newer",), 2, 60),
    (
        "store of random bytes",
        lambda d, w: [
            "matrix",
            "--store",
            (d / "s.duckdb").write_bytes(os.urandom(9000)) and d / "s.duckdb",
        ],
        ("damaged store",),
        2,
        60,
    ),
    ("compressed .csv", _compressed, ("gzip-compressed",), 2, 60),
    (
        "';' delimiters",
        lambda d, w: [
            "ingest",
            (d / "a.csv").write_text("model;benchmark;item;correct\nm;arc;1;1\n") and d / "a.csv",
            "--store",
            d / "s.duckdb",
        ],
        ("';'",),
        2,
        60,
    ),
    (
        "predict --benchmark ../../x",
        lambda d, w: [
            "predict",
            "--anchor-set",
            w.home / "published",
            "--benchmark",
            "../../x",
            "--responses",
            answers_csv(d / "a.csv", w.arc_items, 1),
        ],
        (),
        2,
        60,
    ),
    (
        "matrix ../../x",
        lambda d, w: ["matrix", "../../x", "--store", w.home / "store.duckdb"],
        (),
        2,
        60,
    ),
    ("fit on a 3-row CSV", lambda d, w: ["fit", long_csv(d / "a.csv", 3, 1)], (), 2, 120),
    (
        "predict with a wrapped JSON",
        lambda d, w: [
            "predict",
            "--anchor-set",
            w.home / "published",
            "--benchmark",
            "arc",
            "--responses",
            (d / "a.json").write_text(json.dumps({"answers": dict.fromkeys(w.arc_items, 1)}))
            and d / "a.json",
        ],
        ("unwrap",),
        2,
        60,
    ),
]
for _name, _argv, _words, _code, _timeout in _MESSAGES:
    case(8, _name, f"one-line error, exit {_code}, no traceback")(
        _message(_argv, _words, _code, _timeout)
    )


@case(8, "too-small benchmark", "a budget above the pool is capped to what fits, in one line")
def _(d, w):
    argv = ["refresh", "--home", fresh_home(w, d), "--set=n_anchors=100", "--set=epochs=5"]
    return succeeded(w.cli(*argv, cwd=d, timeout=400), "of 100 asked")


@case(
    8,
    "full disk during ingest",
    "the store file may not grow (RLIMIT_FSIZE at its size): one line, data intact",
)
def _(d, w):
    argv = _full_disk(d, w)
    before = store_rows(d / "s.duckdb")
    r = w.cli(*argv, cwd=d, timeout=120, limit_bytes=os.path.getsize(d / "s.duckdb"))
    v = refused(r, "disk full")
    after = store_rows(d / "s.duckdb")
    v.lost = max(0, before - after)
    return v


# --------------------------------------------------------------------------- the world


def build_world(work: Path, env: dict) -> World:
    """One published home (arc + gsm8k + the suite) from a synthetic release, via the CLI."""
    import polars as pl

    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.consume.sets.suite_set import load_suite
    from sparseeval.pipeline import sources

    w = World(work, env)
    src = sources.SyntheticLeaderboard(n_models=260, items={"arc": 60, "gsm8k": 50}, seed=3)
    w.release = work / "release.parquet"
    frames = [src.frame(b, 0, 200) for b in ("arc", "gsm8k")]
    pl.concat(frames).select("model", "benchmark", "item", "correct").write_parquet(w.release)
    w.home = work / "home"
    r = w.cli(
        "refresh", "--home", w.home, "--source", w.release, *settings_args(), cwd=work, timeout=600
    )
    if r.rc != 0:
        raise RuntimeError(f"the base refresh failed: {r.text[-2000:]}")
    w.arc_items = load_anchor_set(w.home / "published", "arc").items
    suite = load_suite(w.home / "published")
    w.suite_items = {b: suite.items(b) for b in suite.benchmarks}
    return w


@contextmanager
def corpus_world(work: Path) -> Iterator[World]:
    """The world every case starts from, built in `work` with the CLI's own environment
    (its own Prefect home, a temporary Prefect server while the cases run)."""
    from sparseeval.cli.tempserver import temporary_server

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARSEEVAL_", "PREFECT_"))}
    env |= {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "HF_HUB_OFFLINE": "1",
        "PREFECT_HOME": str(work / "prefect"),
        "PYTHONUNBUFFERED": "1",
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(work / "prefect-results"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    with temporary_server() as url:
        if url:
            env["PREFECT_API_URL"] = url
        yield build_world(work, env)


def problems(v: Verdict) -> list[str]:
    """What went wrong in a case: traceback, wrong, lost, hang, other (none: it held)."""
    return [k for k in ("traceback", "wrong", "lost", "hang", "other") if getattr(v, k)]
