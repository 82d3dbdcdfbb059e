"""Round trip with EleutherAI's lm-evaluation-harness (0.4.x): run only the anchors, read back.

Export: `export_samples(items, benchmark)` gives the JSON lm-eval's `run --samples`
accepts (a JSON string or a path to a JSON file): `{"task": [doc ids]}`, where
doc ids are indices into the task's evaluation split. lm-eval keeps those
original indices as `doc_id` in its output, so answers map straight back.

    sparseeval export-lm-eval --anchor-set published --benchmark arc --out anchors.json
    lm-eval run --model hf --model_args pretrained=ORG/MODEL --tasks arc_challenge \
        --samples anchors.json --log_samples --output_path results/
    sparseeval predict --anchor-set published --benchmark arc --responses results/

Read: lm-eval with `--log_samples` writes `samples_{task}_{timestamp}.jsonl` (one
file per task, under `{output_path}/{model name}/`), one JSON object per doc and
filter with `doc_id`, `filter`, `metrics` (the metric names) and each metric's
value (`acc`, `acc_norm`, `exact_match`, ...). `read_responses` turns those files
into {anchor item id: 0/1}.

How an anchor item id maps to (task, doc_id), first rule that applies:
1. an explicit map (the manifest's `item_sources`: {item: {"task", "doc_id"}});
2. `subject:index` where subject is one of MMLU's 57 subjects (optionally written
   `mmlu_subject` or `hendrycksTest-subject`) -> task `mmlu_{subject}`, doc `index`;
3. `task:doc_id` (the text after the last colon is an integer) -> that task and doc;
4. a bare integer `doc_id` -> the benchmark's default task (BENCHMARK_TASKS, e.g.
   arc -> arc_challenge, truthfulqa -> truthfulqa_mc1) or the `task` you pass.
Anything else is an error naming the item (pass `item_sources` when publishing).

The metric read per task (unless you pass `metric`): TASK_METRICS (ARC and
HellaSwag use `acc_norm` as the Open LLM Leaderboard did), else the first of
METRIC_ORDER the file has. With several filters (GSM8K: `strict-match` and
`flexible-extract`) `strict-match` is used unless you pass `filter`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

MMLU_SUBJECTS = frozenset(
    [
        "abstract_algebra",
        "anatomy",
        "astronomy",
        "business_ethics",
        "clinical_knowledge",
        "college_biology",
        "college_chemistry",
        "college_computer_science",
        "college_mathematics",
        "college_medicine",
        "college_physics",
        "computer_security",
        "conceptual_physics",
        "econometrics",
        "electrical_engineering",
        "elementary_mathematics",
        "formal_logic",
        "global_facts",
        "high_school_biology",
        "high_school_chemistry",
        "high_school_computer_science",
        "high_school_european_history",
        "high_school_geography",
        "high_school_government_and_politics",
        "high_school_macroeconomics",
        "high_school_mathematics",
        "high_school_microeconomics",
        "high_school_physics",
        "high_school_psychology",
        "high_school_statistics",
        "high_school_us_history",
        "high_school_world_history",
        "human_aging",
        "human_sexuality",
        "international_law",
        "jurisprudence",
        "logical_fallacies",
        "machine_learning",
        "management",
        "marketing",
        "medical_genetics",
        "miscellaneous",
        "moral_disputes",
        "moral_scenarios",
        "nutrition",
        "philosophy",
        "prehistory",
        "professional_accounting",
        "professional_law",
        "professional_medicine",
        "professional_psychology",
        "public_relations",
        "security_studies",
        "sociology",
        "us_foreign_policy",
        "virology",
        "world_religions",
    ]
)

BENCHMARK_TASKS = {
    "arc": "arc_challenge",
    "arc_challenge": "arc_challenge",
    "gsm8k": "gsm8k",
    "hellaswag": "hellaswag",
    "truthfulqa": "truthfulqa_mc1",
    "truthfulqa_mc": "truthfulqa_mc1",
    "truthfulqa_mc1": "truthfulqa_mc1",
    "winogrande": "winogrande",
}
TASK_METRICS = {
    "arc_challenge": "acc_norm",
    "hellaswag": "acc_norm",
    "gsm8k": "exact_match",
    "truthfulqa_mc1": "acc",
    "winogrande": "acc",
}
METRIC_ORDER = ("acc", "exact_match", "mc1", "acc_norm", "em")
PREFERRED_FILTERS = ("strict-match", "none")
SAMPLES_FILE = re.compile(
    r"^samples_(?P<task>.+)_(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$"
)


class LmEvalError(ValueError):
    """lm-eval files or anchor ids that cannot be mapped or read."""


# --------------------------------------------------------------------------- mapping


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
        t, d = (src["task"], src["doc_id"]) if isinstance(src, Mapping) else src
        return str(t), int(d)
    if ":" in item:
        prefix, _, doc = item.rpartition(":")
        if doc.strip().lstrip("-").isdigit():
            subject = _mmlu_subject(prefix)
            if subject is not None:
                return f"mmlu_{subject}", int(doc)
            return prefix, int(doc)
    if item.strip().isdigit():
        default = task or BENCHMARK_TASKS.get((benchmark or "").lower())
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


def _mmlu_subject(prefix: str) -> str | None:
    p = prefix.strip()
    for head in ("mmlu_", "hendrycksTest-", "hendrycksTest_", "mmlu:"):
        if p.startswith(head) and p[len(head) :] in MMLU_SUBJECTS:
            return p[len(head) :]
    return p if p in MMLU_SUBJECTS else None


def export_samples(
    items: Iterable[str],
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    task: str | None = None,
) -> dict[str, list[int]]:
    """{task: sorted doc ids} for `lm-eval run --samples` covering every anchor."""
    out: dict[str, set[int]] = {}
    errors = []
    for item in items:
        try:
            t, d = item_source(item, benchmark, item_sources, task)
        except LmEvalError as e:
            errors.append(str(e))
            continue
        if d < 0:
            errors.append(f"anchor {item!r} has a negative doc id")
            continue
        out.setdefault(t, set()).add(d)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise LmEvalError(errors[0] + more)
    return {t: sorted(ds) for t, ds in sorted(out.items())}


def merge_samples(*mappings: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """Union of several {task: doc ids} (one lm-eval run for several benchmarks)."""
    out: dict[str, set[int]] = {}
    for m in mappings:
        for t, ds in m.items():
            out.setdefault(t, set()).update(int(d) for d in ds)
    return {t: sorted(ds) for t, ds in sorted(out.items())}


def write_samples_json(mapping: Mapping[str, list[int]], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({t: list(ds) for t, ds in mapping.items()}, indent=1) + "\n")
    return path


# --------------------------------------------------------------------------- reading


def is_samples_file(path: str | Path) -> bool:
    """True for an lm-eval `samples_{task}_{timestamp}.jsonl` file (by name or content)."""
    p = Path(path)
    if SAMPLES_FILE.match(p.name):
        return True
    if p.suffix != ".jsonl" or not p.is_file():
        return False
    with open(p, encoding="utf-8") as f:
        first = f.readline()
    try:
        rec = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(rec, dict) and "doc_id" in rec and ("metrics" in rec or "filter" in rec)


def find_samples_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand folders to their samples_*.jsonl files; keep the newest file per task."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.rglob("samples_*.jsonl"))
        elif p.is_file():
            files.append(p)
        else:
            raise LmEvalError(f"{p}: no such file or folder")
    newest: dict[str, tuple[str, Path]] = {}
    loose: list[Path] = []
    for f in files:
        m = SAMPLES_FILE.match(f.name)
        if not m:
            loose.append(f)
            continue
        t, ts = m.group("task"), m.group("ts")
        if t not in newest or ts > newest[t][0]:
            newest[t] = (ts, f)
    found = [f for _, f in newest.values()] + loose
    if not found:
        raise LmEvalError(f"no lm-eval samples_*.jsonl files in {', '.join(map(str, paths))}")
    return found


def json_lines(path, error: type[Exception] = ValueError):
    """(line number, parsed value) of each non-blank line; a bad line raises `error` naming it."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as e:
                raise error(f"{path}:{n}: not valid JSON ({e.msg})") from None


