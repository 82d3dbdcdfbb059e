"""HELM raw runs as a store source: a release folder (`benchmark_output/runs/{release}/`) or
one run folder, read again every night.

The layout followed (stanford-crfm/helm's `helm-run` output; the shape of the run folders in
github.com/evaleval/every_eval_ever `tests/data/helm/`): a run folder `{run_spec}/` holds
`run_spec.json` (`name` `mmlu:subject=philosophy,method=...,model=...`,
`scenario_spec.args`, `adapter_spec.model`, `groups`), `per_instance_stats.json` (a list of
{`instance_id`, `train_trial_index`, optional `perturbation`, `stats`: [{`name`: {`name`,
`split`}, `mean`, ...}]}) and `instances.json` or `scenario_state.json` (each instance's
`input.text` and `references`).

One run folder is one unit. The model is `adapter_spec.model`, the benchmark the run's
first group (`groups`: `hellaswag` for a `commonsense:dataset=hellaswag,...` run; else the
scenario name before the colon), the item `{scenario args' values}:{instance_id}`
(`philosophy:id147`, as lm-eval's `subject:index`: HELM numbers instances per scenario, so
the args keep two subjects' `id1` apart),
its content hash `helm_instance:{sha256}` of the input text and references. Read: the
unperturbed instances of the first trial (`train_trial_index` 0), scored by the first
binary metric of `BINARY_METRICS` the run has (the list EEE's HELM converter treats as
correctness); perturbed and other-trial entries are counted, not read. A fractional mean
(`exact_match@5`) is stored as a graded score (`sql/validate.sql`). A run folder without
`per_instance_stats.json` yet, or changed within the settle time, is pending.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl

from sparseeval.consume.answers.identity import OPAQUE
from sparseeval.consume.answers.inspect_answers import score_value
from sparseeval.consume.answers.jsontext import JsonTextError, loads
from sparseeval.consume.hashing import file_sha256, fingerprint
from sparseeval.pipeline.store.db import Store
from sparseeval.pipeline.store.item_identity import HASHED_SCHEMA, ITEM_HASH_FRAME, stage_hashes
from sparseeval.pipeline.store.unit import (
    BAD_SCHEMA,
    SourceError,
    SpecOptions,
    Unit,
    conform,
    existing,
    no_stage,
    stage_frames,
)
from sparseeval.pipeline.store.watched import (
    settle_time,
    settled_units,
    spec_target,
)

KIND = "helm"
CONTENT_HASH = "helm_instance"
BINARY_METRICS = ("exact_match", "quasi_exact_match", "prefix_exact_match",
                  "quasi_prefix_exact_match", "ifeval_strict_accuracy", "math_equiv",
                  "math_equiv_chain_of_thought", "chain_of_thought_correctness")  # fmt: skip
_STATS, _SPEC = "per_instance_stats.json", "run_spec.json"
_CONTENT = ("instances.json", "scenario_state.json")


@dataclass
class HelmRuns:
    """HELM run folders: a release folder (each `*/run_spec.json` below it) or one run."""

    path: Path
    benchmark: str | None = None
    settle_seconds: float | None = None

    @classmethod
    def from_spec(cls, body: str, options: SpecOptions) -> HelmRuns:
        """`PATH` (the spec `helm:PATH`); every run's benchmark from the options if given."""
        path = spec_target(KIND, body, "a release or run folder", "helm:benchmark_output/runs/v1")
        return cls(Path(path), options.benchmark)

    def units(self, store: Store) -> Iterator[Unit]:
        root = existing(self.path)
        runs = [root] if (root / _SPEC).is_file() else sorted(p.parent for p in root.rglob(_SPEC))
        if not runs:
            raise SourceError(f"{root}: no HELM run folder (with {_SPEC}) in it")
        settle, now = settle_time(self.settle_seconds), time.time()
        for run in runs:
            files = [p for p in run.iterdir() if p.is_file()]
            missing = None if (run / _STATS).is_file() else f"no {_STATS} yet"
            unit = partial(_run_unit, run, self.benchmark)
            yield from settled_units(KIND, run, files, unit, settle, now, missing)


