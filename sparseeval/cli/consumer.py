"""CLI subcommands for consumers of published anchor sets: predict, export-lm-eval, report.

`predict` and `export-lm-eval` (`cli.export_lm_eval`) need NumPy only (the light install);
`report` renders plots with matplotlib (the `pipeline` extra). Errors print one line on
stderr and return 2.
"""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

from sparseeval.cli.anchor_args import (
    FMT,
    add_anchor_set_args,
    anchor_set_root,
    guarded_command,
    trust_args,
)
from sparseeval.cli.common import UserError, number, quoted
from sparseeval.cli.export_lm_eval import add_export_command


def add_consumer_commands(subparsers) -> None:
    """Register `predict`, `export-lm-eval` and `report` on an argparse subparsers object."""
    _add_predict(subparsers)
    add_export_command(subparsers)
    _add_report(subparsers)


def _add_predict(subparsers) -> None:
    p = subparsers.add_parser(
        "predict",
        help="estimate a model's full-benchmark accuracy from its answers on the anchors",
        description="Estimate a model's full-benchmark accuracy, with a confidence interval, "
        "from its answers on a published anchor set.",
        formatter_class=FMT,
        epilog=textwrap.dedent(
            """\
            responses: CSV (columns item,correct), JSONL ({"item": ..., "correct": ...} per
            line), JSON ({item: correct}), lm-eval --log_samples output
            (samples_{task}_{timestamp}.jsonl files, or the folder holding them), an
            Inspect AI log (.eval, .json), an Every Eval Ever {uuid}_samples.jsonl, or one
            model's HELM run folders (a run folder, or a folder of them).
            correct may be 0/1, true/false or -1/+1. Answers on items that are not anchors:
            where the set lists the benchmark's other items (`--next`) and estimates their
            mean, they correct the anchors' estimate (the output says how many and by how
            much); where it estimates a reported score, or with anchors missing, they are
            not used and the output says why; items the set does not know are ignored.

            examples:
              sparseeval predict --anchor-set .sparseeval/published --benchmark gsm8k \\
                  --responses answers.csv
              sparseeval predict --anchor-set ORG/anchor-sets --benchmark arc \\
                  --responses results/ORG__MODEL/ --json
              sparseeval predict --anchor-set published --benchmark mmlu --version 3 \\
                  --responses a.csv --compare-to b.csv

            the suite (every benchmark's anchors read together, and the suite average):
              sparseeval predict --benchmark suite --responses arc=arc.csv gsm8k=gsm8k.csv \\
                  hellaswag=hs.csv mmlu=mmlu.csv truthfulqa=tqa.csv winogrande=wino.csv
            one B=FILE per benchmark of the suite (`sparseeval anchors --benchmark suite`
            lists them), or files of suite ids B/ITEM (the template written by
            `sparseeval anchors --benchmark suite --template FILE`); with some benchmarks
            unanswered, each answered one is read by its own reader, without the average,
            and the output names the missing ones.
            """
        ),
    )
    add_anchor_set_args(p)
    p.add_argument("--responses", nargs="+", required=True, metavar="FILE", help="answers file(s)")
    p.add_argument("--compare-to", nargs="+", metavar="FILE", help="a second model's answers")
    p.add_argument("--json", action="store_true", help="print a JSON object for machines")
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="estimate from the answered anchors (imputes the rest, widens the interval)",
    )
    p.add_argument(
        "--max-width",
        type=number(0, low_open=True),
        metavar="POINTS",
        help="an interval wider than this (points) says how many more items would help",
    )
    p.add_argument("--metric", help="lm-eval metric to read (default: per task, e.g. acc_norm)")
    p.add_argument("--filter", help="lm-eval filter to read (default: strict-match or none)")
    p.add_argument("--task", help="lm-eval task for bare integer item ids")
    p.add_argument(
        "--ignore-hash-mismatch",
        action="store_true",
        help="score lm-eval answers whose doc_hash differs from the set's (other questions)",
    )
    p.add_argument(
        "--id-map",
        metavar="FILE.csv",
        help="the map export-lm-eval was given (item,doc_id[,task]; opaque ids to lm-eval docs)",
    )
    p.set_defaults(func=guarded_command(cmd_predict))