def read_samples_file(
    path: str | Path,
    *,
    metric: str | None = None,
    filter: str | None = None,
    task: str | None = None,
) -> tuple[str, dict[int, int]]:
    """(task, {doc_id: 0/1}) from one lm-eval samples jsonl file."""
    path = Path(path)
    m = SAMPLES_FILE.match(path.name)
    task = task or (m.group("task") if m else None)
    if task is None:
        raise LmEvalError(
            f"{path}: cannot tell the task from the file name (expected "
            "samples_{task}_{timestamp}.jsonl); pass the task explicitly"
        )
    records: list[tuple[int, dict]] = []
    for n, rec in json_lines(path, LmEvalError):
        if not isinstance(rec, dict) or "doc_id" not in rec:
            raise LmEvalError(f"{path}:{n}: no doc_id (not an lm-eval samples file?)")
        records.append((n, rec))
    if not records:
        raise LmEvalError(f"{path}: empty samples file")
    filters = list(dict.fromkeys(r.get("filter", "none") for _, r in records))
    chosen = filter or next((f for f in PREFERRED_FILTERS if f in filters), filters[0])
    if chosen not in filters:
        raise LmEvalError(f"{path}: no filter {chosen!r} (have {', '.join(filters)})")
    out: dict[int, int] = {}
    name = metric
    for n, rec in records:
        if rec.get("filter", "none") != chosen:
            continue
        if name is None:
            name = _pick_metric(task, rec)
            if name is None:
                raise LmEvalError(
                    f"{path}:{n}: no binary metric among {rec.get('metrics') or sorted(rec)}; "
                    "pass --metric"
                )
        if name not in rec:
            raise LmEvalError(f"{path}:{n}: no metric {name!r} in this record")
        value = _binary(rec[name], f"{path}:{n}: {name}")
        doc = _doc_id(rec["doc_id"], f"{path}:{n}")
        if doc in out and out[doc] != value:
            raise LmEvalError(f"{path}:{n}: doc {doc} appears twice with different results")
        out[doc] = value
    return task, out


