"""The results store: one DuckDB file, its schema, and the queries later stages ask."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from sparseeval.consume.answers.ids import (  # noqa: F401 (the bounds are re-exported)
    MAX_BENCHMARK_LEN,
    MAX_ITEM_LEN,
    MAX_MODEL_LEN,
    IdError,
    check_benchmark_name,
    check_new_benchmark_name,
)
from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.lm_eval.taskmap import known_benchmarks
from sparseeval.pipeline.store.integrity import (
    damaged_message,
    is_damage,
    meta_value,
    store_problem,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
_LOCK_PATTERNS = ("could not set lock", "conflicting lock")
INTERRUPTED = (
    "interrupted: the process ended before this ingest finished, so none of its rows were"
    " stored (marked when the store was next opened for writing)"
)
# Ingest runs in progress in this process, per store file: `Store.open` must not mark a
# run another connection of this very process is still doing as interrupted.
_LIVE_RUNS: dict[str, set[int]] = {}


class StoreError(SparseEvalError, RuntimeError):
    """The store cannot do what was asked (locked, unknown benchmark, bad file)."""


class StoreLockedError(StoreError):
    """Another process holds the store's write lock."""


class StoreDamagedError(StoreError):
    """The store file is truncated or corrupt (`integrity`)."""


class StoreTooNewError(StoreError):
    """The store was written by a newer sparseeval (a higher schema version)."""


@cache
def sql(name: str) -> str:
    """The text of `sql/{name}.sql` (installed as `sparseeval.sql`)."""
    return resources.files("sparseeval.sql").joinpath(f"{name}.sql").read_text()


@cache
def schema_fingerprint() -> str:
    """What `Store._init_schema` sets up: the schema's text, version and known benchmarks."""
    text = "\n".join(
        [SCHEMA_VERSION, sql("schema"), *map(repr, sorted(known_benchmarks().items()))]
    )
    return hashlib.sha256(text.encode()).hexdigest()


def statements(name: str) -> list[str]:
    """The statements of a multi-statement .sql file (split on `;` at line ends)."""
    parts = re.split(r";\s*$", sql(name), flags=re.MULTILINE)
    return [p for p in parts if re.sub(r"--[^\n]*", "", p).strip()]


def execute(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> None:
    """Run every statement of a .sql file, binding only the `$name` parameters each uses."""
    for stmt in statements(name):
        used = set(re.findall(r"\$([A-Za-z_]\w*)", stmt))
        con.execute(stmt, {k: v for k, v in params.items() if k in used} or None)


def relation(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]
) -> duckdb.DuckDBPyRelation:
    """A one-statement .sql query as a lazy relation, binding the parameters it uses."""
    text = sql(name)
    used = set(re.findall(r"\$([A-Za-z_]\w*)", text))
    return con.sql(text, params={k: v for k, v in params.items() if k in used} or None)