def _add_report(subparsers) -> None:
    r = subparsers.add_parser(
        "report",
        help="re-render a published version's report (Markdown + HTML with plots)",
        description="Re-render the report of a published anchor set into a folder of your "
        "choice (the published folder itself is never modified).",
        formatter_class=FMT,
        epilog=textwrap.dedent(
            """\
            drift/budget files: JSON lists of rows, e.g.
              [{"version": 3, "mae": 1.8, "n_models": 40, "date": "2026-02-01"}]
              [{"method": "SparseEval", "n_anchors": 100, "mae": 1.2, "kendall_tau": 0.93}]

            examples:
              sparseeval report --anchor-set .sparseeval/published --benchmark gsm8k
              sparseeval report --anchor-set published --benchmark gsm8k --version 2 \\
                  --drift drift.json --out /tmp/gsm8k-v2
            """
        ),
    )
    add_anchor_set_args(r)
    r.add_argument("--out", metavar="DIR", help="output folder (default: $SPARSEEVAL_HOME/"
                   "reports/{benchmark}/vN, with the home .sparseeval/ unless set)")  # fmt: skip
    r.add_argument("--drift", metavar="FILE", help="JSON list of drift rows to show")
    r.add_argument("--budget-rows", metavar="FILE", help="JSON list of budget rows to show")
    r.set_defaults(func=guarded_command(cmd_report))


# --------------------------------------------------------------------------- commands


def cmd_predict(args) -> int:
    from sparseeval.consume.answers.responses import read_responses_files
    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.consume.sets.suite_set import SUITE

    if args.benchmark == SUITE:
        return _predict_suite(args)
    aset = load_anchor_set(anchor_set_root(args), args.benchmark, args.version, **trust_args(args))
    options = _lm_eval_options(args)
    a = read_responses_files(args.responses, aset, options)
    if args.compare_to:
        b = read_responses_files(args.compare_to, aset, options)
        diff = aset.compare(a, b, allow_missing=args.allow_missing)
        if args.json:
            print(json.dumps(diff.to_dict(), indent=2))
        else:
            print(f"{aset.benchmark} v{aset.version}: A {diff.a}; B {diff.b}")
            verdict = "resolvable" if diff.significant else "not resolvable"
            print(f"A - B: {diff} ({verdict})")
        return 0
    est = aset.predict(a, allow_missing=args.allow_missing)
    more = suggestion(aset, a, est, args)
    if args.json:
        print(json.dumps(est.to_dict() | {"source": aset.source, "next": more}, indent=2))
        return 0
    c = est.correction
    extra = (f" and {est.n_extra} more items (anchors alone {100 * c['anchor_estimate'][0]:.1f}%,"
             f" corrected {100 * c['shift']:+.1f} points)" if c else "")  # fmt: skip
    print(
        f"{aset.benchmark} v{aset.version}: estimated accuracy "
        f"{replace(est, flags=(), correction=None)} "
        f"from {est.n_answered}/{est.n_anchors} anchors{extra}"
    )
    print(describe_data(est))
    if est.flags:
        print(f"flagged: {est.flag_line}")
    if est.note:
        print(f"note: {est.note}")
    if more:
        print(more["line"])
    return 0


def _fresh(stem: str, taken: list[str]) -> str:
    """`stem`, or `stem2`, `stem3`... : a file stem none of `taken` (nor the folder) has."""
    names = {Path(t).stem for t in taken}
    k = 1
    while (name := stem if k == 1 else f"{stem}{k}") in names or Path(f"{name}.csv").exists():
        k += 1
    return name


