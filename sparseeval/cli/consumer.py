"""CLI subcommands for consumers of published anchor sets: predict, export-lm-eval, report.

`predict` and `export-lm-eval` need NumPy only (the light install); `report` renders
plots with matplotlib (the `pipeline` extra). Errors print one line on stderr and return 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

from sparseeval.cli.common import EXIT_USER_ERROR, UserError


def add_consumer_commands(subparsers) -> None:
    """Register `predict`, `export-lm-eval` and `report` on an argparse subparsers object."""
    _add_predict(subparsers)
    _add_export(subparsers)
    _add_report(subparsers)


FMT = argparse.RawDescriptionHelpFormatter


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
            line), JSON ({item: correct}), or lm-eval --log_samples output
            (samples_{task}_{timestamp}.jsonl files, or the folder holding them).
            correct may be 0/1, true/false or -1/+1; items that are not anchors are ignored.

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
    _common(p)
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
        type=float,
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
    p.set_defaults(func=_guarded(cmd_predict))


def _add_export(subparsers) -> None:
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
    _common(e, many=True)
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
        help="map the set's opaque item ids to lm-eval docs (CSV columns item,doc_id[,task])",
    )
    e.set_defaults(func=_guarded(cmd_export_lm_eval))


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
    _common(r)
    r.add_argument("--out", metavar="DIR", help="output folder (default: $SPARSEEVAL_HOME/"
                   "reports/{benchmark}/vN, with the home .sparseeval/ unless set)")  # fmt: skip
    r.add_argument("--drift", metavar="FILE", help="JSON list of drift rows to show")
    r.add_argument("--budget-rows", metavar="FILE", help="JSON list of budget rows to show")
    r.set_defaults(func=_guarded(cmd_report))


def _common(p, many: bool = False) -> None:
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
    p.add_argument("--budget", type=int, metavar="K",
                   help="which budget when several are published (default: largest)")  # fmt: skip
    p.add_argument("--public-key", metavar="PEM",
                   help="refuse the set unless manifest.sig verifies with this key")  # fmt: skip


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
    p.add_argument("--seed", type=int, default=0, help="with --next: the random draw's seed")


def chosen_items(aset, args) -> list[str]:
    """The anchors, or with --next the next items for the model answering --responses."""
    if args.next is None:
        return aset.items
    if args.next < 1:
        raise UserError(f"--next must be at least 1, got {args.next}")
    if not args.responses:
        raise UserError("--next needs --responses FILE (the model's answers on the anchors)")
    from sparseeval.consume.responses import read_responses_files

    answers = read_responses_files(args.responses, aset)
    return aset.next_items(answers, args.next, args.strategy, args.seed)


def _guarded(fn):
    def run(args) -> int:
        from sparseeval.consume.anchorset import ALLOW_MISSING
        from sparseeval.consume.layout import AnchorSetError
        from sparseeval.consume.lm_eval import LmEvalError
        from sparseeval.consume.responses import ResponsesError

        try:
            return fn(args)
        except (UserError, AnchorSetError, ResponsesError, LmEvalError) as e:
            print(f"error: {str(e).replace(ALLOW_MISSING, '--allow-missing')}", file=sys.stderr)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
            print(f"error: {e.strerror}: {e.filename}", file=sys.stderr)
        return EXIT_USER_ERROR

    run.__name__ = fn.__name__
    return run


def _trust(args) -> dict:
    """Which budget, and the publisher's public key when the set must be signed."""
    return {"budget": args.budget, "public_key": args.public_key}


def _anchor_root(args) -> str:
    if args.anchor_set:
        return args.anchor_set
    from sparseeval.pipeline.settings import Settings

    return str(Settings.load().published_dir)


# --------------------------------------------------------------------------- commands


