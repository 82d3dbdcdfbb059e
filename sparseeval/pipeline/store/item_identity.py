"""Item identity in the store: each item's content hash and id kind (`consume.answers.identity`).

A unit's `id_kind` is given to the items it creates (and to stored items that had none, from
stores written before). A stager that reads hashes (lm-eval samples' `doc_hash`, a v1
details row's `hashes`) stages its rows in `HASHED_SCHEMA` and registers them with
`stage_hashes` (listing `ITEM_HASH_FRAME` in `Unit.frames`); `merge_identity` stores the
hash of items that have none, and counts items whose stored hash differs (kept: the same
id naming another question is the source's conflict, said in the run's message).
"""

from __future__ import annotations

import duckdb
import polars as pl

from sparseeval.pipeline.store.db import Store, execute, fetch
from sparseeval.pipeline.store.unit import SRC_SCHEMA, Unit, conform

ITEM_HASH_FRAME = "item_hash_frame"
HASHED_SCHEMA = SRC_SCHEMA | {"hash": pl.String}
_HASH_COLUMNS = {"benchmark": pl.String, "item": pl.String, "hash": pl.String}


def stage_hashes(con: duckdb.DuckDBPyConnection, rows: pl.DataFrame | None) -> None:
    """Register the (benchmark, item, hash) of staged rows that carry a hash."""
    frame = conform(rows, _HASH_COLUMNS).filter(pl.col("hash").is_not_null())
    con.register(ITEM_HASH_FRAME, frame.unique(["benchmark", "item"], keep="first"))


def merge_identity(con: duckdb.DuckDBPyConnection, unit: Unit, params: dict) -> str:
    """Store the unit's id kind and hashes (inside its transaction); a note on conflicts."""
    execute(con, "item_kind_fill", params | {"id_kind": unit.id_kind})
    if ITEM_HASH_FRAME not in unit.frames:
        return ""
    ((n_conflict,),) = fetch(con, "item_hash_conflicts", {})
    execute(con, "item_hash_set", {})
    if not n_conflict:
        return ""
    return (
        f"{n_conflict:,} item(s) have another content hash than the one stored (kept the"
        " stored): the same ids name other questions (dataset or harness version changed?)"
    )


def item_identity(store: Store, benchmark: str) -> dict[str, dict[str, str | None]]:
    """{item: {"hash", "id_kind"}} of a benchmark's stored items."""
    try:
        rows = fetch(store.con, "item_identity", {"benchmark": benchmark})
    except duckdb.BinderException:  # a store written before, opened read-only: unknown
        return {}
    return {item: {"hash": h, "id_kind": kind} for item, h, kind in rows}


__all__ = [
    "HASHED_SCHEMA",
    "ITEM_HASH_FRAME",
    "item_identity",
    "merge_identity",
    "stage_hashes",
]