def _run_unit(run: Path, benchmark: str | None) -> Unit:
    spec = _json(run / _SPEC)
    adapter = spec.get("adapter_spec") if isinstance(spec, dict) else None
    model = adapter.get("model") if isinstance(adapter, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    if not isinstance(model, str) or not isinstance(name, str):
        raise SourceError(f"{run / _SPEC}: not a HELM run spec (no name or adapter_spec.model)")
    args = (spec.get("scenario_spec") or {}).get("args") or {}
    prefix = ",".join(str(v) for _, v in sorted(args.items()))
    groups = spec.get("groups")
    group = (
        groups[0] if isinstance(groups, list) and groups and isinstance(groups[0], str) else None
    )
    bench = benchmark or group or name.split(":", 1)[0]
    content = next((run / n for n in _CONTENT if (run / n).is_file()), None)
    files = [run / _SPEC, run / _STATS, *([content] if content else [])]
    key = fingerprint(KIND, bench, *(f"{p.name}:{file_sha256(p)}" for p in files))
    unit = Unit(KIND, str(run), key, [str(run / _STATS)], no_stage, frames=(ITEM_HASH_FRAME,),
                id_kind=OPAQUE)  # fmt: skip
    unit.stage = partial(_stage, run, model, bench, prefix, content, unit)
    return unit


def _stage(
    run: Path, model: str, benchmark: str, prefix: str, content: Path | None, unit: Unit,
    con: duckdb.DuckDBPyConnection,
) -> None:  # fmt: skip
    entries = _json(run / _STATS)
    if not isinstance(entries, list):
        raise SourceError(f"{run / _STATS}: not a list of per-instance stats")
    metric = _metric(entries)
    rows, bad, skipped = _rows(entries, metric, prefix, _instance_hashes(content))
    good = conform(
        pl.DataFrame(rows, schema=["item", "correct", "line", "hash"], orient="row")
        .with_columns(model=pl.lit(model), benchmark=pl.lit(benchmark), ref_no=pl.lit(0)),
        HASHED_SCHEMA,
    )  # fmt: skip
    rejected = pl.DataFrame(bad, schema=["line", "raw", "reason"], orient="row")
    unit.read_with.clear()
    unit.read_with[benchmark] = f"{metric or 'no binary metric'} (unperturbed, first trial" + (
        f"; {skipped:,} perturbed or later-trial entries not read)" if skipped else ")"
    )
    stage_hashes(con, good)
    stage_frames(con, good, conform(rejected.with_columns(ref_no=pl.lit(0)), BAD_SCHEMA))


def _rows(
    entries: list, metric: str | None, prefix: str, hashes: dict[str, str]
) -> tuple[list[tuple], list[tuple], int]:
    """(item, correct, line, hash) rows, (line, raw, reason) rejects, entries not read."""
    rows, bad, skipped = [], [], 0
    for n, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or "instance_id" not in entry:
            bad.append((n, str(entry)[:2000], "not a per-instance stats entry (no instance_id)"))
        elif entry.get("perturbation") or entry.get("train_trial_index", 0) != 0:
            skipped += 1
        else:
            iid = str(entry["instance_id"])
            correct, problem = _score(entry, metric)
            if problem is not None:
                bad.append((n, json.dumps({"instance_id": iid}), problem))
                continue
            digest = f"{CONTENT_HASH}:{hashes[iid]}" if iid in hashes else None
            rows.append((f"{prefix}:{iid}" if prefix else iid, correct, n, digest))
    return rows, bad, skipped


def _metric(entries: list) -> str | None:
    """The first of `BINARY_METRICS` any entry has a stat of."""
    names = {
        s["name"].get("name") for e in entries if isinstance(e, dict)
        for s in e.get("stats") or [] if isinstance(s, dict) and isinstance(s.get("name"), dict)
    }  # fmt: skip
    return next((m for m in BINARY_METRICS if m in names), None)


def _score(entry: dict, metric: str | None) -> tuple[str | None, str | None]:
    if metric is None:
        return None, f"no binary metric ({', '.join(BINARY_METRICS[:2])}, ...) in the run"
    for s in entry.get("stats") or []:
        name = s.get("name") if isinstance(s, dict) else None
        if isinstance(name, dict) and name.get("name") == metric and not name.get("perturbation"):
            if not s.get("count"):
                return None, f"{metric}: no value (count 0)"
            return score_value(s.get("mean"))
    return None, f"no {metric} stat for this instance"


def _instance_hashes(path: Path | None) -> dict[str, str]:
    """{instance id: sha256 of its input text and references} of the unperturbed instances."""
    data = _json(path) if path is not None else []
    if isinstance(data, dict):  # scenario_state.json
        data = [s.get("instance") for s in data.get("request_states") or [] if isinstance(s, dict)]
    out: dict[str, str] = {}
    for inst in data if isinstance(data, list) else []:
        if not isinstance(inst, dict) or inst.get("perturbation") or "id" not in inst:
            continue
        refs = [[(r.get("output") or {}).get("text"), r.get("tags")]
                for r in inst.get("references") or [] if isinstance(r, dict)]  # fmt: skip
        text = json.dumps({"input": (inst.get("input") or {}).get("text"), "references": refs},
                          sort_keys=True, ensure_ascii=False, separators=(",", ":"))  # fmt: skip
        out.setdefault(str(inst["id"]), hashlib.sha256(text.encode()).hexdigest())
    return out


def _json(path: Path) -> object:
    try:
        return loads(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise SourceError(f"{path}: cannot read it ({exc.strerror})") from None
    except (UnicodeDecodeError, JsonTextError) as exc:
        raise SourceError(f"{path}: not JSON ({exc})") from None


__all__ = [
    "BINARY_METRICS",
    "CONTENT_HASH",
    "KIND",
    "HelmRuns",
]
