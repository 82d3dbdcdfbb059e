"""Whether a store file can be used: damaged (truncated, corrupt) or of a newer schema.

DuckDB reports a truncated file as "Could not read enough bytes" (at open, or only at the
first query that reaches a missing block); `damaged` turns either into a
`StoreDamagedError` (`db`) that says "damaged store". A file too short to hold the blocks its
header counts in use is refused at open, before any query. A store whose `schema_version`
is newer than this library's is refused, never written to (nor re-stamped as ours). A full
disk is said in words (`disk_full`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

_DAMAGE = re.compile(
    r"could not read enough bytes|not a valid duckdb|corrupt|checksum|invalid block|"
    r"database file .* has no header",
    re.IGNORECASE,
)
_FULL = re.compile(r"no space left|file too large|disk quota", re.IGNORECASE)


def is_damage(exc: BaseException) -> bool:
    """Whether a DuckDB error means the file is damaged (not locked, not a bad query)."""
    return isinstance(exc, duckdb.Error) and bool(_DAMAGE.search(str(exc)))


def damaged_message(path: str | Path, why: BaseException | str) -> str:
    """The one line for a damaged store file."""
    text = str(why).strip()
    why = text.splitlines()[0][:200] if text else "unreadable"
    return (
        f"damaged store {path} (truncated or corrupt: {why}); restore it from a backup, or "
        "move it away and ingest again into a new store"
    )


def disk_full(exc: BaseException) -> bool:
    """Whether an error means the disk (or the file-size limit) is full."""
    return bool(_FULL.search(str(exc))) or getattr(exc, "errno", None) in (28, 27, 122)


def store_problem(
    con: duckdb.DuckDBPyConnection, path: str | Path, schema_version: str
) -> tuple[str, str] | None:
    """("damaged" | "newer", message) for a truncated file or a newer schema, else None."""
    (row,) = con.execute("PRAGMA database_size").fetchall()
    block_size, used_blocks = int(row[2]), int(row[4])
    size = os.path.getsize(path)
    if size and size < block_size * used_blocks:  # the file cannot hold the blocks in use
        why = f"{size:,} bytes, too short for its {used_blocks} blocks in use"
        return "damaged", damaged_message(path, why)
    found = meta_value(con, "schema_version")
    if found is not None and _newer(found, schema_version):
        return "newer", (
            f"store {path} has schema version {found}, newer than this sparseeval reads "
            f"({schema_version}); upgrade sparseeval (the store was left as it is)"
        )
    return None


def meta_value(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """A value of the store's `meta` table (None: no such key, or no table yet)."""
    (found,), *_ = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
    ).fetchall()
    if not found:
        return None
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    return rows[0][0] if rows else None


def _newer(version: object, ours: str) -> bool:
    try:
        return int(str(version)) > int(ours)
    except ValueError:
        return True  # not a number we wrote


__all__ = [
    "damaged_message",
    "disk_full",
    "is_damage",
    "meta_value",
    "store_problem",
]
