"""Issue 28's case families for the corpus (`tests/faults/test_corpus.py` imports this): cache
entries that are not what was written, manifest fields without a check, lease lines,
reported scores and the id/range rules, id maps and hash checks, scale and odd inputs,
tracebacks and unclear lines."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

from tests.faults.corpus import (
    CLASSES,
    Verdict,
    answers_csv,
    case,
    copy_published,
    fresh_home,
    long_csv,
    predict,
    refused,
    reseal,
    rows_landed,
    settings_args,
    store_query,
    succeeded,
)

CACHE, FIELDS, LEASE, SCORES, IDMAPS, SCALE, LINES = (CLASSES.index(c) for c in CLASSES[-7:])


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
        from sparseeval.consume.sets.layout import latest_version, live_budget, set_dir

        k = live_budget(root, "arc")
        reseal(set_dir(root, "arc", k) / f"v{latest_version(root, 'arc', k)}", change)
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


# -- reported scores: the id and range rules of result rows ---------------------------------


def _scores_ids(spellings: list[str], models: int, stored: int):
    """A scores file whose model ids are `spellings` (one score each, all 50): `models`
    distinct models stored, `stored` rows in all."""

    def run(d, w):
        p = d / "scores.csv"
        p.write_text("model,benchmark,score\n" + "".join(f'"{m}",arc,50\n' for m in spellings),
                     encoding="utf-8")  # fmt: skip
        r = w.cli("ingest", f"scores:{p}", "--store", d / "s.duckdb", cwd=d)
        v = Verdict(traceback=r.traceback, hang=r.hung)
        if not r.hung and (d / "s.duckdb").exists():
            sql = "SELECT count(DISTINCT model_id), count(*) FROM reported_scores"
            n, rows = store_query(d / "s.duckdb", sql)[0]
            if (n, rows) != (models, stored):
                v.wrong = True
                v.why = f"{n} models / {rows} scores stored, expected {models}/{stored}"
        return v

    return run


_NFC = "org/caf\u00e9"
for _name, _sp, _n, _rows in [
    ("trailing space", ["org/a", "org/a "], 1, 1),
    ("zero-width space", ["org/a", "org/\u200ba"], 1, 1),
    ("NFD vs NFC", [_NFC, "org/cafe\u0301"], 1, 1),
    ("an escape character", ["org/a", "org/\x1bb"], 1, 1),
    ("a bidi override", ["org/a", "org/\u202eb"], 1, 1),
]:
    case(SCORES, f"scores: model ids with {_name}", "one id rule: canonical or quarantined")(
        _scores_ids(_sp, _n, _rows)
    )


def _lm_eval_results(results: dict, expect: dict[str, float | None]):
    """An lm-eval run folder (results JSON + samples) whose reported scores must be
    `expect` ({benchmark: fraction, or None: none stored})."""

    def run(d, w):
        import json as _json

        folder = d / "run"
        folder.mkdir()
        ts = "2025-01-01T00-00-00.000000"
        (folder / f"results_{ts}.json").write_text(_json.dumps(
            {"model_name": "org/m", "results": results}))  # fmt: skip
        task = next(iter(results))
        (folder / f"samples_{task}_{ts}.jsonl").write_text(
            "".join(_json.dumps({"doc_id": i, "acc": 1.0, "acc_norm": 1.0, "filter": "none"})
                    + "\n" for i in range(3)))  # fmt: skip
        r = w.cli("ingest", folder, "--store", d / "s.duckdb", cwd=d)
        v = Verdict(traceback=r.traceback, hang=r.hung)
        if not r.hung and (d / "s.duckdb").exists():
            got = dict(store_query(d / "s.duckdb", "SELECT b.name, r.score FROM reported_scores r"
                                   " JOIN benchmarks b USING (benchmark_id)"))  # fmt: skip
            want = {b: s for b, s in expect.items() if s is not None}
            if got != want:
                v.wrong, v.why = True, f"scores {got}, expected {want}"
        return v

    return run


for _name, _res, _exp in [
    ("arc acc_norm 5.0", {"arc_challenge": {"acc_norm,none": 5.0}}, {"arc": None}),
    ("arc acc_norm -2.0", {"arc_challenge": {"acc_norm,none": -2.0}}, {"arc": None}),
    ("arc acc_norm NaN", {"arc_challenge": {"acc_norm,none": "NaN"}}, {"arc": None}),
]:
    case(SCORES, f"lm-eval results: {_name}", "an out-of-range score is quarantined")(
        _lm_eval_results(_res, _exp)
    )


def _unit_scores(fn: Callable[[], dict], check: Callable[[dict], str]):
    """A case on the leaderboard readers themselves: `check` says what is wrong ('' none)."""

    def run(d, w):
        got = fn()
        why = check(got)
        return Verdict(wrong=bool(why), why=why)

    return run


def _v1_mmlu(values: dict[str, object]):
    from sparseeval.consume.benchmarks import MMLU_SUBJECTS
    from sparseeval.pipeline.store.scores import v1_file_scores

    accs = {s: values.get(s, 0.5) for s in sorted(MMLU_SUBJECTS) if values.get(s, 0.5) != "-"}
    results = {f"harness|hendrycksTest-{s}|5": {"acc": a} for s, a in accs.items()}
    return lambda: v1_file_scores({"results": results})


def _v2(tasks: dict[str, object]):
    from sparseeval.pipeline.store.scores import v2_file_scores

    results = {t: {"acc_norm,none": v} for t, v in tasks.items()}
    return lambda: v2_file_scores(results, dict.fromkeys(results, 2))


def _refused(bench: str):
    from sparseeval.pipeline.store.scores import Refusal

    return lambda got: "" if isinstance(got.get(bench), Refusal) else f"{bench}: {got.get(bench)}"


for _name, _fn, _b in [
    ("v1 MMLU subject acc 5.0", _v1_mmlu({"anatomy": 5.0}), "mmlu"),
    ("v1 MMLU subject acc -2.0", _v1_mmlu({"anatomy": -2.0}), "mmlu"),
    ("v1 MMLU subject acc a string", _v1_mmlu({"anatomy": "high"}), "mmlu"),
    ("v1 MMLU 56 of 57 subjects", _v1_mmlu({"anatomy": "-"}), "mmlu"),
    ("v2 BBH 1 of 24 subtasks", _v2({"leaderboard_bbh_navigate": 0.9}), "bbh"),
    ("v2 MuSR 1 of 3 subtasks", _v2({"leaderboard_musr_murder_mysteries": 0.6}), "musr"),
    ("v2 MuSR subtask 5.0", _v2({"leaderboard_musr_murder_mysteries": 5.0,
                                 "leaderboard_musr_object_placements": 0.5,
                                 "leaderboard_musr_team_allocation": 0.5}), "musr"),
    ("v2 GPQA group -2.0", lambda: __import__(
        "sparseeval.pipeline.store.scores", fromlist=["x"]).v2_file_scores(
        {"leaderboard_gpqa": {"acc_norm,none": -2.0}}, {}), "gpqa"),
]:  # fmt: skip
    case(SCORES, _name, "a part out of range or a partial group: refused, not a score")(
        _unit_scores(_fn, _refused(_b))
    )


@case(SCORES, "one nested v1 results file among good ones", "it fails alone, quarantined")
def _(d, w):
    import json as _json

    from sparseeval.pipeline.store.scores import v1_scores

    bad, good = d / "results_2024-01-01T00-00-00.json", d / "results_2024-02-01T00-00-00.json"
    bad.write_text('{"results": ' + "[" * 100_000)
    good.write_text(_json.dumps({"results": {"harness|arc:challenge|25": {"acc_norm": 0.5}}}))
    try:
        frame = v1_scores([(bad, 0), (good, 1)], "org/m")
    except RecursionError as exc:
        return Verdict(traceback=True, why=f"RecursionError: {exc}")
    rows = {r["benchmark"]: r["refusal"] for r in frame.to_dicts()}
    ok = rows.get("arc") is None and "arc" in rows and rows.get("")
    return Verdict(other=not ok, why="" if ok else f"rows {rows}")


# -- id maps and hash checks -------------------------------------------------------------


def _export(w, d, bench: str, id_map: Path, *more):
    return w.cli("export-lm-eval", "--anchor-set", w.home / "published", "--benchmark", bench,
                 "--out", d / "out.json", "--id-map", id_map, *more, cwd=d)  # fmt: skip


def _map_case(rows: Callable, bench: str, words: tuple[str, ...]):
    def run(d, w):
        p = d / "map.csv"
        p.write_text(rows(w))
        return refused(_export(w, d, bench, p), *words)

    return run


for _name, _rows, _bench, _words in [
    ("suite map without a benchmark column",
     lambda w: "item,doc_id,task\n" + "".join(f"{i},{n},winogrande\n"
                                              for n, i in enumerate(w.suite_items["arc"])),
     "suite", ("names each row's benchmark",)),
    ("one anchor mapped twice",
     lambda w: f"item,doc_id\n{w.arc_items[0]},1\n{w.arc_items[0]},2\n", "arc",
     ("mapped twice",)),
    ("two anchors to one doc",
     lambda w: f"item,doc_id\n{w.arc_items[0]},1\n{w.arc_items[1]},1\n", "arc",
     ("two items map to",)),
    ("an ARC anchor mapped to a Winogrande doc",
     lambda w: f"item,doc_id,task\n{w.arc_items[0]},1,winogrande\n", "arc", ("winogrande",)),
]:  # fmt: skip
    case(IDMAPS, f"--id-map: {_name}", "refused in one line, exit 2")(
        _map_case(_rows, _bench, _words)
    )


def _hash_case(name: str, task: str | None):
    """lm-eval answers to other questions (another doc_hash) in a file named `name`, read by
    predict's reader against a set whose anchors carry doc_hashes (the corpus world's
    synthetic set has none): the mismatch must be found."""

    def run(d, w):
        import json as _json

        from sparseeval.consume.answers.identity import hash_mismatches
        from sparseeval.consume.lm_eval.harness import read_responses

        sources = {str(i): {"task": "arc_challenge", "doc_id": i, "hash": f"doc_hash:h{i}",
                            "id_kind": "lm-eval doc id"} for i in range(4)}  # fmt: skip
        seen = {i: f"h{i}" if i else "other" for i in range(4)}  # doc 0: another question
        lines = [_json.dumps({"doc_id": i, "acc_norm": 1.0, "filter": "none", "doc_hash": h})
                 for i, h in seen.items()]  # fmt: skip
        (d / name).write_text("\n".join(lines) + "\n")
        hashes: dict[str, str] = {}
        read_responses([d / name], items=list(sources), benchmark="arc", item_sources=sources,
                       task=task, hashes=hashes)  # fmt: skip
        bad = hash_mismatches(sources, hashes)
        return Verdict(wrong=bad != ["0"], why=f"mismatches found: {bad}, expected ['0']")

    return run


for _name, _file, _task in [
    ("named samples file", "samples_arc_challenge_2025-01-01T00-00-00.000000.jsonl", None),
    ("a samples file of another name", "my_answers.jsonl", "arc_challenge"),
]:
    case(IDMAPS, f"doc_hash check: {_name}", "the other question's answer is found")(
        _hash_case(_file, _task)
    )


@case(IDMAPS, "predict takes the --id-map it asks for", "predict --id-map MAP: accepted")
def _(d, w):
    p = d / "map.csv"
    p.write_text("item,doc_id\n" + "".join(f"{i},{n}\n" for n, i in enumerate(w.arc_items)))
    a = answers_csv(d / "a.csv", w.arc_items, 1)
    return succeeded(predict(w, d, w.home / "published", a, more=("--id-map", p)))


@case(IDMAPS, "anchors --public-key on an unsigned set", "refused, never accepted and ignored")
def _(d, w):
    pytest_key = d / "pub.pem"
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        return Verdict()
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    pem = serialization.Encoding.PEM
    pytest_key.write_bytes(key.public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo))
    r = w.cli("anchors", "--anchor-set", w.home / "published", "--benchmark", "arc",
              "--public-key", pytest_key, cwd=d)  # fmt: skip
    return refused(r)


# -- scale and odd inputs ----------------------------------------------------------------


@case(SCALE, "predict: a 1 MB item id", "one line naming the file and line, exit 2")
def _(d, w):
    a = answers_csv(d / "a.csv", w.arc_items, 1)
    a.write_text(a.read_text() + "x" * 1_000_000 + ",1\n")
    return refused(predict(w, d, w.home / "published", a), "a.csv", "a field longer than")


@case(SCALE, "predict: a 1 MB header", "one line, exit 2")
def _(d, w):
    a = d / "a.csv"
    rows = "".join(f"{i},1,\n" for i in w.arc_items)
    a.write_text("item,correct," + "x" * 1_000_000 + "\n" + rows)
    return refused(predict(w, d, w.home / "published", a), "a field longer than")


@case(SCALE, "ingest: a 1 MB wide-table column beside a good file", "good file lands, exit 1")
def _(d, w):
    good = long_csv(d / "good.csv", 5, 4)
    wide = d / "wide.csv"
    wide.write_text("model," + "x" * 1_000_000 + "\nm1,1\n")
    r = w.cli("ingest", good, wide, "--store", d / "s.duckdb", cwd=d)
    v = rows_landed(r, d / "s.duckdb", 20)
    if not v.lost and not r.hung and r.rc != 1:
        v.other, v.why = True, f"exit {r.rc}, expected 1"
    return v


@case(SCALE, "fit flow parameters for 8,000 benchmarks", "passed by reference: under 512 KiB")
def _(d, w):
    import importlib
    import json as _json

    module = importlib.import_module("sparseeval.flows.refresh")
    if not hasattr(module, "fit_batch"):
        return Verdict(wrong=True, why="names passed by value")
    params = {"settings": "...", "batch": "0" * 32, "force": False}
    return Verdict(other=len(_json.dumps(params)) > 512 * 1024)


# -- tracebacks and unclear lines --------------------------------------------------------


@case(LINES, "automations install, server unreachable", "one line naming PREFECT_API_URL")
def _(d, w):
    import subprocess
    import sys

    env = w.env | {"PREFECT_API_URL": "http://127.0.0.1:9/api"}
    p = subprocess.run([sys.executable, "-m", "sparseeval", "automations", "install"], cwd=d,
                       env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    v = Verdict(traceback="Traceback" in p.stderr)
    if p.returncode != 2 or "PREFECT_API_URL" not in p.stderr:
        v.other, v.why = True, f"rc {p.returncode}: {p.stderr[-160:]}"
    return v


@case(LINES, "-0.0 correctness in Parquet", "read as wrong, not quarantined")
def _(d, w):
    import polars as pl

    p = d / "z.parquet"
    pl.DataFrame({"model": ["m"] * 2, "benchmark": ["arc"] * 2, "item": ["1", "2"],
                  "correct": [-0.0, 1.0]}).write_parquet(p)  # fmt: skip
    return rows_landed(w.cli("ingest", p, "--store", d / "s.duckdb", cwd=d), d / "s.duckdb", 2)


@case(LINES, "empty column name in a wide table", "refused in one line, not dropped")
def _(d, w):
    p = d / "w.csv"
    p.write_text("model,,1,2\nm1,1,0,1\nm2,0,1,1\n")
    r = w.cli("ingest", p, "--benchmark", "arc", "--store", d / "s.duckdb", cwd=d)
    return refused(r, "has no name")


@case(LINES, "a folder named x.csv", "said as a folder, not read as lm-eval output")
def _(d, w):
    (d / "x.csv").mkdir()
    return refused(w.cli("ingest", d / "x.csv", "--store", d / "s.duckdb", cwd=d), "folder")


@case(LINES, "ingest whose only input failed", "exit 2")
def _(d, w):
    (d / "bad.csv").write_text("model,benchmark,item\n")
    return refused(w.cli("ingest", d / "bad.csv", "--store", d / "s.duckdb", cwd=d), "correct")


# -- more members of the classes: a benchmark that fails mid-refresh, cache entries that
# -- cannot be read, one answers under two names, generated lm-eval tasks' doc_hash


def _one_line_refresh(r, *words: str, code: int = 1) -> Verdict:
    """A refresh where some benchmark failed: exit `code`, no traceback, and on stderr only
    the progress lines and the CLI's one error line naming `words` (no Prefect lines)."""
    import re

    v = refused(r, *words, code=code)
    if r.hung:
        return v
    said = [x for x in r.err.splitlines() if x and not re.match(r"\d\d:\d\d:\d\d [^|]", x)]
    if len(said) != 1 or not said[0].startswith("sparseeval refresh: error: "):
        v.other, v.why = True, f"{len(said)} lines besides progress: {' / '.join(said)[:200]}"
    return v


