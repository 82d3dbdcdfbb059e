"""HELM raw runs: reading one run folder, for the store and as a model's answers (`predict`).

The layout followed (stanford-crfm/helm's `helm-run` output; the shape of the run folders in
github.com/evaleval/every_eval_ever `tests/data/helm/`): a run folder `{run_spec}/` holds
`run_spec.json` (`name` `mmlu:subject=philosophy,method=...,model=...`,
`scenario_spec.args`, `adapter_spec.model`, `groups`), `per_instance_stats.json` (a list of
{`instance_id`, `train_trial_index`, optional `perturbation`, `stats`: [{`name`: {`name`,
`split`}, `mean`, ...}]}) and `instances.json` or `scenario_state.json` (each instance's
`input.text` and `references`).

The model is `adapter_spec.model`, the benchmark the run's first group (`groups`:
`hellaswag` for a `commonsense:dataset=hellaswag,...` run; else the scenario name before the
colon), the item `{scenario args' values}:{instance_id}` (`philosophy:id147`, as lm-eval's
`subject:index`: HELM numbers instances per scenario, so the args keep two subjects' `id1`
apart), its content hash `helm_instance:{sha256}` of the input text and references. Read:
the unperturbed instances of the first trial (`train_trial_index` 0), scored by the first
binary metric of `BINARY_METRICS` the run has (the list EEE's HELM converter treats as
correctness); perturbed and other-trial entries are counted, not read. A fractional mean
(`exact_match@5`) is a graded score.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sparseeval.consume.answers.inspect_answers import score_value
from sparseeval.consume.answers.jsontext import JsonTextError, loads
from sparseeval.consume.errors import SparseEvalError

CONTENT_HASH = "helm_instance"  # the hash's name in `name:value` (consume.answers.identity)
BINARY_METRICS = ("exact_match", "quasi_exact_match", "prefix_exact_match",
                  "quasi_prefix_exact_match", "ifeval_strict_accuracy", "math_equiv",
                  "math_equiv_chain_of_thought", "chain_of_thought_correctness")  # fmt: skip
SPEC, STATS = "run_spec.json", "per_instance_stats.json"
CONTENT = ("instances.json", "scenario_state.json")


class HelmError(SparseEvalError, ValueError):
    """A HELM run folder that cannot be read; the message names the file."""


@dataclass(frozen=True)
class RunSpec:
    """What a run folder's `run_spec.json` says: its model, benchmark and item-id prefix."""

    path: Path
    model: str
    benchmark: str
    prefix: str  # the scenario args' values, before each instance id

    def item(self, instance_id: str) -> str:
        return f"{self.prefix}:{instance_id}" if self.prefix else instance_id

    @property
    def content(self) -> Path | None:
        """The run's instances file (`instances.json` or `scenario_state.json`), if any."""
        return next((self.path / n for n in CONTENT if (self.path / n).is_file()), None)


@dataclass(frozen=True)
class RunRows:
    """A run's read entries: (item, correct, entry number, hash) rows, (entry number, raw,
    reason) rejects, how many entries were not read (perturbed, later trials), the metric."""

    metric: str | None
    rows: list[tuple[str, str, int, str | None]]
    bad: list[tuple[int, str, str]]
    skipped: int


def read_spec(run: Path, benchmark: str | None = None) -> RunSpec:
    """The run's `run_spec.json`; `benchmark` given: every item is of that benchmark."""
    spec = _json(run / SPEC)
    adapter = spec.get("adapter_spec") if isinstance(spec, dict) else None
    model = adapter.get("model") if isinstance(adapter, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    if not isinstance(model, str) or not isinstance(name, str):
        raise HelmError(f"{run / SPEC}: not a HELM run spec (no name or adapter_spec.model)")
    args = (spec.get("scenario_spec") or {}).get("args") or {}
    prefix = ",".join(str(v) for _, v in sorted(args.items()))
    groups = spec.get("groups")
    first = groups[0] if isinstance(groups, list) and groups else None
    group = first if isinstance(first, str) else None
    return RunSpec(run, model, benchmark or group or name.split(":", 1)[0], prefix)


def read_rows(spec: RunSpec) -> RunRows:
    """The run's unperturbed first-trial entries, each scored by the run's binary metric."""
    entries = _json(spec.path / STATS)
    if not isinstance(entries, list):
        raise HelmError(f"{spec.path / STATS}: not a list of per-instance stats")
    metric, hashes = _metric(entries), _instance_hashes(spec.content)
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
            rows.append((spec.item(iid), correct, n, digest))
    return RunRows(metric, rows, bad, skipped)


def run_folders(path: Path) -> list[Path]:
    """The run folders at `path`: itself when it is one, else each `*/run_spec.json` below."""
    if (path / SPEC).is_file():
        return [path]
    return sorted(p.parent for p in path.rglob(SPEC))


def is_helm_run(path: str | Path) -> bool:
    """Whether `path` is a HELM run folder, or a folder of them (a suite's `runs/{release}/`)."""
    path = Path(path)
    return path.is_dir() and bool(run_folders(path))


def helm_answers(
    path: str | Path, anchor_set: object, ignore_hashes: bool = False
) -> Iterator[tuple[str, object, str]]:
    """(item, answer, where) of one model's HELM runs at `path` (a run folder, or a folder of
    one model's run folders), for `predict`: another model's runs beside them are refused,
    as is an instance whose content hash is not the set's (other questions under its id)."""
    from sparseeval.consume.answers.identity import split_hash

    path = Path(path)
    specs = [read_spec(run) for run in run_folders(path)]
    if len(models := sorted({s.model for s in specs})) > 1:
        more = ", ..." if len(models) > 3 else ""
        raise HelmError(f"{path}: runs of {len(models)} models ({', '.join(models[:3])}{more}):"
                        " pass the run folders of one model")  # fmt: skip
    sources = getattr(anchor_set, "item_sources", None) or {}
    bad = []
    for spec in specs:
        if not (spec.path / STATS).is_file():
            raise HelmError(f"{spec.path}: no {STATS} yet (the run has not finished)")
        for item, correct, n, digest in read_rows(spec).rows:
            src = sources.get(item)
            stored = split_hash(src.get("hash")) if isinstance(src, dict) else None
            other = bool(digest and stored and stored[0] == CONTENT_HASH)
            if other and ":".join(stored) != digest and not ignore_hashes:
                bad.append(item)
            else:
                yield item, correct, f"{spec.path / STATS} entry {n}"
    if bad:
        raise HelmError(
            f"{path}: {len(bad)} answered item(s) have other content than the set's"
            f" ({', '.join(bad[:5])}): other questions under the same ids;"
            " --ignore-hash-mismatch to score them anyway"
        )


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
        raise HelmError(f"{path}: cannot read it ({exc.strerror})") from None
    except (UnicodeDecodeError, JsonTextError) as exc:
        raise HelmError(f"{path}: not JSON ({exc})") from None


__all__ = [
    "BINARY_METRICS",
    "CONTENT",
    "CONTENT_HASH",
    "SPEC",
    "STATS",
    "HelmError",
    "RunRows",
    "RunSpec",
    "helm_answers",
    "is_helm_run",
    "read_rows",
    "read_spec",
    "run_folders",
]