def cmd_predict(args) -> int:
    from sparseeval.consume.anchorset import load_anchor_set
    from sparseeval.consume.responses import read_responses_files
    from sparseeval.consume.suite_set import SUITE

    if args.benchmark == SUITE:
        return _predict_suite(args)
    aset = load_anchor_set(_anchor_root(args), args.benchmark, args.version, **_trust(args))
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
    n = aset.items_needed(answers, goal / 100)
    if not n:
        return None
    where = f"--anchor-set {_anchor_root(args)} --benchmark {aset.benchmark}"
    where += f" --version {aset.version}" + (f" --budget {args.budget}" if args.budget else "")
    files = " ".join(args.responses)
    more = _fresh("more", args.responses)
    get = f"sparseeval anchors {where} --next {n} --responses {files} --template {more}.csv"
    lm_eval = f"sparseeval export-lm-eval {where} --next {n} --responses {files} --out {more}.json"
    use = f"sparseeval predict {where} --responses {files} {more}.csv"
    why = f"wider than {args.max_width:g} points" if wide else "flagged"
    line = (
        f"more items would help ({why}): answer {n} more items of {aset.benchmark} for an"
        f" interval about {goal:.1f} points wide:\n  {get}\n  (or the lm-eval --samples JSON"
        f" of them: {lm_eval})\nfill {more}.csv, then: {use}"
    )
    return {"n": n, "width_points": goal, "anchors": get, "export_lm_eval": lm_eval,
            "predict": use, "line": line}  # fmt: skip


def _lm_eval_options(args) -> dict:
    """How lm-eval samples among the responses are read."""
    return {"metric": args.metric, "filter": args.filter, "task": args.task,
            "ignore_hash_mismatch": args.ignore_hash_mismatch}  # fmt: skip


def describe_data(est) -> str:
    """What the estimate is of, and a warning when the set was fit on the synthetic demo."""
    from sparseeval.consume.about import SYNTHETIC_NOTE

    line = f"estimates: {_estimates(est)}"
    return line + (f"\nnote: {SYNTHETIC_NOTE}" if est.synthetic else "")


def _estimates(est) -> str:
    """What one estimate is of, and where the set's data came from when recorded."""
    what = est.target or "the mean over the benchmark items it was fit on"
    return what + (f" (data: {est.data})" if est.data else "")


def _predict_suite(args) -> int:
    from sparseeval.consume.suite_set import load_suite

    if args.compare_to:
        raise UserError("--compare-to is not supported for the suite; compare per benchmark")
    suite = load_suite(_anchor_root(args), args.version, public_key=args.public_key)
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
        from sparseeval.consume.about import SYNTHETIC_NOTE

        print(f"note: {SYNTHETIC_NOTE.replace('this set', 'this suite')}")
    return 0


def _suite_answers(suite, specs: list[str], options: dict) -> dict[str, dict]:
    """{benchmark: {item: correct}} from `B=FILE` specs and files of suite ids (`B/item`).

    An anchor answered differently by two of them (`arc=arc.csv` and a joint file) is
    refused naming the anchors (`SuiteAnchorSet.merge`).
    """
    from sparseeval.consume.responses import read_responses_files
    from sparseeval.consume.suite_set import joint_item

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


def cmd_export_lm_eval(args) -> int:
    from sparseeval.consume.lm_eval import export_samples, merge_samples

    if not (args.out or args.tasks_dir):
        raise UserError("say what to write: --out FILE (--samples JSON) and/or --tasks-dir DIR")
    if args.dataset and not args.tasks_dir:
        raise UserError("--dataset goes with --tasks-dir")
    root = _anchor_root(args)
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
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(mapping, indent=1) + "\n")
    n = sum(len(v) for v in mapping.values())
    tasks = " ".join(mapping)
    print(f"wrote {n} doc ids for {len(mapping)} task(s) to {out}")
    print(
        f"next: lm-eval run --model hf --model_args pretrained=ORG/MODEL --tasks {tasks} "
        f"--samples {out} --log_samples --output_path results/",
        file=sys.stderr,
    )
    _note_unknown_ids(sets)
    return 0


def _next_samples(sets: list, args) -> dict:
    """The --samples mapping of the next items of one benchmark (`--next N --responses`)."""
    from sparseeval.consume import identity as ids
    from sparseeval.consume.lm_eval import export_samples

    if len(sets) != 1 or hasattr(sets[0], "own"):
        raise UserError("--next exports one benchmark's items (not the suite, not several)")
    aset = sets[0]
    items = chosen_items(aset, args)
    ids.check_exportable(aset.benchmark, items, aset.all_item_sources)
    return export_samples(items, aset.benchmark, aset.all_item_sources, args.task)


def _members(aset) -> list:
    """A benchmark's set, or each member benchmark's own set of the suite."""
    return list(aset.own.values()) if hasattr(aset, "own") else [aset]


