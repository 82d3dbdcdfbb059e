"""`sparseeval export-lm-eval`: the anchors as lm-eval `--samples` JSON (--out) and/or
lm-eval tasks that report the estimate (--tasks-dir). NumPy only (the light install)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from sparseeval.cli.anchor_args import (
    FMT,
    add_anchor_set_args,
    add_next_options,
    anchor_set_root,
    chosen_items,
    guarded_command,
    trust_args,
)
from sparseeval.cli.common import UserError, quoted, write_folders_atomic, write_text_atomic


def add_export_command(subparsers) -> None:
    """Register `export-lm-eval` on an argparse subparsers object."""
    e = subparsers.add_parser(
        "export-lm-eval",
        help="run only the anchors in lm-eval: --samples JSON, or tasks reporting the estimate",
        description="Write {task: [doc ids]} for lm-evaluation-harness's --samples option, so "
        "a model is evaluated on the anchor items only (--out), and/or one lm-eval task per "
        "benchmark, sparseeval_{benchmark}, that runs the anchors and reports the SparseEval "
        "estimate and its interval in lm-eval's own results table (--tasks-dir).",
        formatter_class=FMT,
        epilog=textwrap.dedent(
            """\
            --tasks-dir writes DIR/sparseeval_{benchmark}/ (a task YAML and utils.py): the
            original task (same dataset and prompt) on the anchors only, with metrics
            sparseeval (estimated full-benchmark accuracy), sparseeval_low/_high (its
            interval) and the benchmark's own metric over the anchors. Running it needs
            lm-eval and sparseeval in the same environment. Supported: ARC, HellaSwag,
            TruthfulQA MC1, MMLU (its 57 subjects in one task), GSM8K, Winogrande and the
            leaderboard v2's BBH, MuSR and MMLU-Pro; for others use --out. --benchmark suite
            writes the group sparseeval_suite: every benchmark's estimate and the suite
            average with their intervals (lm_eval --tasks sparseeval_suite).

            examples:
              sparseeval export-lm-eval --anchor-set .sparseeval/published \\
                  --benchmark arc gsm8k --out anchors.json
              lm-eval run --model hf --model_args pretrained=ORG/MODEL \\
                  --tasks arc_challenge gsm8k --samples anchors.json \\
                  --log_samples --output_path results/
              sparseeval predict --anchor-set .sparseeval/published --benchmark arc \\
                  --responses results/

              sparseeval export-lm-eval --anchor-set .sparseeval/published \\
                  --benchmark arc hellaswag --tasks-dir sparseeval_tasks/
              lm-eval run --model hf --model_args pretrained=ORG/MODEL \\
                  --tasks sparseeval_arc sparseeval_hellaswag \\
                  --include_path sparseeval_tasks/ --output_path results/
            """
        ),
    )
    add_anchor_set_args(e, many=True)
    e.add_argument("--out", metavar="FILE", help="--samples JSON file to write")
    e.add_argument("--tasks-dir", metavar="DIR", help="folder to write lm-eval tasks into")
    e.add_argument(
        "--dataset",
        nargs="+",
        metavar="[SPLIT=]FILE",
        help="with --tasks-dir: local JSON/JSONL copies of the original task's splits (same "
        "fields and order) instead of its Hub dataset; a bare FILE is the evaluation split "
        "(e.g. test=arc_test.jsonl train=arc_train.jsonl); TASK:SPLIT=FILE names one lm-eval "
        "task's split (mmlu_anatomy:test=FILE; several benchmarks, MMLU, the suite)",
    )
    e.add_argument("--task", help="lm-eval task for bare integer item ids")
    add_next_options(e)
    e.add_argument(
        "--id-map",
        metavar="FILE.csv",
        help="map the set's opaque item ids to lm-eval docs (CSV columns item,doc_id[,task];"
        " the suite's: benchmark,item,doc_id[,task])",
    )
    e.set_defaults(func=guarded_command(cmd_export_lm_eval))


def cmd_export_lm_eval(args) -> int:
    from sparseeval.consume.lm_eval.harness import export_samples, merge_samples

    if not (args.out or args.tasks_dir):
        raise UserError("say what to write: --out FILE (--samples JSON) and/or --tasks-dir DIR")
    if args.dataset and not args.tasks_dir:
        raise UserError("--dataset goes with --tasks-dir")
    root = anchor_set_root(args)
    sets = [exportable(_export_set(root, b, args), args.id_map, args.task) for b in args.benchmark]
    if args.tasks_dir:
        _write_tasks(args, root, sets)
    if not args.out:
        _note_unknown_ids(sets)
        return 0
    if args.next is not None:
        mapping = _next_samples(sets, args)
    else:
        members = [m for a in sets for m in _members(a)]
        parts = [export_samples(a.items, a.benchmark, a.item_sources, args.task) for a in members]
        mapping = merge_samples(*parts)
    out = write_text_atomic(args.out, json.dumps(mapping, indent=1) + "\n")  # no half file
    n = sum(len(v) for v in mapping.values())
    tasks = " ".join(map(quoted, mapping))
    print(f"wrote {n} doc ids for {len(mapping)} task(s) to {out}")
    print(
        f"next: lm-eval run --model hf --model_args pretrained=ORG/MODEL --tasks {tasks} "
        f"--samples {quoted(out)} --log_samples --output_path results/",
        file=sys.stderr,
    )
    _note_unknown_ids(sets)
    return 0


def _next_samples(sets: list, args) -> dict:
    """The --samples mapping of the next items of one benchmark (`--next N --responses`)."""
    from sparseeval.consume.answers import identity as ids
    from sparseeval.consume.lm_eval.harness import export_samples

    if len(sets) != 1 or hasattr(sets[0], "own"):
        raise UserError("--next exports one benchmark's items (not the suite, not several)")
    aset = sets[0]
    items = chosen_items(aset, args)
    ids.check_exportable(aset.benchmark, items, aset.all_item_sources)
    return export_samples(items, aset.benchmark, aset.all_item_sources, args.task)


def _members(aset) -> list:
    """A benchmark's set, or each member benchmark's own set of the suite."""
    return list(aset.own.values()) if hasattr(aset, "own") else [aset]


def exportable(aset, id_map: str | None, task: str | None, members: tuple[str, ...] = ()):
    """The set (or suite) with `--id-map` applied; refused (one line) while any id is opaque.

    A suite's map names each row's member (column `benchmark`, or suite id `B/ITEM`); a
    row without a task gets the member's own task (`identity.read_id_map`).
    """
    from dataclasses import replace

    from sparseeval.consume.answers import identity as ids
    from sparseeval.consume.lm_eval.taskmap import default_task

    if hasattr(aset, "own"):
        names = tuple(aset.own)
        own = {b: exportable(m, id_map, task, names) for b, m in aset.own.items()}
        return replace(aset, own=own)
    default = task or default_task(aset.benchmark)
    mapping = ids.read_id_map(id_map, default, aset.benchmark, members) if id_map else None
    sources = (
        ids.with_id_map(aset.items, aset.item_sources, mapping) if mapping else aset.item_sources
    )
    ids.check_exportable(aset.benchmark, aset.items, sources)
    return (
        replace(aset, manifest=aset.manifest.to_dict() | {"item_sources": sources})
        if mapping
        else aset
    )


def _note_unknown_ids(sets: list) -> None:
    """A note for each set published before item identity was recorded."""
    from sparseeval.consume.answers import identity as ids

    for a in (m for s in sets for m in _members(s)):
        if ids.UNKNOWN in ids.id_kinds(a.items, a.item_sources).values():
            print(f"note: {a.benchmark} v{a.version}: {ids.UNKNOWN_NOTE}", file=sys.stderr)


def _export_set(root, benchmark: str, args):
    """The anchor set to export: a benchmark's, or the suite (`--benchmark suite`)."""
    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.consume.sets.suite_set import SUITE, load_suite

    if benchmark == SUITE:
        return load_suite(root, args.version, public_key=args.public_key)
    return load_anchor_set(root, benchmark, args.version, **trust_args(args))