def _failing(kind: str) -> Callable[[Path], str]:
    """A source whose one benchmark (winogrande) fails at `kind`: its `--source` spec."""

    def write(d: Path) -> str:
        p = d / "wino.csv"
        if kind == "fit":  # one item: no anchors to choose among
            p.write_text("model,q0\n" + "".join(f"w{m},{m % 2}\n" for m in range(150)))
            return f"wide:winogrande={p}"
        rows = [f"w{m},winogrande,it{3 * m + i},{(m + i) % 2}\n"  # each model its own items
                for m in range(150) for i in range(3)]  # fmt: skip
        p.write_text("model,benchmark,item,correct\n" + "".join(rows))
        return str(p)

    return write


for _kind, _stage, _runner in [("fit", "fit: PipelineError", "thread"),
                               ("matrix", "matrix: MatrixError", "thread"),
                               ("fit", "fit: PipelineError", "dask"),
                               ("matrix", "matrix: MatrixError", "dask")]:  # fmt: skip

    def _run(d, w, kind=_kind, stage=_stage, runner=_runner):
        home = fresh_home(w, d)
        r = w.cli("refresh", "--home", home, "--source", _failing(kind)(d), "--task-runner",
                  runner, *settings_args({"workers": 2}), cwd=d, timeout=400)  # fmt: skip
        return _one_line_refresh(r, f"winogrande: {stage}")

    case(LINES, f"refresh: a benchmark whose {_kind} fails ({_runner})",
         "exit 1, the CLI's one line naming it; no traceback, no Prefect lines")(_run)  # fmt: skip