def read_responses(
    paths: Iterable[str | Path],
    *,
    items: Iterable[str] | None = None,
    benchmark: str | None = None,
    item_sources: Mapping | None = None,
    metric: str | None = None,
    filter: str | None = None,
    task: str | None = None,
) -> dict[str, int]:
    """{item id: 0/1} from lm-eval samples files (or folders holding them).

    With `items` (an anchor set's items) docs are mapped back to those ids and
    docs that are not anchors are ignored; without, ids are `task:doc_id`.
    """
    inverse = None
    if items is not None:
        inverse = {item_source(i, benchmark, item_sources, task): i for i in items}
    out: dict[str, int] = {}
    for f in find_samples_files(paths):
        named = SAMPLES_FILE.match(f.name) is not None
        t, docs = read_samples_file(f, metric=metric, filter=filter, task=None if named else task)
        for doc, value in docs.items():
            if inverse is None:
                out[f"{t}:{doc}"] = value
            elif (t, doc) in inverse:
                out[inverse[(t, doc)]] = value
    return out


def _pick_metric(task: str, rec: dict) -> str | None:
    preferred = TASK_METRICS.get(task) or ("acc" if task.startswith("mmlu") else None)
    listed = rec.get("metrics") or [k for k in rec if k in METRIC_ORDER]
    if preferred and preferred in rec:
        return preferred
    for name in METRIC_ORDER:
        if name in listed and name in rec:
            return name
    return None


def _binary(v, where: str) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int | float) and float(v) in (0.0, 1.0):
        return int(v)
    raise LmEvalError(f"{where} is {v!r}, not a 0/1 result")


def _doc_id(v, where: str) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        raise LmEvalError(f"{where}: doc_id {v!r} is not an integer") from None


__all__ = [
    "BENCHMARK_TASKS",
    "MMLU_SUBJECTS",
    "LmEvalError",
    "export_samples",
    "find_samples_files",
    "is_samples_file",
    "item_source",
    "merge_samples",
    "read_responses",
    "read_samples_file",
    "write_samples_json",
]
