"""A quote opened and never closed on its CSV line: one bad line, not the rest of the file.

DuckDB's reader takes `m9,arc,"1,1` as the start of a quoted field that runs to the next
quote, often the end of the file, and rejects that one record: every good row after the
line is gone, silently. Here a rejected record spanning lines is found, and the file is read
again from a copy in which that line is a lone marker (rejected on its own, so every other
line keeps its number); the rejection then gets the line's own text and the reason back.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb

from sparseeval.pipeline.store.unit import SourceError

MAX_REPAIRS = 100
MARKER = b"sparseeval$unclosed-quote\n"
REASON = "a quote opened on this line is never closed"
_RAW_LIMIT = 2000


def stage_repairing_quotes(
    con: duckdb.DuckDBPyConnection, path: Path, stage: Callable[[Path], None]
) -> None:
    """`stage(path)`; while a rejected record spans lines, `stage` a copy without its line."""
    lines: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="sparseeval-csv-") as tmp:
        source = path
        for _ in range(MAX_REPAIRS + 1):
            stage(source)
            line = _swallowing_line(con)
            if line is None:
                break
            lines[line] = ""
            source = _copy_marking(path, lines, Path(tmp) / path.name)
        else:
            raise SourceError(f"{path}: more than {MAX_REPAIRS} lines open a quote never closed")
    for line, text in lines.items():
        con.execute(
            "UPDATE csv_rejects SET csv_line = $raw, error_type = 'UNQUOTED VALUE', "
            "error_message = $why WHERE line = $line",
            {"raw": text[:_RAW_LIMIT], "why": REASON, "line": line},
        )


def _swallowing_line(con: duckdb.DuckDBPyConnection) -> int | None:
    """The first rejected record that holds a newline (a quote ran over line ends)."""
    ((line,),) = con.execute(
        "SELECT min(line) FROM csv_rejects WHERE contains(csv_line, chr(10))"
    ).fetchall()
    return None if line is None else int(line)


def _copy_marking(path: Path, lines: dict[int, str], out: Path) -> Path:
    """`path` copied to `out` with each of `lines` replaced by the marker; their text kept."""
    with open(path, "rb") as src, open(out, "wb") as dst:
        for n, raw in enumerate(src, 1):
            if n in lines:
                lines[n] = raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
                raw = MARKER
            dst.write(raw)
    return out


__all__ = [
    "MARKER",
    "MAX_REPAIRS",
    "REASON",
    "stage_repairing_quotes",
]
