"""Item identity: what an anchor's id is, and whether the questions answered are the set's.

A published set's `item_sources` maps each anchor to {task, doc_id, hash, id_kind}:
- `id_kind` says what the id is: `lm-eval doc id` (read from lm-eval samples), `leaderboard
  row index` (the row of an Open LLM Leaderboard v1 details file, in the benchmark's item
  order), or `opaque` (an index into someone's own item list, e.g. a wide table's integer
  column names: metabench's ids index its own preprocessed item list). An opaque id is never
  exported as a doc id; `--id-map FILE.csv` (columns `item,doc_id`, optionally `task`) maps
  it to lm-eval docs. Sets published before this was recorded have kind `unknown`.
- `hash` is the source's content hash, `name:value`: lm-eval samples' `doc_hash`
  (`doc_hash:…`), a v1 details row's `hashes` struct (`example:…`, lighteval's xxh64 of
  the question). lm-eval answers whose `doc_hash` differs from the set's are other
  questions (`hash_mismatches`).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path

from sparseeval.consume.lm_eval.ids import LmEvalError, doc_id, synthetic_hint

LM_EVAL_DOC = "lm-eval doc id"
ROW_INDEX = "leaderboard row index"
OPAQUE = "opaque"
UNKNOWN = "unknown"
ID_KINDS = (LM_EVAL_DOC, ROW_INDEX, OPAQUE)
DOC_HASH = "doc_hash"  # lm-eval samples' hash of the doc (`hash_string(json.dumps(doc))`)
UNKNOWN_NOTE = (
    "this set was published before item identity was recorded: its ids are read as lm-eval"
    " doc ids by the id rules, unchecked"
)
MISMATCH = "the questions differ from the set's: dataset or lm-eval version changed?"


def id_kind(entry: object) -> str:
    """The id kind of one `item_sources` entry (`unknown` when it does not say)."""
    kind = entry.get("id_kind") if isinstance(entry, Mapping) else None
    return kind if kind in ID_KINDS else UNKNOWN


def id_kinds(items: Iterable[str], item_sources: Mapping | None) -> dict[str, str]:
    """{item: id kind} of a set's anchors."""
    sources = item_sources or {}
    return {i: id_kind(sources.get(i)) for i in items}


def opaque_message(benchmark: str, opaque: list[str]) -> str:
    """The one line refusing to export opaque ids."""
    shown = ", ".join(opaque[:3]) + (f" (and {len(opaque) - 3} more)" if len(opaque) > 3 else "")
    return (
        f"{benchmark}: {len(opaque)} anchor id(s) are opaque ({shown}): an index into the"
        " source's own item list, not lm-eval doc ids; pass --id-map FILE.csv (columns"
        " item,doc_id[,task]) mapping them to lm-eval docs"
    )


def with_id_map(
    items: list[str], item_sources: Mapping | None, id_map: Mapping[str, Mapping] | None
) -> dict:
    """`item_sources` with `id_map`'s entries (kind `lm-eval doc id`) over the anchors' own."""
    out = {i: dict(s) for i, s in dict(item_sources or {}).items() if isinstance(s, Mapping)}
    for item in items:
        if id_map and item in id_map:
            out[item] = {**out.get(item, {}), **id_map[item], "id_kind": LM_EVAL_DOC}
    return out


def check_exportable(benchmark: str, items: list[str], item_sources: Mapping | None) -> None:
    """LmEvalError (one line) when any anchor id is opaque."""
    kinds = id_kinds(items, item_sources)
    opaque = [i for i in items if kinds[i] == OPAQUE]
    if opaque:
        raise LmEvalError(opaque_message(benchmark, opaque) + synthetic_hint(opaque))


