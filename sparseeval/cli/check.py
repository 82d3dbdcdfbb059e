"""`sparseeval check`: score models a set never saw and compare with their reported scores.

Light install (NumPy only) with `--responses`; without it the answers come from the local
store (the pipeline install). Errors print one line on stderr and return 2.
"""

from __future__ import annotations

import json
import textwrap

from sparseeval.cli.anchor_args import (
    FMT,
    add_anchor_set_args,
    anchor_set_root,
    guarded_command,
    trust_args,
)
from sparseeval.cli.common import UserError


def add_check_command(subparsers) -> None:
    """Register `check` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "check",
        help="your acceptance test: score models the set never saw against their scores",
        description="Score models that a set never saw (not in its train/test pool) from "
        "their answers and print MAE, interval coverage, mean signed error, flag counts and "
        "how many misses were flagged, against the scores they report. Each model is scored "
        "from its anchor answers alone (the set's own estimate) unless --extra-items.",
        formatter_class=FMT,
        epilog=textwrap.dedent(
            """\
            --scores: CSV of model,score (percent or fractions), model,benchmark,score, or a
            leaderboard table with a column named after the benchmark.
            --responses: CSV of the models' answers, wide (a model column, one column per
            item) or long (model,item,correct); or the models' own results: Inspect AI logs,
            Every Eval Ever samples files, HELM run folders, or folders holding them (each
            model named as its results name it, as the scores must); without it, the answers
            stored in the local store (SPARSEEVAL_HOME). Models the set was fit, calibrated
            or tested on (its models.json) are refused and named; when no model is left to
            score (a set fit on all your data saw every model), it says how to hold models
            out and exits 2.

            examples:
              sparseeval check --benchmark arc --scores new_scores.csv --responses new.csv
              sparseeval check --anchor-set fit/ --benchmark wide --scores s.csv \\
                  --responses answers.csv --json
            """
        ),
    )
    add_anchor_set_args(p)
    p.add_argument("--scores", required=True, metavar="FILE.csv", help="reported scores")
    p.add_argument("--responses", nargs="+", metavar="PATH",
                   help="answers table (wide or long CSV), or Inspect logs, EEE samples files,"
                        " HELM runs, or folders of them")  # fmt: skip
    p.add_argument("--ignore-hash-mismatch", action="store_true",
                   help="score native results whose questions' content differs from the set's"
                        " under the same ids (off: refused)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print a JSON object for machines")
    p.add_argument(
        "--extra-items",
        action="store_true",
        help="let answers on the benchmark's other items correct each estimate, as predict"
        " does (with every item answered: the items' mean, not the anchors)",
    )
    p.set_defaults(func=guarded_command(cmd_check))


def cmd_check(args) -> int:
    from sparseeval.consume.scales import mixed_scale_message
    from sparseeval.consume.scoring.check import check_models, read_scores
    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.consume.sets.models import pool, read_models

    aset = load_anchor_set(anchor_set_root(args), args.benchmark, args.version, **trust_args(args))
    scores, scale = read_scores(args.scores, aset.benchmark)
    raw = [v * 100 if "percent" in scale else v for v in scores.values()]  # as the file has them
    if mixed := mixed_scale_message(f"{args.scores} ({aset.benchmark})", raw, list(scores)):
        raise UserError(mixed)
    answers = _given_answers(args, aset) if args.responses else _stored_answers(args, scores)
    models = read_models(aset.folder)
    known = pool(models) if models is not None else None
    result = check_models(aset, answers, scores, known, extra_items=args.extra_items)
    result.notes.append(f"{args.scores}: {scale}")
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    else:
        print("\n".join(result.lines()))
    return 0 if result.n else 2  # nothing checked: the lines say why and what to do


def _given_answers(args, aset) -> dict[str, dict]:
    """{model: {item: answer}} of `--responses`: one CSV table, or models' native results."""
    from sparseeval.consume.answers.responses import read_models_answers
    from sparseeval.consume.scoring.check import read_answers

    tables = [p for p in args.responses if p.lower().endswith(".csv")]
    if tables and len(args.responses) > 1:
        raise UserError("--responses takes one CSV table, or native results (logs, samples"
                        f" files, runs), not both: {', '.join(tables)}")  # fmt: skip
    if tables:
        return read_answers(tables[0])
    return read_models_answers(
        args.responses, aset, {"ignore_hash_mismatch": args.ignore_hash_mismatch}
    )


def _stored_answers(args, scores: dict) -> dict[str, dict]:
    """{model: {item: +-1}} of the scored models from the local store's matrix."""
    try:
        from sparseeval.pipeline.settings import Settings
        from sparseeval.pipeline.store import Store, build_matrix
    except ImportError:
        raise UserError("give --responses FILE.csv (reading the store needs the pipeline"
                        " install: pip install '.[pipeline]')") from None  # fmt: skip
    path = Settings.load().paths.store_path
    if not path.exists():
        raise UserError(f"no store at {path}: give --responses FILE.csv")
    with Store.open(path, read_only=True) as store:
        matrix, _ = build_matrix(store, args.benchmark, target="items")
    rows = {m: r for r, m in enumerate(matrix.model_ids) if m in scores}
    items = [str(i) for i in matrix.item_ids]
    return {m: dict(zip(items, matrix.values[r].tolist(), strict=True)) for m, r in rows.items()}


__all__ = [
    "add_check_command",
    "cmd_check",
]
