"""Source specs, parsed in one place for the CLI and the flows, and the built-in synthetic source.

synthetic | synthetic:n_models=1000,seed=0,items=ollm,models=0-800,benchmarks=arc+gsm8k
results.parquet | results.csv              a long table (model, benchmark, item, correct)
wide:BENCHMARK=file.csv                    a wide table (model + one column per item)
runs/lm-eval-output/ | results_*.json      lm-eval --log_samples output
hub:org/model[,org/model...]               Open LLM Leaderboard v1 details of those models
hub:v1:GLOB[,GLOB][@ORG] | hub:v2:GLOB     every v1 / v2 details repo whose `org/model`
                                           matches (`*`: all), from one paginated listing;
                                           at most `hub_max_repos` new repos per run

Watched sources, for the `sources` setting that the nightly job reads every night:

lm-eval:GLOB        every lm-eval output folder matching GLOB (`lm-eval:runs/*/*`; `**`
                    works); a run folder (one holding results_*.json) is read only when
                    complete: its results JSON is there and no file in it changed within
                    `sparseeval.pipeline.store.readers.SETTLE_SECONDS` (60 s)
inbox:DIR           a drop folder: long tables `DIR/*.csv`, `DIR/*.parquet`, and wide tables
                    `DIR/{benchmark}/*.csv`; a file changed within the settle time is left
                    for a later night

In both, content ingested before is skipped (it costs its hashing), a file still being
written is a skipped unit saying so, and a bad file is one failed unit: the others land.
Relative paths are relative to the working directory of the process.
"""

from __future__ import annotations

import csv
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.hashing import fingerprint
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.synthetic import OLLM_V1_ITEMS, make_leaderboard
from sparseeval.pipeline.records import IngestSummary

log = logging.getLogger(__name__)

# The built-in source that fills an empty store: six benchmarks, quick on a laptop.
DEFAULT_SYNTHETIC_ITEMS = {
    "arc": 600, "gsm8k": 500, "hellaswag": 1000, "mmlu": 1000, "truthfulqa": 400,
    "winogrande": 600,
}  # fmt: skip
DEFAULT_SYNTHETIC_MODELS = 1000
FORMATS = ("auto", "long", "wide", "lm-eval")


