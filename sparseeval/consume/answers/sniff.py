"""What a text file really is, from its first bytes: compressed archives and wrong delimiters.

A `results.csv.gz` renamed `results.csv` is not "not UTF-8 text": it is a gzip file, and
the message says so and what to run. A header split by `;` or tabs is named as such.
Used by the store's table readers and by `predict`'s answers reader alike.
"""

from __future__ import annotations

from pathlib import Path

# magic bytes -> (format, how to get the text back)
_MAGIC = (
    (b"\x1f\x8b", "gzip", "gunzip FILE"),
    (b"\x28\xb5\x2f\xfd", "zstd", "zstd -d FILE"),
    (b"BZh", "bzip2", "bunzip2 FILE"),
    (b"\xfd7zXZ\x00", "xz", "unxz FILE"),
    (b"PK\x03\x04", "zip", "unzip FILE"),
    (b"PK\x05\x06", "zip", "unzip FILE"),
    (b"7z\xbc\xaf\x27\x1c", "7z", "7z x FILE"),
    (b"\x04\x22\x4d\x18", "lz4", "lz4 -d FILE"),
)


def compressed(head: bytes) -> tuple[str, str] | None:
    """(format, command) when `head` starts like a compressed file, else None."""
    for magic, name, command in _MAGIC:
        if head.startswith(magic):
            return name, command
    return None


def compressed_message(path: str | Path) -> str | None:
    """`FILE: a gzip-compressed file, not text; decompress it first (gunzip FILE)`, or None."""
    with open(path, "rb") as f:
        found = compressed(f.read(8))
    if found is None:
        return None
    name, command = found
    return (
        f"{path}: a {name}-compressed file, not text; decompress it first "
        f"({command.replace('FILE', Path(path).name)})"
    )


def shown_columns(header: list[str], n: int = 6) -> list[str]:
    """The first `n` column names, then `... (N columns)` for a long header."""
    return header if len(header) <= n else [*header[:n], f"... ({len(header):,} columns)"]


def layout_hint(header: list[str]) -> str:
    """Why a header is not `item,correct`, when it says: a wide row, or another delimiter."""
    if "model" in header and len(header) > 2:
        return (
            "; this is a wide table (model + one column per item): write one item,correct"
            " row per anchor (`sparseeval anchors --template FILE` writes the blank)"
        )
    return delimiter_hint(header)


def delimiter_hint(header: list[str]) -> str:
    """`; the header is separated by ';' (save it comma-separated)` for a one-column header
    that holds `;` or tabs, else ""."""
    if len(header) != 1:
        return ""
    for sep, name in ((";", "';'"), ("\t", "tabs")):
        if sep in header[0]:
            return f"; the header is separated by {name}, not commas (save it comma-separated)"
    return ""


__all__ = [
    "compressed",
    "compressed_message",
    "delimiter_hint",
    "layout_hint",
    "shown_columns",
]