def exportable(aset, id_map: str | None, task: str | None):
    """The set (or suite) with `--id-map` applied; refused (one line) while any id is opaque."""
    from dataclasses import replace

    from sparseeval.consume import identity as ids
    from sparseeval.consume.taskmap import default_task

    if hasattr(aset, "own"):
        own = {b: exportable(m, id_map, task) for b, m in aset.own.items()}
        return replace(aset, own=own)
    default = task or default_task(aset.benchmark)
    mapping = ids.read_id_map(id_map, default) if id_map else None
    sources = (
        ids.with_id_map(aset.items, aset.item_sources, mapping) if mapping else aset.item_sources
    )
    ids.check_exportable(aset.benchmark, aset.items, sources)
    return replace(aset, manifest={**aset.manifest, "item_sources": sources}) if mapping else aset


def _note_unknown_ids(sets: list) -> None:
    """A note for each set published before item identity was recorded."""
    from sparseeval.consume import identity as ids

    for a in (m for s in sets for m in _members(s)):
        if ids.UNKNOWN in ids.id_kinds(a.items, a.item_sources).values():
            print(f"note: {a.benchmark} v{a.version}: {ids.UNKNOWN_NOTE}", file=sys.stderr)


def _export_set(root, benchmark: str, args):
    """The anchor set to export: a benchmark's, or the suite (`--benchmark suite`)."""
    from sparseeval.consume.anchorset import load_anchor_set
    from sparseeval.consume.suite_set import SUITE, load_suite

    if benchmark == SUITE:
        return load_suite(root, args.version, public_key=args.public_key)
    return load_anchor_set(root, benchmark, args.version, **_trust(args))


def _write_tasks(args, root, sets) -> None:
    from sparseeval.consume.lm_eval_task import plan_task, task_name, write_suite, write_task

    several = len(sets) != 1 or hasattr(sets[0], "own")
    if several and any("=" not in d for d in args.dataset or ()):
        raise UserError("a bare --dataset FILE goes with a single --benchmark; name files of "
                        "several benchmarks TASK:SPLIT=FILE")  # fmt: skip
    plans = [plan_task(m) for a in sets for m in _members(a)]
    dataset = None  # every set was checked (plan_task) before any is written
    if args.dataset:
        dataset = dict(d.split("=", 1) if "=" in d else (plans[0].default_split(), d)
                       for d in args.dataset)  # fmt: skip
    names = []
    for aset in sets:
        if hasattr(aset, "own"):  # the suite
            folder = write_suite(args.tasks_dir, aset, root, dataset=dataset)
            names.append(folder.name)
            print(f"wrote lm-eval group {folder.name} ({len(aset.benchmarks)} benchmarks: "
                  f"{' '.join(task_name('suite_' + b) for b in aset.benchmarks)}, "
                  f"suite v{aset.version}) to {folder}")  # fmt: skip
            continue
        folder = write_task(args.tasks_dir, aset, root, dataset=dataset)
        names.append(folder.name)
        print(f"wrote lm-eval task {folder.name} ({len(aset.items)} anchors, "
              f"{aset.benchmark} v{aset.version}) to {folder}")  # fmt: skip
    print(
        f"next: lm-eval run --model hf --model_args pretrained=ORG/MODEL --tasks "
        f"{' '.join(names)} --include_path {args.tasks_dir} --output_path results/",
        file=sys.stderr,
    )
    if not args.dataset:
        hub = ", ".join(sorted({p.spec.dataset_path for p in plans}))
        print(f"note: lm-eval downloads {hub} from the Hub when it runs; offline, write the "
              "tasks with local copies: --dataset [SPLIT=]FILE", file=sys.stderr)  # fmt: skip


def cmd_report(args) -> int:
    from sparseeval.consume.anchorset import load_anchor_set
    from sparseeval.pipeline.reports.anchor_report import render_report

    aset = load_anchor_set(_anchor_root(args), args.benchmark, args.version, **_trust(args))
    inputs_file = aset.folder / "report_inputs.json" if aset.folder else None
    inputs = json.loads(inputs_file.read_text()) if inputs_file and inputs_file.is_file() else {}
    if args.drift:
        inputs["drift_rows"] = _json_rows(args.drift)
    if args.budget_rows:
        inputs["budget_rows"] = _json_rows(args.budget_rows)
    if args.out:
        out = Path(args.out)
    else:
        from sparseeval.pipeline.settings import Settings

        out = Path(Settings.load().reports_dir) / aset.benchmark / f"v{aset.version}"
    paths = render_report(out, aset.manifest, inputs, aset.folder)
    print(f"report: {paths['html']}")
    print(f"        {paths['md']} ({len(paths['plots'])} plots)")
    return 0


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