@case(LINES, "refresh: a benchmark with too few models", "it waits: exit 0, said in a line")
def _(d, w):
    home = fresh_home(w, d)
    p = long_csv(d / "few.csv", 20, 30, bench="winogrande")
    r = w.cli("refresh", "--home", home, "--source", p, *settings_args(), cwd=d, timeout=400)
    return succeeded(r, "winogrande: waiting for more models")


@case(LINES, "refresh: no file may grow past 64 KiB", "a full disk: one line, no traceback")
def _(d, w):
    home = fresh_home(w, d)
    p = long_csv(d / "new.csv", 150, 30, bench="winogrande")
    r = w.cli("refresh", "--home", home, "--source", p, *settings_args(), cwd=d, timeout=400,
              limit_bytes=64 << 10)  # fmt: skip
    v = refused(r, "disk full", code=r.rc if r.rc in (1, 2) else 2)
    v.other |= len([x for x in r.err.splitlines() if "error" in x.lower()]) != 1
    return v


def _unreadable(glob: str, folder: str = ""):
    """Every cached file matching `glob` (in a folder named `folder`, when given) replaced
    by a folder of that name."""

    def fn(art: Path) -> None:
        for p in [p for p in art.rglob(glob) if folder in ("", p.parent.name)]:
            p.unlink()
            p.mkdir()

    return fn