def suggestion(aset, answers: dict, est, args) -> dict | None:
    """How many more items would help, and the commands to get and use them (None: none
    needed, or the set cannot take them); for a flagged estimate or one wider than
    `--max-width`."""
    width = 100 * (est.high - est.low)
    wide = args.max_width is not None and width > args.max_width
    if not (wide or (est.flags and not est.n_extra)):
        return None
    goal = args.max_width if wide else 200 * float(aset.conformal.halfwidths(est.value))
    why = f"wider than {args.max_width:g} points" if wide else "flagged"
    n = aset.items_needed(answers, goal / 100)
    if not n:
        return {"n": 0, "width_points": goal, "line": f"more items cannot help ({why}): "
                + no_more_items(aset, answers)}  # fmt: skip
    where = f"--anchor-set {quoted(anchor_set_root(args))} --benchmark {quoted(aset.benchmark)}"
    where += f" --version {aset.version}" + (f" --budget {args.budget}" if args.budget else "")
    from sparseeval.consume.scoring.next_items import next_step

    more = _fresh("more", args.responses)
    files = " ".join(map(quoted, args.responses))  # pasted into a shell as they are
    return next_step(where, aset.benchmark, n, goal, files, more, why, _exportable(aset))


def no_more_items(aset, answers: dict) -> str:
    """Why `items_needed` offers no items for this set and model, in words."""
    curves = aset.curves
    if curves is None:
        return "this set has no list of the benchmark's items (published before next items)"
    if curves.target_map is None:
        target = aset.manifest.target.definition or "a reported score"
        line = curves.item_map
        why = ("published before sets recorded how the score follows the items" if line is None
               else f"the best straight line through their mean misses the training models'"
               f" scores by {100 * line.rmse:.1f} points (RMS): the data hold only some of the"
               " benchmark's items, or the score weighs them another way")  # fmt: skip
        return (f"the set estimates {target}, which does not follow the mean over its"
                f" {len(curves.items)} items ({why}), so answers on more of them cannot correct"
                " it; it reads a model from how its training models' scores followed their"
                " answers, so it cannot place a model above its best training models (the"
                " interval's flags say when a model is there). A set fit on every item of the"
                " benchmark, on the items' mean (`fit` without --targets), or on stronger"
                " models, would narrow it")  # fmt: skip
    if aset.items_left(answers) <= 0:
        return f"every one of the benchmark's {len(curves.items)} items is an anchor or answered"
    return "the items answered already are as many as that width takes"


def _exportable(aset) -> bool:
    """Whether `export-lm-eval --next` can write this set's items (the check it runs)."""
    from sparseeval.consume.answers.identity import check_exportable
    from sparseeval.consume.lm_eval.ids import LmEvalError

    try:
        check_exportable(aset.benchmark, aset.known_items, aset.all_item_sources)
    except LmEvalError:
        return False
    return True


def _lm_eval_options(args) -> dict:
    """How lm-eval samples among the responses are read."""
    return {"metric": args.metric, "filter": args.filter, "task": args.task,
            "ignore_hash_mismatch": args.ignore_hash_mismatch,
            "id_map": getattr(args, "id_map", None)}  # fmt: skip


def describe_data(est) -> str:
    """What the estimate is of, and a warning when the set was fit on the synthetic demo."""
    from sparseeval.consume.sets.about import SYNTHETIC_NOTE

    line = f"estimates: {_estimates(est)}"
    return line + (f"\nnote: {SYNTHETIC_NOTE}" if est.synthetic else "")


def _estimates(est) -> str:
    """What one estimate is of, and where the set's data came from when recorded."""
    what = est.target or "the mean over the benchmark items it was fit on"
    return what + (f" (data: {est.data})" if est.data else "")


