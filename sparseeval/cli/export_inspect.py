"""`sparseeval export-inspect`: the anchors as the sample-id list Inspect AI's CLI takes
(`inspect eval TASK --sample-id ID,ID,...`), so a model runs on the anchors only. NumPy only."""

from __future__ import annotations

import sys
import textwrap

from sparseeval.cli.anchor_args import (
    FMT,
    add_anchor_set_args,
    anchor_set_root,
    guarded_command,
    trust_args,
)
from sparseeval.cli.common import UserError, quoted, write_text_atomic


def add_export_inspect_command(subparsers) -> None:
    """Register `export-inspect` on an argparse subparsers object."""
    e = subparsers.add_parser(
        "export-inspect",
        help="run only the anchors in Inspect AI: the --sample-id list",
        description="Write the anchors' sample ids, comma-separated, as Inspect AI's "
        "`inspect eval --sample-id` takes them, for a set whose items are Inspect sample ids "
        "(a set fit on Inspect logs). Then `predict --responses LOG.eval` reads the log.",
        formatter_class=FMT,
        epilog=textwrap.dedent(
            """\
            examples:
              sparseeval export-inspect --benchmark gpqa_diamond --out anchors.txt
              inspect eval inspect_evals/gpqa_diamond --model openai/gpt-4o \\
                  --sample-id "$(cat anchors.txt)" --log-dir logs/
              sparseeval predict --benchmark gpqa_diamond --responses logs/LOG.eval
            """
        ),
    )
    add_anchor_set_args(e)
    e.add_argument("--out", metavar="FILE", required=True, help="file to write the ids to")
    e.set_defaults(func=guarded_command(cmd_export_inspect))


def cmd_export_inspect(args) -> int:
    from sparseeval.consume.sets.anchorset import load_anchor_set

    aset = load_anchor_set(anchor_set_root(args), args.benchmark, args.version, **trust_args(args))
    text = sample_id_list(aset.benchmark, list(aset.items))
    out = write_text_atomic(args.out, text + "\n")
    print(f"wrote {len(aset.items)} sample ids of {aset.benchmark} to {out}")
    print(f'next: inspect eval TASK --model MODEL --sample-id "$(cat {quoted(out)})"'
          " --log-dir logs/", file=sys.stderr)  # fmt: skip
    return 0


def sample_id_list(benchmark: str, items: list[str]) -> str:
    """`id,id,...` as `--sample-id` takes it; UserError when an id cannot be said there (a
    comma splits it, edge spaces are trimmed)."""
    bad = [i for i in items if "," in i or i != i.strip() or not i]
    if bad:
        raise UserError(
            f"{benchmark}: {len(bad)} anchor id(s) cannot be passed to --sample-id ({bad[0]!r}:"
            " a comma or edge space); run them with a dataset filtered to the anchors instead"
        )
    return ",".join(items)


__all__ = [
    "add_export_inspect_command",
    "cmd_export_inspect",
    "sample_id_list",
]