def read_id_map(
    path: str | Path,
    default_task: str | None = None,
    benchmark: str | None = None,
    members: tuple[str, ...] = (),
) -> dict[str, dict]:
    """{item: {task, doc_id}} of `benchmark` from a CSV with columns `item`, `doc_id` and
    optionally `task` and `benchmark`. Rows are scoped per benchmark: a row names its
    benchmark (column `benchmark`, or a suite id `B/ITEM`) or, in a one-benchmark map, is
    that benchmark's; a suite's map (`members`) must name each row's. The map is
    one-to-one: an item twice, or two items to one doc, is refused (one line)."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise LmEvalError(f"--id-map {path}: cannot read it ({exc})") from None
    if not rows or not {"item", "doc_id"} <= set(rows[0]):
        raise LmEvalError(f"--id-map {path}: expected a CSV with columns item,doc_id[,task]")
    out: dict[str, dict] = {}
    lines: dict[object, int] = {}
    for n, row in enumerate(rows, start=2):
        where = f"--id-map {path}:{n}"
        bench, item = _row_scope(row, members, where)
        if (bench or benchmark) != benchmark:
            continue
        task = (row.get("task") or "").strip() or default_task
        if not task:
            raise LmEvalError(f"{where}: no task (add a task column or pass --task)")
        try:
            entry = {"task": task, "doc_id": doc_id(row["doc_id"])}
        except ValueError as exc:
            raise LmEvalError(f"{where}: {exc}") from None
        _check_task(task, benchmark, where)
        for key, what in ((("item", item), f"item {item!r} is mapped twice"),
                          ((task, entry["doc_id"]), f"two items map to {task} doc"
                           f" {entry['doc_id']}")):  # fmt: skip
            if key in lines:
                raise LmEvalError(f"{where}: {what} (also line {lines[key]}): a map is one-to-one")
            lines[key] = n
        out[item] = entry
    return out


def _row_scope(row: Mapping, members: tuple[str, ...], where: str) -> tuple[str | None, str]:
    """(benchmark the row names or None, its item id)."""
    item = str(row["item"]).strip()
    bench = (row.get("benchmark") or "").strip() or None
    head, sep, rest = item.partition("/")
    if bench is None and sep and head in members:
        bench, item = head, rest
    if members and bench is None:
        raise LmEvalError(
            f"{where}: a suite's id map names each row's benchmark (columns"
            " benchmark,item,doc_id[,task], or item B/ITEM)"
        )
    return bench, item


def _check_task(task: str, benchmark: str | None, where: str) -> None:
    """A row's task must be one of its benchmark's (an ARC anchor is no Winogrande doc)."""
    from sparseeval.consume.benchmarks import record
    from sparseeval.consume.lm_eval.taskmap import map_lm_eval_task

    owner = map_lm_eval_task(task).benchmark
    mine = record(benchmark) if benchmark else None
    if mine is not None and owner != benchmark and record(owner) and task not in mine.specs:
        raise LmEvalError(f"{where}: task {task} is {owner}'s, not {benchmark}'s")


def split_hash(value: object) -> tuple[str, str] | None:
    """(name, digest) of a stored `name:value` hash (None when absent or malformed)."""
    if not isinstance(value, str) or ":" not in value:
        return None
    name, _, digest = value.partition(":")
    return (name, digest) if name and digest else None


def hash_mismatches(item_sources: Mapping | None, hashes: Mapping[str, str]) -> list[str]:
    """The answered anchors {item: doc_hash of its answer} whose hash differs from the
    set's `doc_hash`."""
    bad = []
    for item, seen in hashes.items():
        src = (item_sources or {}).get(item)
        stored = split_hash(src.get("hash")) if isinstance(src, Mapping) else None
        if stored is not None and stored[0] == DOC_HASH and seen != stored[1]:
            bad.append(item)
    return bad


def mismatch_message(
    benchmark: str, bad: list[str], what: str = "anchor(s)", where: object = None
) -> str:
    """The one line refusing answers to other questions (`where`: the file of the first)."""
    shown = ", ".join(bad[:5]) + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")
    line = (
        f"{benchmark}: {len(bad)} answered {what} have another doc_hash than the set's"
        f" ({shown}): {MISMATCH} (--ignore-hash-mismatch to score them anyway)"
    )
    return f"{where}: {line}" if where is not None else line


__all__ = [
    "DOC_HASH",
    "ID_KINDS",
    "LM_EVAL_DOC",
    "MISMATCH",
    "OPAQUE",
    "ROW_INDEX",
    "UNKNOWN",
    "UNKNOWN_NOTE",
    "check_exportable",
    "hash_mismatches",
    "id_kind",
    "id_kinds",
    "mismatch_message",
    "opaque_message",
    "read_id_map",
    "split_hash",
    "with_id_map",
]