def _predict_suite(args) -> int:
    from sparseeval.consume.sets.suite_set import load_suite

    if args.compare_to:
        raise UserError("--compare-to is not supported for the suite; compare per benchmark")
    suite = load_suite(anchor_set_root(args), args.version, public_key=args.public_key)
    options = _lm_eval_options(args)
    answers = _suite_answers(suite, args.responses, options)
    estimates = suite.predict(answers, allow_missing=args.allow_missing)
    note = suite.fallback_note(answers)
    if args.json:
        if note:
            print(f"note: {note}", file=sys.stderr)
        print(json.dumps({b: e.to_dict() for b, e in estimates.items()}, indent=2))
        return 0
    read = "own anchors" if note else "every benchmark's anchors"
    print(f"suite v{suite.version} ({read}):")
    for b, e in estimates.items():
        print(f"  {b:<12} {e}")
    print("estimates:")
    for b, e in estimates.items():
        print(f"  {b:<12} {_estimates(e)}")
    if note:
        print(f"note: {note}")
    if any(e.synthetic for e in estimates.values()):
        from sparseeval.consume.sets.about import SYNTHETIC_NOTE

        print(f"note: {SYNTHETIC_NOTE.replace('this set', 'this suite')}")
    return 0


def _suite_answers(suite, specs: list[str], options: dict) -> dict[str, dict]:
    """{benchmark: {item: correct}} from `B=FILE` specs and files of suite ids (`B/item`).

    An anchor answered differently by two of them (`arc=arc.csv` and a joint file) is
    refused naming the anchors (`SuiteAnchorSet.merge`).
    """
    from sparseeval.consume.answers.responses import read_responses_files
    from sparseeval.consume.sets.suite_set import joint_item

    named: dict[str, list[str]] = {}
    for spec in specs:
        bench, sep, path = spec.partition("=")
        if sep and bench in suite.benchmarks:
            named.setdefault(bench, []).append(path)
        elif sep and not Path(spec).exists():
            suite.items(bench)  # refused, naming the suite's benchmarks
    sources = []
    for b, files in named.items():
        own = read_responses_files(files, suite.own[b], options)
        sources.append((f"{b}={','.join(files)}", [(joint_item(b, i), v) for i, v in own.items()]))
    joint_files = [s for s in specs if s.partition("=")[0] not in named]
    if joint_files:  # e.g. the template of `sparseeval anchors --benchmark suite`
        joint = read_responses_files(joint_files, suite.average, options)
        sources.append((",".join(joint_files), joint.items()))
    return suite.split(suite.merge(sources))


def cmd_report(args) -> int:
    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.pipeline.reports.anchor_report import render_report

    aset = load_anchor_set(anchor_set_root(args), args.benchmark, args.version, **trust_args(args))
    inputs_file = aset.folder / "report_inputs.json" if aset.folder else None
    inputs = json.loads(inputs_file.read_text()) if inputs_file and inputs_file.is_file() else {}
    if args.drift:
        inputs["drift_rows"] = _drift_rows(args.drift)
    if args.budget_rows:
        inputs["budget_rows"] = _json_rows(args.budget_rows)
    if args.out:
        out = Path(args.out)
    else:
        from sparseeval.pipeline.settings import Settings

        out = Path(Settings.load().paths.reports_dir) / aset.benchmark / f"v{aset.version}"
    paths = render_report(out, aset.manifest, inputs, aset.folder)
    print(f"report: {paths['html']}")
    print(f"        {paths['md']} ({len(paths['plots'])} plots)")
    return 0


def _drift_rows(path) -> list[dict]:
    """`--drift` rows, each a drift check (`consume.sets.fields.drift_row_problem`)."""
    from sparseeval.consume.sets.fields import drift_row_problem

    rows = _json_rows(path)
    for n, row in enumerate(rows, 1):
        if problem := drift_row_problem(row):
            raise UserError(f"{path}: drift row {n}: {problem}")
    return rows


def _json_rows(path) -> list[dict]:
    p = Path(path)
    try:
        rows = json.loads(p.read_text())
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{p}: not valid JSON ({e.msg})") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise UserError(f"{p}: expected a JSON list of objects")
    return rows


__all__ = [
    "add_consumer_commands",
    "cmd_predict",
    "cmd_report",
    "describe_data",
    "no_more_items",
    "suggestion",
]
