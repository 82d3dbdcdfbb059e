"""lm-eval's (task, doc_id) of anchor item ids, and the `--samples` JSON that runs only them.

The id rules (first that applies) are in `sparseeval.consume.lm_eval.harness`'s docstring.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from sparseeval.consume.answers.jsontext import short_repr
from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.lm_eval.taskmap import default_task, subtask_task

# The field of an exported lm-eval task's docs that carries the anchor item id.
ITEM_FIELD = "sparseeval_item"
# ... and the one carrying the original task's lm-eval `doc_hash` of that doc (`doc_hash`),
# which `predict` compares with the set's: a generated doc is not the original's.
HASH_FIELD = "sparseeval_doc_hash"


def doc_hash(doc: object, default: Callable[[object], object] | None = None) -> str:
    """lm-eval's `doc_hash` of a doc: the sha256 of its JSON (indent 2, not ASCII-escaped),
    as lm_eval/evaluator.py writes it with --log_samples (0.4.13). `default`: lm-eval's
    `handle_non_serializable`, for a doc straight from a dataset."""
    text = json.dumps(doc, indent=2, default=default, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class LmEvalError(SparseEvalError, ValueError):
    """lm-eval files or anchor ids that cannot be mapped or read."""


MAX_DOC_ID = 2**63 - 1


def doc_id(value: object) -> int:
    """A doc id as an int: a non-negative int or a string of ASCII digits, nothing else.

    914.4, "914.4", 914.0, True and -1 raise ValueError: a doc id is never rounded; one
    above `MAX_DOC_ID` (2**63 - 1, what the store holds) is out of range.
    """
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip()) if len(value.strip()) <= 19 else MAX_DOC_ID + 1
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        if value > MAX_DOC_ID:
            raise LmEvalError(f"doc_id is out of range (more than {MAX_DOC_ID:,})")
        return value
    raise LmEvalError(f"doc_id {short_repr(value)} is not a non-negative integer")


def item_source(
    item: str,
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    task: str | None = None,
) -> tuple[str, int]:
    """The lm-eval (task, doc_id) of one anchor item id (rules in the module docstring)."""
    item = str(item)
    if item_sources and item in item_sources:
        src = item_sources[item]
        if (
            isinstance(src, Mapping) and "doc_id" not in src
        ):  # an opaque id (consume.answers.identity)
            raise LmEvalError(
                f"anchor {item!r} has an {src.get('id_kind', 'unknown')} id, not an lm-eval doc"
                " id; pass --id-map FILE.csv (columns item,doc_id[,task])"
            )
        t, d = (src["task"], src["doc_id"]) if isinstance(src, Mapping) else src
        try:
            return str(t), doc_id(d)
        except ValueError as exc:
            raise LmEvalError(f"anchor {item!r}: item_sources {exc}") from None
    if ":" in item:
        prefix, _, doc = item.rpartition(":")
        if doc.strip().lstrip("-").isascii() and doc.strip().lstrip("-").isdigit():
            return subtask_task(prefix) or prefix, int(doc)
    if item.strip().isascii() and item.strip().isdigit():
        default = task or default_task((benchmark or "").lower())
        if default:
            return default, int(item)
        raise LmEvalError(
            f"anchor {item!r} is a bare doc id but benchmark {benchmark!r} has no default "
            "lm-eval task; pass --task (or item_sources when publishing)"
        )
    raise LmEvalError(
        f"cannot map anchor {item!r} to an lm-eval task and doc id; expected 'doc_id', "
        "'task:doc_id' or 'subject:index', or an explicit item_sources map in the manifest"
    )


def synthetic_hint(items: Iterable[str]) -> str:
    """What to do when every id is one of the built-in synthetic leaderboard's ('' if not)."""
    if not all(str(i).startswith("item-") for i in items):
        return ""
    return (
        "; these are the built-in synthetic leaderboard's ids, not lm-eval doc ids: publish"
        " sets from real results (leaderboard details or lm-eval output) to export them"
    )


def export_samples(
    items: Iterable[str],
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    task: str | None = None,
) -> dict[str, list[int]]:
    """{task: sorted doc ids} for `lm-eval run --samples` covering every anchor."""
    items = [str(i) for i in items]
    out: dict[str, set[int]] = {}
    errors = []
    for item in items:
        try:
            t, d = item_source(item, benchmark, item_sources, task)
        except LmEvalError as e:
            errors.append(str(e))
            continue
        if d < 0:  # `task:-3`
            errors.append(f"anchor {item!r} has a negative doc id")
            continue
        out.setdefault(t, set()).add(d)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise LmEvalError(errors[0] + more + synthetic_hint(items))
    return {t: sorted(ds) for t, ds in sorted(out.items())}


def merge_samples(*mappings: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """Union of several {task: doc ids} (one lm-eval run for several benchmarks)."""
    out: dict[str, set[int]] = {}
    for m in mappings:
        for t, ds in m.items():
            try:
                out.setdefault(t, set()).update(doc_id(d) for d in ds)
            except ValueError as exc:
                raise LmEvalError(f"task {t!r}: {exc}") from None
    return {t: sorted(ds) for t, ds in sorted(out.items())}


def write_samples_json(mapping: Mapping[str, list[int]], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({t: list(ds) for t, ds in mapping.items()}, indent=1) + "\n")
    return path


__all__ = [
    "HASH_FIELD",
    "ITEM_FIELD",
    "MAX_DOC_ID",
    "LmEvalError",
    "doc_hash",
    "doc_id",
    "export_samples",
    "item_source",
    "merge_samples",
    "synthetic_hint",
    "write_samples_json",
]