for _name, _fn in [
    ("cached matrix a folder", _unreadable("*.npz")),
    ("cached summary.json a folder", _unreadable("summary.json")),
    ("cached weights a folder", _unreadable("weights.npz")),
    ("cached matrix pointer a folder", _unreadable("*[0-9a-f].json", "matrix")),
    ("cached items.json a folder", _unreadable("*.items.json")),
]:
    case(CACHE, _name, f"{_name} in artifacts/, refresh: ok (a logged miss, rebuilt)")(
        _cache_damage(_fn)
    )


@case(CACHE, "one answers file under two benchmark names",
      "wide:winogrande=F and wide:hellaswag=F: each published as itself")  # fmt: skip
def _(d, w):
    from sparseeval.consume.sets import layout

    home = fresh_home(w, d)
    p = d / "same.csv"
    p.write_text("model," + ",".join(f"q{j}" for j in range(30)) + "\n" + "".join(
        f"n{m}," + ",".join(str((m * 7 + j * 3) % 5 > 1) for j in range(30)).replace(
            "True", "1").replace("False", "0") + "\n" for m in range(150)))  # fmt: skip
    r = w.cli("refresh", "--home", home, "--source", f"wide:winogrande={p}", "--source",
              f"wide:hellaswag={p}", *settings_args(), cwd=d, timeout=400)  # fmt: skip
    v = succeeded(r, "winogrande: published v1", "hellaswag: published v1")
    pub = home / "published"
    got = {b: layout.list_versions(pub, b, layout.live_budget(pub, b))
           for b in ("arc", "winogrande", "hellaswag")}  # fmt: skip
    old = w.home / "published"
    before = layout.list_versions(old, "arc", layout.live_budget(old, "arc"))
    if got != {"arc": before, "winogrande": [1], "hellaswag": [1]}:
        v.wrong, v.why = True, f"versions {got} (arc had {before})"
    return v


