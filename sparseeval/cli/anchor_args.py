"""What the commands that read a published set share: its options (--anchor-set,
--benchmark, --version, --budget, --public-key; --next and its companions), where it is,
and the guard that prints a user error as one line (exit 2)."""

from __future__ import annotations

import argparse
import sys

from sparseeval.cli.common import EXIT_USER_ERROR, SEED_MAX, UserError, whole

FMT = argparse.RawDescriptionHelpFormatter


def add_anchor_set_args(p, many: bool = False) -> None:
    p.add_argument(
        "--anchor-set",
        metavar="DIR_OR_REPO",
        help="published folder or Hub dataset repo id (default: $SPARSEEVAL_HOME/published)",
    )
    if many:
        p.add_argument("--benchmark", nargs="+", required=True, metavar="B")
    else:
        p.add_argument("--benchmark", required=True, metavar="B")
    p.add_argument("--version", default="latest", help="latest (default), N or vN")
    p.add_argument("--budget", type=whole(1), metavar="K",
                   help="which budget when several are published (default: the one the"
                        " publisher maintains, else the largest)")  # fmt: skip
    p.add_argument("--public-key", metavar="PEM",
                   help="refuse the set unless manifest.sig (and the latest pointer it is"
                        " found by) verifies with this key, and that pointer is no older than"
                        " one followed on this machine before")  # fmt: skip


def add_next_options(p) -> None:
    """--next N, --responses FILE..., --strategy: the items to answer after the anchors."""
    p.add_argument("--next", type=int, metavar="N",
                   help="instead of the anchors: N more items of the benchmark for this model "
                   "(neither anchors nor answered in --responses)")  # fmt: skip
    p.add_argument(
        "--responses",
        nargs="+",
        metavar="FILE",
        help="with --next: the answers so far (anchors, and any items since)",
    )
    p.add_argument(
        "--strategy",
        default="random",
        choices=("random", "informative"),
        help="with --next: a random sample of the rest (default; keeps the "
        "corrected estimate unbiased) or the items this model is least sure of",
    )
    p.add_argument("--seed", type=whole(0, SEED_MAX), default=0,
                   help="with --next: the random draw's seed")  # fmt: skip


def chosen_items(aset, args) -> list[str]:
    """The anchors, or with --next the next items for the model answering --responses."""
    if args.next is None:
        return aset.items
    if args.next < 1:
        raise UserError(f"--next must be at least 1, got {args.next}")
    if not args.responses:
        raise UserError("--next needs --responses FILE (the model's answers on the anchors)")
    from sparseeval.consume.answers.responses import read_responses_files

    answers = read_responses_files(args.responses, aset)
    return aset.next_items(answers, args.next, args.strategy, args.seed)


def guarded_command(fn):
    def run(args) -> int:
        from sparseeval.consume.answers.responses import ResponsesError
        from sparseeval.consume.lm_eval.harness import LmEvalError
        from sparseeval.consume.sets.anchorset import ALLOW_MISSING
        from sparseeval.consume.sets.layout import AnchorSetError

        try:
            return fn(args)
        except (UserError, AnchorSetError, ResponsesError, LmEvalError) as e:
            print(f"error: {str(e).replace(ALLOW_MISSING, '--allow-missing')}", file=sys.stderr)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
            print(f"error: {e.strerror}: {e.filename}", file=sys.stderr)
        return EXIT_USER_ERROR

    run.__name__ = fn.__name__
    return run


def trust_args(args) -> dict:
    """Which budget, and the publisher's public key when the set must be signed."""
    return {"budget": args.budget, "public_key": args.public_key}


def anchor_set_root(args) -> str:
    if args.anchor_set:
        return args.anchor_set
    from sparseeval.pipeline.settings import Settings

    return str(Settings.load().paths.published_dir)


__all__ = [
    "FMT",
    "add_anchor_set_args",
    "add_next_options",
    "anchor_set_root",
    "chosen_items",
    "guarded_command",
    "trust_args",
]
