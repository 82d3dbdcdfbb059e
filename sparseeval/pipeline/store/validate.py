"""The one row validator every source shares (the rules live in sql/validate.sql).

Bounded lengths (in characters) of the ids in a result row; a longer one is no id but a
broken or hostile file, and its row is quarantined with the reason (`model id is 100,000
characters long (at most 256)`), never stored as a good row. Ids are canonicalized
first, by the rule of `sparseeval.consume.answers.ids` (trimmed, zero-width characters dropped,
NFC); one with a control or format character is quarantined (`item id has a control
character`), and a benchmark name must be one that can be published:

- `MAX_MODEL_LEN` (256): model ids. Hub ids are `org/name`, each part at most 96.
- `MAX_ITEM_LEN` (256): item ids (`doc_id`, `subject:index`, a wide table's column name).
- `MAX_BENCHMARK_LEN` (64): benchmark names, in rows and in `Store.add_benchmark`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import duckdb

from sparseeval.consume.answers.ids import SQL_PATTERNS, IdError, check_new_benchmark_name
from sparseeval.consume.answers.responses import CORRECT_WORDS, WRONG_WORDS
from sparseeval.pipeline.store.db import (
    MAX_BENCHMARK_LEN,
    MAX_ITEM_LEN,
    MAX_MODEL_LEN,
    execute,
    fetch,
    sql,
)


def check(con: duckdb.DuckDBPyConnection, new_benchmarks: Sequence[str] = ()) -> list[str]:
    """Create the `checked` table from `src`: value as boolean, a reason when the row is bad.

    new_benchmarks: globs of benchmark names registered when the rows bring one the store
    does not know (in the unit's transaction), rather than quarantined; the names it
    registered."""
    bounds = {"max_model": MAX_MODEL_LEN, "max_item": MAX_ITEM_LEN,
              "max_benchmark": MAX_BENCHMARK_LEN}  # fmt: skip
    execute(con, "id_maps", SQL_PATTERNS)
    ((n_changed,),) = fetch(con, "id_changes", {})
    execute(con, "ids_mapped" if n_changed else "ids_plain", {})
    added = _accept_new(con, new_benchmarks) if new_benchmarks else []
    words = {"correct_words": list(CORRECT_WORDS), "wrong_words": list(WRONG_WORDS)}
    execute(con, "validate", bounds | words | SQL_PATTERNS)
    return added


def _accept_new(con: duckdb.DuckDBPyConnection, globs: Sequence[str]) -> list[str]:
    """Register each unknown benchmark name of the staged rows that one of `globs` matches
    and that can be published; a name that cannot stays unknown (its rows are quarantined)."""
    added = []
    for name, _n in fetch(con, "benchmarks_unknown", {}):
        if not any(fnmatch.fnmatchcase(name, g) for g in globs):
            continue
        try:
            check_new_benchmark_name(name)
        except IdError:
            continue
        con.execute(sql("benchmark_add"), [name, f"accepted on ingest ({', '.join(globs)})"])
        added.append(name)
    return added


def count_staged(con: duckdb.DuckDBPyConnection) -> int:
    """Rows staged by the reader, good or bad (the left side of the accounting)."""
    ((n,),) = fetch(con, "count_staged", {})
    return int(n)


def quarantine_bad(con: duckdb.DuckDBPyConnection, params: dict[str, Any]) -> int:
    """Move rejected and unparseable rows to the quarantine table; return how many."""
    ((before,),) = fetch(con, "count_quarantine", {})
    execute(con, "ingest_quarantine", params)
    ((after,),) = fetch(con, "count_quarantine", {})
    return int(after - before)


def resolve_duplicates(con: duckdb.DuckDBPyConnection, params: dict[str, Any]) -> tuple[int, int]:
    """Within the `batch` table: quarantine conflicting pairs, keep one row of agreeing ones.

    Returns (redundant agreeing rows dropped as duplicates, conflicting rows quarantined).
    """
    ((n_repeats,),) = fetch(con, "dups_any", {})
    if not n_repeats:
        return 0, 0
    execute(con, "ingest_dups", {})
    ((n_dup, n_conflict),) = fetch(con, "dups_summary", {})
    if n_dup or n_conflict:
        execute(con, "ingest_resolve_dups", params)
    return int(n_dup or 0), int(n_conflict or 0)


__all__ = [
    "check",
    "count_staged",
    "quarantine_bad",
    "resolve_duplicates",
]