def _generated_line(doc_id: int, item: str, query: str, original: str) -> dict:
    """A samples line of a generated `sparseeval_arc` task, as lm-eval writes it."""
    from sparseeval.consume.lm_eval.ids import HASH_FIELD, ITEM_FIELD, doc_hash

    doc = {"query": query, "choices": ["a", "b"], "gold": 0, ITEM_FIELD: item,
           HASH_FIELD: original}  # fmt: skip
    return {"doc_id": doc_id, "doc": doc, "acc_norm": 1.0, "filter": "none",
            "doc_hash": doc_hash(doc)}  # fmt: skip


def _generated_file(d: Path, lines: list[dict]) -> Path:
    p = d / "samples_sparseeval_arc_2025-01-01T00-00-00.000000.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


@case(IDMAPS, "doc_hash check: a generated task's doc edited", "refused naming file and anchor")
def _(d, w):
    lines = [_generated_line(n, i, f"Q{n}?", f"h{n}") for n, i in enumerate(w.arc_items)]
    lines[1]["doc"]["query"] = "Another question?"  # edited after lm-eval hashed it
    r = predict(w, d, w.home / "published", _generated_file(d, lines))
    return refused(r, f"{_generated_file(d, lines).name}:2: anchor {w.arc_items[1]}",
                   "not the one lm-eval ran")  # fmt: skip