def _write_tasks(args, root, sets) -> None:
    from sparseeval.consume.lm_eval.task import (
        plan_task,
        short_shot_splits,
        task_name,
        write_suite,
        write_task,
    )

    several = len(sets) != 1 or hasattr(sets[0], "own")
    if several and any("=" not in d for d in args.dataset or ()):
        raise UserError("a bare --dataset FILE goes with a single --benchmark; name files of "
                        "several benchmarks TASK:SPLIT=FILE")  # fmt: skip
    plans = [plan_task(m) for a in sets for m in _members(a)]
    dataset = None  # every set was checked (plan_task) before any is written
    if args.dataset:
        dataset = dict(d.split("=", 1) if "=" in d else (plans[0].default_split(), d)
                       for d in args.dataset)  # fmt: skip
    names: list[str] = []
    said: list[str] = []

    def write_all(staging: Path) -> None:  # then moved into --tasks-dir: no half task on disk
        for aset in sets:
            suite = hasattr(aset, "own")
            write = write_suite if suite else write_task
            folder = write(staging, aset, root, dataset=dataset)
            names.append(folder.name)
            where = Path(args.tasks_dir) / folder.relative_to(staging)
            what = (f"group {folder.name} ({len(aset.benchmarks)} benchmarks: "
                    f"{' '.join(task_name('suite_' + b) for b in aset.benchmarks)}, "
                    f"suite v{aset.version})" if suite else
                    f"task {folder.name} ({len(aset.items)} anchors, "
                    f"{aset.benchmark} v{aset.version})")  # fmt: skip
            said.append(f"wrote lm-eval {what} to {where}")

    write_folders_atomic(args.tasks_dir, write_all)
    print("\n".join(said))
    print(
        f"next: lm-eval run --model hf --model_args pretrained=ORG/MODEL --tasks "
        f"{' '.join(map(quoted, names))} --include_path {quoted(args.tasks_dir)}"
        " --output_path results/",
        file=sys.stderr,
    )
    for line in (n for plan in plans for n in short_shot_splits(plan, dataset)):
        print(f"note: {line}", file=sys.stderr)
    if not args.dataset:
        hub = ", ".join(sorted({p.spec.dataset_path for p in plans}))
        print(f"note: lm-eval downloads {hub} from the Hub when it runs; offline, write the "
              "tasks with local copies: --dataset [SPLIT=]FILE", file=sys.stderr)  # fmt: skip


__all__ = [
    "add_export_command",
    "cmd_export_lm_eval",
    "exportable",
]