@dataclass
class SyntheticLeaderboard:
    """A seeded synthetic leaderboard (`sparseeval.method.synthetic.make_leaderboard`) as a source.

    All `n_models` models are generated with the same seed; `model_range` releases only
    rows [lo, hi) and `benchmarks` only some benchmarks, so that a later run can add new
    models of the same leaderboard. Each (benchmark, block of models) is one ingest unit,
    keyed by its parameters: the same release is never ingested twice.
    """

    n_models: int = DEFAULT_SYNTHETIC_MODELS
    items: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_SYNTHETIC_ITEMS))
    seed: int = 0
    model_range: tuple[int, int] | None = None
    benchmarks: tuple[str, ...] | None = None
    block_cells: int = 4_000_000

    @cached_property
    def leaderboard(self) -> dict[str, ResponseMatrix]:
        return make_leaderboard(self.n_models, self.items, seed=self.seed)

    def units(self, store) -> Iterator[Any]:
        from sparseeval.pipeline.store.unit import Unit

        lo, hi = self.model_range or (0, self.n_models)
        if not 0 <= lo < hi <= self.n_models:
            raise ValueError(f"model_range {lo}..{hi} outside 0..{self.n_models}")
        for bench, n_items in self.items.items():
            if self.benchmarks is not None and bench not in self.benchmarks:
                continue
            step = max(1, self.block_cells // max(n_items, 1))
            for a in range(lo, hi, step):
                b = min(hi, a + step)
                label = f"synthetic:{bench}[{a}:{b}] (seed {self.seed}, {self.n_models} models)"
                key = fingerprint("synthetic", "1", self.seed, self.n_models, self.items,
                                  bench, a, b)  # fmt: skip
                yield Unit("synthetic", label, key, [label], self._stager(bench, a, b))

    def _stager(self, bench: str, a: int, b: int) -> Callable[[Any], None]:
        def stage(con) -> None:
            from sparseeval.pipeline.store.unit import stage_frames

            stage_frames(con, self.frame(bench, a, b))

        return stage

    def frame(self, bench: str, a: int, b: int):
        """Long rows (model, benchmark, item, correct, ord, line) of models [a, b)."""
        import polars as pl

        m = self.leaderboard[bench]
        values = m.values[a:b]
        n_rows, n_items = values.shape
        models = pl.Series(np.asarray(m.model_ids[a:b], dtype=str))
        items = pl.Series(np.asarray(m.item_ids, dtype=str))
        ords = np.tile(np.arange(n_items, dtype=np.int64), n_rows)
        return pl.DataFrame(
            {
                "model": models.gather(np.repeat(np.arange(n_rows), n_items)),
                "benchmark": pl.Series([bench]).gather(np.zeros(values.size, dtype=np.int64)),
                "item": items.gather(ords),
                "correct": pl.Series(["0", "1"]).gather((values.reshape(-1) > 0).astype(np.int64)),
                "ord": ords,
                "line": np.arange(values.size, dtype=np.int64) + 1,
                "ref_no": np.zeros(values.size, dtype=np.int32),
            }
        )


def parse_source(spec: str, fmt: str = "auto", benchmark: str | None = None,
                 model: str | None = None, hub_max_repos: int = 200):  # fmt: skip
    """A store source from a spec string (see the module docstring).

    fmt: `auto` (by prefix, suffix and CSV header), `long`, `wide` or `lm-eval`;
    benchmark: the benchmark of a wide table; model: the model of an lm-eval folder;
    hub_max_repos: new Hub repos read per run.
    """
    from sparseeval.pipeline.store import (
        LmEvalRun,
        LongTable,
        OpenLLMLeaderboard,
        WideTable,
        default_hub_client,
    )

    spec = str(spec).strip()
    if spec.startswith(("lm-eval:", "inbox:")):
        return _watched(spec, model)
    if spec == "synthetic" or spec.startswith("synthetic:"):
        return _synthetic_from_spec(spec.partition(":")[2])
    if spec.startswith("hub:"):
        return OpenLLMLeaderboard.from_spec(spec[4:], default_hub_client(), max_repos=hub_max_repos)
    if spec.startswith("wide:"):
        benchmark, _, spec = spec[5:].partition("=")
        if not benchmark or not spec:
            raise ValueError("wide source must be wide:BENCHMARK=path.csv")
        fmt = "wide"
    path = Path(spec)
    fmt = _guess_format(path) if fmt == "auto" else fmt
    if fmt == "wide":
        if not benchmark:
            raise ValueError(f"{path} is a wide table (model + item columns); name its benchmark"
                             " (--benchmark NAME, or wide:NAME=file.csv)")  # fmt: skip
        return WideTable(path, benchmark)
    if fmt == "lm-eval":
        return LmEvalRun(path, model)
    if fmt == "long":
        return LongTable(path)
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


def _watched(spec: str, model: str | None):
    """`lm-eval:GLOB` or `inbox:DIR` (see the module docstring)."""
    from sparseeval.pipeline.store.readers import Inbox, LmEvalGlob

    kind, _, target = spec.partition(":")
    target = target.strip()
    if not target:
        example = "lm-eval:runs/*/*" if kind == "lm-eval" else "inbox:drop/"
        raise ValueError(f"{kind} source needs a {'glob' if kind == 'lm-eval' else 'folder'}"
                         f" after the colon (e.g. {example})")  # fmt: skip
    return LmEvalGlob(target, model) if kind == "lm-eval" else Inbox(Path(target))


def _guess_format(path: Path) -> str:
    """lm-eval for folders and results JSON, long for Parquet, wide or long by a CSV header."""
    if path.is_dir() or path.name.startswith("results_") or path.suffix == ".json":
        return "lm-eval"
    if path.suffix.lower() in {".parquet", ".pq"}:
        return "long"
    if path.suffix.lower() != ".csv":
        raise ValueError(
            f"cannot tell what source {str(path)!r} is (a .csv/.parquet long table,"
            " wide:B=file.csv, an lm-eval folder, hub:org/model or synthetic)"
        )
    if not path.is_file():
        return "long"  # the reader names the missing file
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
        header = {c.strip() for c in next(csv.reader(f), [])}
    return "wide" if "model" in header and not {"benchmark", "item"} & header else "long"


def _synthetic_from_spec(options: str) -> SyntheticLeaderboard:
    """`n_models=5100,seed=0,items=ollm,models=0-5000,benchmarks=arc+gsm8k` (all optional)."""
    kw: dict[str, Any] = {}
    for part in filter(None, options.split(",")):
        k, _, v = part.partition("=")
        try:
            if k in {"n_models", "seed"}:
                kw[k] = int(v)
            elif k == "items":
                kw[k] = {"ollm": OLLM_V1_ITEMS, "default": DEFAULT_SYNTHETIC_ITEMS}[v]
            elif k == "models":
                lo, _, hi = v.partition("-")
                kw["model_range"] = (int(lo), int(hi))
            elif k == "benchmarks":
                kw[k] = tuple(v.split("+"))
            else:
                raise ValueError(k)
        except (KeyError, ValueError):
            raise ValueError(
                f"synthetic source: bad option {part!r} (n_models=N, seed=N, items=ollm|default,"
                " models=LO-HI, benchmarks=a+b)"
            ) from None
    return SyntheticLeaderboard(**kw)


def ingest_sources(
    store_path: str | Path,
    sources: Sequence[Any],
    fill_if_empty: bool = True,
    hub_max_repos: int = 200,
) -> IngestSummary:
    """Ingest each source (a spec string or a source object) into the store.

    Returns the totals and one row per source (see `IngestSummary`). A source that fails
    as a whole (a bad spec, a missing folder) is a row with failed=1 and its message; the
    other sources still run. With no sources and a store that holds nothing but (part of)
    the built-in synthetic leaderboard, that leaderboard fills it: what an interrupted
    first fill left out is added, what is there is skipped.
    """
    from sparseeval.pipeline.store import Store

    items = list(sources)
    filled = False
    t0 = time.perf_counter()
    rows, reports = [], []
    with Store.open(store_path) as store:
        if not items and fill_if_empty and store.holds_only_synthetic():
            items, filled = [SyntheticLeaderboard()], True
        for item in items:
            row, done = _ingest_source(store, item, hub_max_repos)
            rows.append(row)
            reports.extend(done)
    filled = filled and any(r["new"] for r in rows)  # said only when it added results
    shown = [r for r in reports if r.status != "skipped"] + [
        r for r in reports if r.status == "skipped"
    ]
    return IngestSummary.from_sources(
        rows, [r.line() for r in shown[:50]], filled, round(time.perf_counter() - t0, 3)
    )


def _ingest_source(store, item: Any, hub_max_repos: int) -> tuple[dict[str, Any], list]:
    """(summary row, unit reports) of one source; its failure as a whole is a row."""
    from sparseeval.pipeline.store import StoreLockedError, ingest
    from sparseeval.pipeline.store.ingestion import IngestReport, source_label

    name = item if isinstance(item, str) else source_label(item)
    before = store.last_run_id()
    try:
        source = parse_source(item, hub_max_repos=hub_max_repos) if isinstance(item, str) else item
        reports = ingest(store, source, keep_going=True)
    except StoreLockedError:
        raise
    except Exception as exc:  # a bad spec, or a source that cannot even list its units
        log.warning("source %s failed: %s", name, exc)
        reports = [IngestReport(-1, "source", str(name), "failed", message=str(exc))]
    new = sum(r.n_new for r in reports)
    failures = [r for r in reports if r.status == "failed"]
    row = {
        "source": str(name),
        "units": sum(r.status != "failed" or r.kind != "source" for r in reports),
        "new_models": len(store.models_first_seen_after(run_id=before)) if new else 0,
        "new": new,
        "updated": sum(r.n_updated for r in reports),
        "skipped": sum(r.status == "skipped" for r in reports),
        "quarantined": sum(r.n_quarantined for r in reports),
        "failed": len(failures),
        "message": failures[0].message[:500] if failures else "",
    }
    return row, reports


__all__ = ["SyntheticLeaderboard", "ingest_sources", "parse_source"]