@case(IDMAPS, "doc_hash check: a generated task on other questions", "the mismatch is found")
def _(d, w):
    from sparseeval.consume.answers.identity import hash_mismatches
    from sparseeval.consume.lm_eval.harness import read_responses

    items = [str(i) for i in range(4)]
    sources = {i: {"task": "arc_challenge", "doc_id": int(i), "hash": f"doc_hash:h{i}",
                   "id_kind": "lm-eval doc id"} for i in items}  # fmt: skip
    lines = [_generated_line(n, i, f"Q{n}?", f"h{i}" if n else "other")
             for n, i in enumerate(items)]  # fmt: skip
    hashes: dict[str, str] = {}
    got = read_responses([_generated_file(d, lines)], items=items, benchmark="arc",
                         item_sources=sources, hashes=hashes)  # fmt: skip
    bad = hash_mismatches(sources, hashes)
    ok = bad == ["0"] and got == dict.fromkeys(items, 1)
    return Verdict(wrong=not ok, why=f"mismatches {bad}, answers {got}")


@case(IDMAPS, "doc_hash check: a generated task's good samples", "read: exit 0")
def _(d, w):
    lines = [_generated_line(n, i, f"Q{n}?", f"h{n}") for n, i in enumerate(w.arc_items)]
    return succeeded(predict(w, d, w.home / "published", _generated_file(d, lines)))
