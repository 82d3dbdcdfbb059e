"""Canonical ids (DESIGN.md section 3): one rule for model, item and benchmark ids.

An id is canonicalized, or refused when it cannot be:

1. refused if it holds a control character (C0, DEL, C1: NUL, newline, tab, escape) or a
   line/paragraph separator (U+2028/U+2029), anywhere, edges included;
2. zero-width characters (U+200B-U+200D, U+2060, U+FEFF, soft hyphen U+00AD) are dropped;
3. refused if any other format character is left (bidi controls such as U+202E);
4. trimmed of spaces (Unicode category Zs: ' ', U+00A0, U+3000, ...) at both ends;
5. NFC-normalized; refused when then empty or longer than its bound.

A benchmark name must also be publishable: letters, digits, '_', '-', '.' (ASCII),
starting with a letter or digit, at most `MAX_BENCHMARK_LEN` characters.

The store applies the same rule in SQL (`sql/validate.sql`, fed the patterns below by
`SQL_PATTERNS`); `predict` and the published sets apply it through `canonical_id`.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable

from sparseeval.consume.benchmarks import RESERVED_NAMES
from sparseeval.consume.errors import SparseEvalError

MAX_MODEL_LEN = 256
MAX_ITEM_LEN = 256
MAX_BENCHMARK_LEN = 64

_CONTROL_RANGES = ((0x00, 0x1F), (0x7F, 0x9F), (0x2028, 0x2029))
_ZERO_WIDTH = ((0x200B, 0x200D), (0x2060, 0x2060), (0xFEFF, 0xFEFF), (0x00AD, 0x00AD))
_BENCHMARK = "[A-Za-z0-9][A-Za-z0-9_.-]*"


class IdError(SparseEvalError, ValueError):
    """An id that cannot be canonicalized; the message is the reason."""


def _py_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]"


def _re2_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "[" + "".join(f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in ranges) + "]"


_CONTROL = re.compile(_py_class(_CONTROL_RANGES))
_DROP = re.compile(_py_class(_ZERO_WIDTH))
_EDGE_SPACES = re.compile(r"^[^\S\x00-\x1f\x85\u2028\u2029]+|[^\S\x00-\x1f\x85\u2028\u2029]+$")

# The same rule for DuckDB's RE2 (sql/validate.sql): control, drop, edge spaces, benchmark.
SQL_PATTERNS = {
    "id_control": _re2_class(_CONTROL_RANGES),
    "id_drop": _re2_class(_ZERO_WIDTH),
    "id_format": r"\p{Cf}",
    "id_edges": r"^\p{Zs}+|\p{Zs}+$",
    "benchmark_rule": _BENCHMARK,
}


def canonical_id(text: object, what: str = "id", max_len: int = MAX_ITEM_LEN) -> str:
    """`text` in its canonical form; IdError naming `what` and why when it has none."""
    s = str(text)
    # The common case, printable ASCII: only edge spaces can differ.
    s = s.strip(" ") if s.isascii() and s.isprintable() else _canonical_unicode(s, what)
    if not s:
        raise IdError(f"{what} is empty")
    if len(s) > max_len:
        raise IdError(f"{what} is {len(s):,} characters long (at most {max_len})")
    return s


def _canonical_unicode(s: str, what: str) -> str:
    found = _CONTROL.search(s)
    if found:
        raise IdError(f"{what} has a control character ({ascii(found.group())[1:-1]})")
    s = _DROP.sub("", s)
    fmt = next((ch for ch in s if unicodedata.category(ch) == "Cf"), None)
    if fmt is not None:
        raise IdError(f"{what} has a format character ({ascii(fmt)[1:-1]})")
    return unicodedata.normalize("NFC", _EDGE_SPACES.sub("", s))


def is_canonical(text: object, max_len: int = MAX_ITEM_LEN) -> bool:
    """True when `text` is a str already in canonical form."""
    try:
        return isinstance(text, str) and canonical_id(text, max_len=max_len) == text
    except IdError:
        return False


def check_benchmark_name(name: object) -> str:
    """`name` when it is a benchmark name that can be stored and published; else IdError.

    The one rule for the store (`Store.add_benchmark`, rows), `predict` and publishing.
    """
    s = str(name)
    if not s or len(s) > MAX_BENCHMARK_LEN or not re.fullmatch(_BENCHMARK, s):
        raise IdError(
            f"benchmark name must be 1 to {MAX_BENCHMARK_LEN} characters: letters, digits, '_',"
            f" '-' or '.', starting with a letter or digit (got {ascii(s)[:80]})"
        )
    return s


def check_new_benchmark_name(name: object) -> str:
    """`check_benchmark_name`, and not a name the published layout reserves (a benchmark
    called `suite`, `latest`, `k25` or `v3` would be read as something else)."""
    s = check_benchmark_name(name)
    if RESERVED_NAMES.fullmatch(s):
        raise IdError(
            f"benchmark name {s!r} is reserved by the published layout (suite, average, "
            "latest, kN, vN); choose another"
        )
    return s


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'winogrande'?` when `name` is a near miss of one of `known` (another
    case, a letter off), else ""."""
    known = list(known)
    same = [k for k in known if k.lower() == name.lower() and k != name]
    close = same or difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.8)
    return f"; did you mean {close[0]!r}?" if close and close[0] != name else ""


__all__ = [
    "MAX_BENCHMARK_LEN",
    "MAX_ITEM_LEN",
    "MAX_MODEL_LEN",
    "SQL_PATTERNS",
    "IdError",
    "canonical_id",
    "check_benchmark_name",
    "check_new_benchmark_name",
    "did_you_mean",
    "is_canonical",
]
