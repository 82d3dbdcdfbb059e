"""What is held out of the matrices, for an operator to see, drop or release.

Three kinds: rows the ingest quarantined (table `quarantine`, per source and reason), results
the build sets aside (items too few models have: `build.joinable`), and inbox files moved to
`{inbox}/failed/` (failed, or quarantined whole). `sparseeval quarantine` is their command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparseeval.method.matrix import MatrixError
from sparseeval.pipeline.store.build import set_aside_items
from sparseeval.pipeline.store.db import Store, StoreError, execute, fetch
from sparseeval.pipeline.store.unit import printable_line
from sparseeval.pipeline.store.watched import FAILED_DIR, reason_file


def held_rows(store: Store) -> list[dict[str, Any]]:
    """The quarantine per source and reason: {source, reason, rows, last_run}."""
    rows = fetch(store.con, "quarantine_held", {})
    return [{"source": printable_line(s), "reason": printable_line(r), "rows": int(n),
             "last_run": int(k)} for s, r, n, k in rows]  # fmt: skip


def drop_rows(store: Store, names: list[str]) -> int:
    """Delete the quarantined rows of a source (any of `names`: its label or file, as given
    or absolute); how many went."""
    with store.transaction() as con:
        ((before,),) = fetch(con, "count_quarantine", {})
        execute(con, "quarantine_drop", {"names": names})
        ((after,),) = fetch(con, "count_quarantine", {})
    if before == after:
        raise StoreError(f"no quarantined rows of {names[0]!r} (`sparseeval quarantine list`)")
    return int(before - after)


def set_aside(store: Store, max_missing_model_frac: float) -> list[dict[str, Any]]:
    """Per benchmark with results, the items whose results the build sets aside:
    {benchmark, item, models} (a benchmark with nothing set aside has no row)."""
    out = []
    for name in store.benchmarks()["benchmark"].to_list():
        try:
            items = set_aside_items(store, name, max_missing_model_frac)
        except MatrixError:
            continue
        out += [{"benchmark": name, "item": printable_line(i), "models": int(n)}
                for i, n in zip(items["item"], items["n_models"], strict=True)]  # fmt: skip
    return out


def drop_set_aside(store: Store, benchmark: str, max_missing_model_frac: float) -> int:
    """Delete the current results the build sets aside in `benchmark`; how many went."""
    items = set_aside_items(store, benchmark, max_missing_model_frac)
    if not len(items):
        raise StoreError(f"{benchmark}: the build sets no results aside")
    params = {"bid": store.benchmark_id(benchmark), "ids": items["item_id"].to_list()}
    with store.transaction() as con:
        ((before,),) = con.sql("SELECT count(*) FROM results").fetchall()
        execute(con, "results_drop_items", params)
        ((after,),) = con.sql("SELECT count(*) FROM results").fetchall()
    return int(before - after)


def aside_files(inboxes: list[Path]) -> list[dict[str, str]]:
    """The files under each inbox's `failed/`, with the reason kept beside each."""
    out = []
    for inbox in inboxes:
        folder = Path(inbox) / FAILED_DIR
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            if path.name.endswith(".reason.txt"):
                continue
            why = reason_file(path)
            text = why.read_text(errors="replace").strip() if why.is_file() else ""
            out.append({"file": str(path), "reason": printable_line(text or "(no reason kept)")})
    return out


def release_file(path: Path) -> Path:
    """Move a set-aside file back into its inbox (read again on the next run); where it went."""
    folder, inside = _aside(path)
    target = folder.parent / inside
    if target.exists():
        raise StoreError(f"{target} exists: move or remove it first, then release {path}")
    target.parent.mkdir(parents=True, exist_ok=True)
    path.replace(target)
    reason_file(path).unlink(missing_ok=True)
    return target


def drop_file(path: Path) -> None:
    """Delete a set-aside file and its reason."""
    _aside(path)
    path.unlink()
    reason_file(path).unlink(missing_ok=True)


def _aside(path: Path) -> tuple[Path, Path]:
    """(the inbox's `failed/` folder, the path inside it) of a set-aside file."""
    path = Path(path).absolute()
    if not path.is_file():
        raise StoreError(f"{path}: no such file (`sparseeval quarantine list` shows them)")
    for folder in path.parents:
        if folder.name == FAILED_DIR:
            return folder, path.relative_to(folder)
    raise StoreError(f"{path}: not a set-aside file (those lie under an inbox's {FAILED_DIR}/)")


__all__ = [
    "aside_files",
    "drop_file",
    "drop_rows",
    "drop_set_aside",
    "held_rows",
    "release_file",
    "set_aside",
]
