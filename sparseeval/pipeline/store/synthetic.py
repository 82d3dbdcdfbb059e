"""The built-in synthetic leaderboard as a store source (it fills an empty store)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from sparseeval.consume.hashing import fingerprint
from sparseeval.method.matrix import ResponseMatrix
from sparseeval.method.synthetic import OLLM_V1_ITEMS, make_leaderboard
from sparseeval.pipeline.store.unit import SourceError, SpecOptions, Unit, stage_frames

# The built-in source that fills an empty store: six benchmarks, quick on a laptop.
DEFAULT_SYNTHETIC_ITEMS = {
    "arc": 600, "gsm8k": 500, "hellaswag": 1000, "mmlu": 1000, "truthfulqa": 400,
    "winogrande": 600,
}  # fmt: skip
DEFAULT_SYNTHETIC_MODELS = 1000


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

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> SyntheticLeaderboard:
        """`n_models=5100,seed=0,items=ollm,models=0-5000,benchmarks=arc+gsm8k` (all optional;
        the spec `synthetic:...`, or `synthetic` alone)."""
        return cls(**_options(body))

    def units(self, store) -> Iterator[Unit]:
        lo, hi = self.model_range or (0, self.n_models)
        if not 0 <= lo < hi <= self.n_models:
            raise SourceError(f"model_range {lo}..{hi} outside 0..{self.n_models}")
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
            stage_frames(con, self.frame(bench, a, b))

        return stage

    def frame(self, bench: str, a: int, b: int):
        """Long rows (model, benchmark, item, correct, ord, line) of models [a, b)."""
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


def _options(options: str) -> dict[str, Any]:
    """SyntheticLeaderboard's keyword arguments from a spec's options."""
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
            raise SourceError(
                f"synthetic source: bad option {part!r} (n_models=N, seed=N, items=ollm|default,"
                " models=LO-HI, benchmarks=a+b)"
            ) from None
    return kw


__all__ = [
    "DEFAULT_SYNTHETIC_ITEMS",
    "DEFAULT_SYNTHETIC_MODELS",
    "SyntheticLeaderboard",
]