def fetch(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> list[tuple]:
    """All rows of a one-statement .sql query, binding the parameters it uses."""
    return relation(con, name, params).fetchall()


class Store:
    """An open DuckDB results store. Use `Store.open(path)`; close it (or use `with`)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, read_only: bool) -> None:
        self.con = con
        self.path = path
        self.read_only = read_only

    @classmethod
    def open(cls, path: str | Path, read_only: bool = False, wait_s: float = 10.0) -> Store:
        """Open (creating if needed) the store, waiting at most `wait_s` for another writer."""
        path = Path(path)
        if read_only and not path.exists():
            raise StoreError(f"no store at {path} (ingest something first)")
        if path.exists() and not path.is_file():  # a pipe would block DuckDB's open forever
            raise StoreError(f"store {path} is not a regular file (a folder, pipe or device?)")
        path.parent.mkdir(parents=True, exist_ok=True)
        con = _connect(path, read_only, wait_s)
        try:
            problem = store_problem(con, path, SCHEMA_VERSION)
        except duckdb.Error as exc:
            con.close()
            if is_damage(exc):
                raise StoreDamagedError(damaged_message(path, exc)) from None
            raise
        if problem is not None:
            con.close()
            kind, message = problem
            raise (StoreDamagedError if kind == "damaged" else StoreTooNewError)(message)
        store = cls(con, path, read_only)
        if not read_only:
            store._init_schema()
            store._mark_interrupted()
        return store

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _init_schema(self) -> None:
        """Create the tables and register the known benchmarks, unless this very schema
        (`schema_fingerprint`) was set up already: most opens then write nothing."""
        fingerprint = schema_fingerprint()
        if meta_value(self.con, "schema_fingerprint") == fingerprint:
            return
        with self.transaction():
            for stmt in statements("schema"):
                self.con.execute(stmt)
            self.con.execute(sql("meta_set"), ["schema_version", SCHEMA_VERSION])
            for name, description in known_benchmarks().items():
                self.con.execute(sql("benchmark_add"), [name, description])
            self.con.execute(sql("meta_set"), ["schema_fingerprint", fingerprint])

    def _mark_interrupted(self) -> None:
        """Runs left 'running' by a process that ended mid-ingest become 'interrupted'.

        Only one process writes at a time (the file lock), so a 'running' row that is not
        one of this process's own live runs belongs to a process that is gone.
        """
        live = sorted(live_runs(self.path))
        with self.transaction() as con:
            params = {"live": live, "message": INTERRUPTED}
            ((n,),) = con.execute(sql("runs_interrupted"), params).fetchall()
        if n:
            log.warning("store %s: %d ingest run(s) left 'running' by a process that ended"
                        " were marked interrupted", self.path, n)  # fmt: skip

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """BEGIN ... COMMIT, or ROLLBACK on any exception (nothing partial stays)."""
        self.con.begin()
        try:
            yield self.con
            self.con.commit()
        except BaseException:
            with suppress(duckdb.Error):  # a failed COMMIT may have ended it already
                self.con.rollback()
            raise

    def query(self, name: str, params: Sequence[Any] | dict[str, Any] = ()) -> pl.DataFrame:
        """Run the named .sql query with bound parameters; return a Polars frame."""
        return self.con.sql(sql(name), params=params or None).pl()

    def scalar(self, name: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        rows = self.con.sql(sql(name), params=params or None).fetchall()
        return rows[0][0] if rows else None

    # -- benchmarks ---------------------------------------------------------------
    def add_benchmark(self, name: str, description: str = "") -> None:
        """Register a benchmark so that its rows are accepted (known ones are built in).

        The name must be one that can be published and is not one the published layout uses
        (`consume.answers.ids.check_new_benchmark_name`).
        """
        try:
            check_new_benchmark_name(name)
        except IdError as exc:
            raise StoreError(str(exc)) from None
        self.con.execute(sql("benchmark_add"), [name, description])

    def benchmarks(self) -> pl.DataFrame:
        """Each benchmark with its counts of items, models and results."""
        return self.query("benchmarks")

    def benchmark_id(self, name: str) -> int:
        found = self.scalar("benchmark_id", [name])
        if found is None:
            known = ", ".join(self.benchmarks()["benchmark"].to_list())
            raise StoreError(f"unknown benchmark {name!r} (known: {known})")
        return int(found)

    def result_signatures(self) -> dict[str, tuple[int, int, int, int]]:
        """{benchmark: (results, max ref id, sum of ref ids, correct)}: changes with any result."""
        rows = self.con.sql(sql("result_signatures")).fetchall()
        return {name: tuple(rest) for name, *rest in rows}

    def holds_only_synthetic(self) -> bool:
        """True when nothing but the built-in synthetic leaderboard was ever ingested."""
        return int(self.scalar("other_sources")) == 0

    def last_run_id(self) -> int:
        """The newest ingest run id, 0 when nothing was ever ingested."""
        return int(self.scalar("last_run"))

    # -- provenance -----------------------------------------------------------------
    def provenance(self, *benchmarks: str, examples: int = 20) -> dict[str, Any]:
        """Where the benchmarks' current results came from, per source kind; synthetic or not.

        {"synthetic": bool, "kinds": {kind: {"n_results", "n_sources", "sources": [first
        `examples` sources]}}}, a source that holds several of the benchmarks counted once;
        published manifests carry it, so a set fit on the built-in demo says so.
        """
        kinds: dict[str, dict[str, Any]] = {}
        rows = fetch(self.con, "benchmark_provenance", {"benchmarks": list(benchmarks)})
        for kind, source, n, _ in rows:
            k = kinds.setdefault(kind, {"n_results": 0, "n_sources": 0, "sources": []})
            k["n_results"] += int(n)
            k["n_sources"] += 1
            if len(k["sources"]) < examples:
                k["sources"].append(source)
        return {"synthetic": "synthetic" in kinds, "kinds": kinds}

    def runs(self, limit: int = 50) -> pl.DataFrame:
        """The latest ingest runs: what was read, counts, status."""
        return self.query("runs", [limit])

    def quarantine(self, run_id: int | None = None) -> pl.DataFrame:
        """Quarantined rows (raw row or line, reason, source), optionally of one run."""
        return self.query("quarantine", [run_id])

    def history(self, model: str, benchmark: str, item: str) -> pl.DataFrame:
        """Every value stored for one (model, item), newest first; `current` marks the live one."""
        return self.query("history", {"model": model, "benchmark": benchmark, "item": item})

    def hub_revision(self, repo: str) -> str | None:
        """The Hub revision last ingested for a dataset repo, if any."""
        return self.scalar("hub_revision", [repo])

    def hub_files(self, repo: str) -> set[str]:
        """Paths of a Hub repo already ingested (at any revision)."""
        return set(self.query("hub_files", {"repo": repo})["path"].to_list())

    # -- drift queries ----------------------------------------------------------------
    def models_first_seen_after(
        self,
        after: datetime | None = None,
        run_id: int | None = None,
        benchmark: str | None = None,
    ) -> list[str]:
        """Models whose first result (in `benchmark`, or anywhere) came after time T or run R."""
        if (after is None) == (run_id is None):
            raise ValueError("give exactly one of `after` (a time) or `run_id`")
        bid = None if benchmark is None else self.benchmark_id(benchmark)
        frame = self.query("models_first_seen", {"bid": bid, "after": after, "run": run_id})
        return frame["model"].to_list()

    def models(self) -> pl.DataFrame:
        return self.query("models")


def live_runs(path: Path) -> set[int]:
    """The ingest runs this process is doing now in the store at `path` (a live set)."""
    return _LIVE_RUNS.setdefault(str(Path(path).resolve()), set())


def _connect(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """Connect, retrying while another process holds the lock, up to `wait_s` seconds."""
    deadline = time.monotonic() + wait_s
    delay = 0.05
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            execute(con, "session", {})  # no progress bars on stderr, terminal or not
            return con
        except duckdb.IOException as exc:
            if not any(p in str(exc).lower() for p in _LOCK_PATTERNS):
                if is_damage(exc):
                    raise StoreDamagedError(damaged_message(path, exc)) from None
                raise StoreError(f"cannot open store {path}: {exc}") from exc
            if time.monotonic() >= deadline:
                holder = re.search(r"PID (\d+)", str(exc))
                who = f" (process {holder.group(1)})" if holder else ""
                raise StoreLockedError(
                    f"store {path} is in use by another writer{who}; waited {wait_s:g}s"
                ) from exc
            log.info("store %s is locked by another process; waiting", path)
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


__all__ = [
    "INTERRUPTED",
    "MAX_BENCHMARK_LEN",
    "MAX_ITEM_LEN",
    "MAX_MODEL_LEN",
    "SCHEMA_VERSION",
    "Store",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "StoreTooNewError",
    "execute",
    "fetch",
    "live_runs",
    "relation",
    "schema_fingerprint",
    "sql",
    "statements",
]
