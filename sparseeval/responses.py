"""A model's answers on anchor items: values, in-memory forms and files (NumPy-free).

Forms: {item: correct}, a DataFrame with columns `item` and `correct`, or a sequence in
anchor order. Files: CSV (`item,correct`), JSONL (`{"item", "correct"}` per line), JSON
(`{item: correct}` or a list of such objects) and lm-eval `--log_samples` output.
`correct` is 0/1, true/false or -1/+1; empty, None and NaN mean "not answered".
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_TEXT_SIGNS = {"1": 1.0, "1.0": 1.0, "true": 1.0, "+1": 1.0,
               "0": -1.0, "0.0": -1.0, "false": -1.0, "-1": -1.0, "-1.0": -1.0}  # fmt: skip
_NOT_ANSWERED = {"", "nan", "none", "null", "na"}


class ResponsesError(ValueError):
    """A model's answers on the anchors cannot be used (missing, unknown or bad values)."""


def sign(v: Any, where: str) -> float:
    """+1 for correct, -1 for wrong, NaN for not answered; anything else is an error."""
    if v is None:
        return math.nan
    if isinstance(v, str):
        t = v.strip().lower()
        if t in _NOT_ANSWERED:
            return math.nan
        if t in _TEXT_SIGNS:
            return _TEXT_SIGNS[t]
        raise _bad_answer(v, where)
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise _bad_answer(v, where) from None
    if math.isnan(f):
        return math.nan
    if f == 1.0:
        return 1.0
    if f in (0.0, -1.0):
        return -1.0
    raise _bad_answer(v, where)


def _bad_answer(v: Any, where: str) -> ResponsesError:
    return ResponsesError(f"answer for {where} is {v!r}; expected 0/1, true/false or -1/+1")


def as_pairs(responses: Any) -> list[tuple[Any, Any]] | None:
    """(item, value) pairs from a dict or a DataFrame; None for a plain sequence."""
    if isinstance(responses, Mapping):
        return list(responses.items())
    cols = getattr(responses, "columns", None)
    if cols is not None:
        names = [str(c) for c in cols]
        if "item" not in names or "correct" not in names:
            raise ResponsesError(f"responses table needs columns item and correct, got {names}")
        items, values = responses["item"], responses["correct"]
        items = items.to_list() if hasattr(items, "to_list") else list(items)
        values = values.to_list() if hasattr(values, "to_list") else list(values)
        return list(zip(items, values, strict=True))
    if isinstance(responses, str | bytes):
        raise ResponsesError("responses must be a dict, a DataFrame or a sequence, not a string")
    return None


def missing_message(missing: list[str], k: int, what: str) -> str:
    """`3 of 50 anchors missing from the answers: a, b, c` (at most ten named)."""
    more = f", ... (+{len(missing) - 10} more)" if len(missing) > 10 else ""
    return f"{len(missing)} of {k} anchors missing from the {what}: {', '.join(missing[:10])}{more}"


# --------------------------------------------------------------------------- files


def read_responses_files(
    files: Iterable[str | Path], anchor_set: Any, lm_eval_options: Mapping | None = None
) -> dict[str, object]:
    """{item: correct} from CSV / JSONL / JSON files and lm-eval samples files or folders.

    lm_eval_options: `metric`, `filter`, `task` for lm-eval output (see `sparseeval.lm_eval`).
    """
    from .lm_eval import is_samples_file, read_responses

    out: dict[str, object] = {}
    lm_eval_paths = []
    for f in map(Path, files):
        if not f.exists():
            raise ResponsesError(f"{f}: no such file or folder")
        if f.is_dir() or is_samples_file(f):
            lm_eval_paths.append(f)
        elif f.suffix.lower() in _READERS:
            out.update(_READERS[f.suffix.lower()](f))
        else:
            raise ResponsesError(f"{f}: unknown responses format (use .csv, .jsonl, .json)")
    if lm_eval_paths:
        opts = {k: v for k, v in dict(lm_eval_options or {}).items() if v is not None}
        out.update(
            read_responses(
                lm_eval_paths, items=anchor_set.items, benchmark=anchor_set.benchmark,
                item_sources=anchor_set.item_sources, **opts,
            )
        )  # fmt: skip
    return out


def _read_csv(path: Path) -> dict:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols = [c.strip() for c in reader.fieldnames or []]
        if "item" not in cols or "correct" not in cols:
            raise ResponsesError(f"{path}: needs a header with columns item,correct (got {cols})")
        reader.fieldnames = cols
        return {str(row["item"]).strip(): row["correct"] for row in reader}


def _read_jsonl(path: Path) -> dict:
    from .lm_eval import json_lines

    out = {}
    for n, rec in json_lines(path, ResponsesError):
        if not isinstance(rec, dict) or "item" not in rec or "correct" not in rec:
            raise ResponsesError(f"{path}:{n}: expected an object with item and correct")
        out[str(rec["item"])] = rec["correct"]
    return out


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ResponsesError(f"{path}: not valid JSON ({e.msg}, line {e.lineno})") from None
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    if isinstance(data, list) and all(isinstance(r, dict) and "item" in r for r in data):
        return {str(r["item"]): r.get("correct") for r in data}
    raise ResponsesError(f"{path}: expected {{item: correct}} or a list of {{item, correct}}")


_READERS = {".csv": _read_csv, ".jsonl": _read_jsonl, ".json": _read_json}
