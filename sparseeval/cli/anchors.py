"""`sparseeval anchors`: the anchor items a model must answer, and a blank answers file.

Light install (NumPy only): the set loads through
`sparseeval.consume.sets.anchorset.load_anchor_set`.
Errors print one line on stderr and return 2.
"""

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
from sparseeval.cli.common import UserError, quoted, write_text_atomic


def add_anchors_command(subparsers) -> None:
    """Register `anchors` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "anchors",
        help="list the anchor items to answer (with lm-eval task and doc id)",
        description="List the anchor items of a published set: the items a model must answer "
        "so that `sparseeval predict` can estimate its full-benchmark accuracy.",
        formatter_class=FMT,
        epilog=textwrap.dedent(
            """\
            output: one anchor per line, tab-separated: item id, lm-eval task, doc id (the
            index in the task's evaluation split). Task and doc id come from the set's
            item_sources, or from the item id rules of sparseeval.consume.lm_eval.harness ("17",
            "task:17", "subject:17"); ids that map to neither (the synthetic demo's) are
            printed alone. Published sets do not store question text: look a doc up in
            the lm-eval task's dataset. A summary line goes to stderr.

            examples:
              sparseeval anchors --benchmark arc
              sparseeval anchors --anchor-set .sparseeval/published --benchmark gsm8k \\
                  --template answers.csv
              # fill the correct column with 0/1, then:
              sparseeval predict --anchor-set .sparseeval/published --benchmark gsm8k \\
                  --responses answers.csv
              sparseeval anchors --anchor-set ORG/anchor-sets --benchmark mmlu --version 3 --json
            """
        ),
    )
    add_anchor_set_args(p)
    p.add_argument("--json", action="store_true", help="print a JSON object for machines")
    p.add_argument(
        "--template",
        metavar="FILE",
        help="also write a blank answers CSV (item,correct; one row per anchor) to fill",
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing --template file")
    add_next_options(p)
    p.set_defaults(func=guarded_command(cmd_anchors))


def anchor_rows(aset, items: list[str] | None = None, members: dict | None = None) -> list[dict]:
    """One dict per anchor (or per one of `items`), in order: item, task and doc_id when known.
    `members`: a suite's own sets {benchmark: set}; a suite id `B/ITEM` is B's item ITEM."""
    from sparseeval.consume.lm_eval.harness import LmEvalError, item_source

    rows = []
    for item in aset.items if items is None else items:
        head, sep, rest = item.partition("/")
        owner, own = (members[head], rest) if sep and head in (members or {}) else (aset, item)
        sources = owner.all_item_sources if items is not None else owner.item_sources
        try:
            task, doc = item_source(own, owner.benchmark, sources)
        except LmEvalError:
            rows.append({"item": item, "task": None, "doc_id": None})
        else:
            rows.append({"item": item, "task": task, "doc_id": doc})
    return rows


def cmd_anchors(args) -> int:
    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.consume.sets.suite_set import SUITE, load_suite

    root = anchor_set_root(args)
    template = Path(args.template) if args.template else None
    if template is not None and template.exists() and not args.force:
        raise UserError(f"{template} exists (pass --force to overwrite it)")
    aset = load_anchor_set(root, args.benchmark, args.version, **trust_args(args))  # the key too
    members = load_suite(root, aset.version).own if aset.benchmark == SUITE else None
    rows = anchor_rows(aset, None if args.next is None else chosen_items(aset, args), members)
    if template is not None:  # LF on every OS; a full disk leaves no half file
        write_text_atomic(template, "item,correct\n" + "".join(f"{r['item']},\n" for r in rows))
    if args.json:
        out = {
            "benchmark": aset.benchmark, "version": aset.version, "source": aset.source,
            "n_anchors": len(aset.items), "anchors": rows if args.next is None else None,
            "next": rows if args.next is not None else None,
            "template": str(template) if template else None,
        }  # fmt: skip
        print(json.dumps(out, indent=2))
        return 0
    for r in rows:
        print("\t".join(str(v) for v in (r["item"], r["task"], r["doc_id"]) if v is not None))
    tasks = sorted({r["task"] for r in rows if r["task"]})
    named = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    where = (
        f"lm-eval {'task' if len(tasks) == 1 else 'tasks'} {named}"
        if tasks
        else _no_doc_ids(aset, root)
    )
    what = "anchors" if args.next is None else f"more items ({args.strategy}, not anchors)"
    print(f"{aset.benchmark} v{aset.version}: {len(rows)} {what} ({where})", file=sys.stderr)
    if template is not None:
        answers = [*(args.responses if args.next is not None else []), template]
        print(
            f"wrote {template}: fill the correct column with 0/1, then: sparseeval predict "
            f"--anchor-set {quoted(root)} --benchmark {quoted(aset.benchmark)}"
            f" --version {aset.version}"
            + (f" --budget {args.budget}" if args.budget else "")
            + f" --responses {' '.join(map(quoted, answers))}",
            file=sys.stderr,
        )
    return 0


def _no_doc_ids(aset, root) -> str:
    """Why a set's anchors have no lm-eval task/doc ids (the suite's: its members')."""
    from sparseeval.consume.answers.identity import OPAQUE, id_kinds
    from sparseeval.consume.sets.suite_set import SUITE, load_suite

    if aset.synthetic:
        return "synthetic item ids of the built-in demo leaderboard: no lm-eval docs behind them"
    sets = list(load_suite(root, aset.version).own.values()) if aset.benchmark == SUITE else [aset]
    if any(OPAQUE in id_kinds(a.items, a.item_sources).values() for a in sets):
        return "opaque item ids, not lm-eval doc ids: export-lm-eval needs --id-map FILE.csv"
    return "no lm-eval task/doc ids: synthetic item ids"


__all__ = [
    "add_anchors_command",
    "anchor_rows",
    "cmd_anchors",
]
