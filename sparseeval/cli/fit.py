"""`sparseeval fit`: select anchors on one matrix and compare with the baselines."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sparseeval.cli.common import SEED_MAX, UserError, number, parse_budgets, quoted, whole

MAX_SYNTHETIC_CELLS = 50_000_000  # --synthetic M N: at most M x N answers (a demo, not a load test)
FIT_EXAMPLE = """examples:
  sparseeval fit --synthetic 2000 600 --anchors 20,50,100
  sparseeval fit responses.csv --targets scores.csv --anchors 50 --out fit/
"""


def add_fit_command(sub: argparse._SubParsersAction) -> None:
    fit = sub.add_parser(
        "fit",
        help="select anchors, train, and compare with baselines on a test split",
        description="Select anchors for one or more budgets, train the predictor, and print "
        "MAE / Kendall tau of SparseEval and the baselines on held-out test models.",
        epilog=FIT_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fit.add_argument("data", nargs="?", help="wide CSV/Parquet: a 'model' column + one per item")
    fit.add_argument("--targets", help="CSV/Parquet of model,score (full-benchmark score)")
    fit.add_argument("--synthetic", nargs=2, type=whole(1, 1_000_000), metavar=("M", "N"),
                     help="the built-in demo leaderboard: M models x N items")  # fmt: skip
    fit.add_argument("--anchors", default="20,50,100", help="budgets, e.g. 20,50,100")
    fit.add_argument("--paper", action="store_true",
                     help="also run the paper's recipe (MLP proxy, blind swaps; slow)")  # fmt: skip
    fit.add_argument("--out", help="write anchors, predictor and metrics to this folder, and"
                     " each budget as an anchor set that predict --anchor-set reads")  # fmt: skip
    fit.add_argument("--benchmark", metavar="NAME",
                     help="name of the sets in --out (default: the data file's name)")  # fmt: skip
    fit.add_argument("--test", type=number(0, low_open=True),
                     help="test models: a count, or a fraction if < 1")  # fmt: skip
    fit.add_argument("--valid", type=number(0, low_open=True),
                     help="validation models: count or fraction")  # fmt: skip
    fit.add_argument("--seed", type=whole(0, SEED_MAX), default=None)
    fit.add_argument("--json", action="store_true", help="print metrics as JSON")
    fit.add_argument("--quiet", action="store_true", help="print only the table")
    fit.set_defaults(func=cmd_fit)


def read_wide(path: Path, targets: Path | None = None, say=lambda message: None):
    """A wide table (CSV or Parquet: `model` column, one column per item) as a matrix.

    Answers are 0/1 (or -1/+1, true/false); a table holding a score strictly between 0 and
    1 is read as graded scores in [0, 1] (`method.matrix.scale_of_scores`).

    `targets` (CSV or Parquet with `model` and `score`, percent or [0, 1]) gives the
    full-benchmark accuracy; without it the target is the mean over the given items.
    What is left out (extra columns, score rows of models without answers) is said.
    """
    from sparseeval.method.matrix import MatrixError, ResponseMatrix, scale_of_scores

    frame = _read_table(path)
    if "model" not in frame.columns:
        raise UserError(f"{path}: no 'model' column (found {frame.columns[:5]}...)")
    items = [c for c in frame.columns if c != "model"]
    values = frame.select(items).to_numpy()
    _check_missing(path, values, frame["model"].to_list(), items)
    y = _targets(targets, frame, say) if targets is not None else None
    try:
        scale = scale_of_scores(values)
        return ResponseMatrix.from_array(values, frame["model"].to_list(), items, y, scale=scale)
    except MatrixError as e:
        raise UserError(f"{path}: {e}") from e


def _check_missing(path: Path, values, models: list, items: list[str]) -> None:
    """A missing answer names its 1-based file line, model and column."""
    import numpy as np

    if values.dtype.kind == "f" and np.isnan(values).any():
        r, c = np.argwhere(np.isnan(values))[0]
        line = f"line {r + 2}" if path.suffix != ".parquet" else f"row {r + 1}"
        raise UserError(
            f"{path}: {line} (model {models[r]}), column {items[c]!r}: missing answer;"
            " every model needs a 0/1 answer on every item"
        )


def _targets(targets: Path, frame, say):
    """Each model's full-benchmark score from a `model,score` table, in [0, 1]."""
    import polars as pl

    from sparseeval.consume.scales import mixed_scale_message

    scores = _read_table(targets)
    missing = {"model", "score"} - set(scores.columns)
    if missing:
        raise UserError(f"{targets}: missing column(s) {sorted(missing)}")
    if extra := [c for c in scores.columns if c not in {"model", "score"}]:
        say(f"{targets}: column(s) {', '.join(extra)} ignored (only model and score are read)")
    joined = frame.select("model").join(scores.select("model", "score"), on="model", how="left")
    if n := joined["score"].null_count():
        names = joined.filter(pl.col("score").is_null())["model"].head(3).to_list()
        more = f" and {n - len(names)} more" if n > len(names) else ""
        raise UserError(f"{targets}: {n} model(s) have no score: {', '.join(names)}{more}")
    if unused := scores.height - scores["model"].is_in(frame["model"].implode()).sum():
        say(f"{targets}: {unused} score row(s) ignored: their models have no answers")
    y = joined["score"].cast(pl.Float64).to_numpy()
    if mixed := mixed_scale_message(str(targets), y.tolist(), joined["model"].to_list()):
        raise UserError(mixed)
    if y.max() > 1:
        say(f"{targets}: scores read as percentages (max {y.max():g}): divided by 100")
        y = y / 100
    return y


def _read_table(path: Path):
    """A CSV (UTF-8, a BOM before the header is dropped) or Parquet file as a frame."""
    import polars as pl

    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        if path.suffix == ".parquet":
            return pl.read_parquet(path)
        frame = pl.read_csv(path, null_values=["NA", ""], infer_schema_length=None)
    except Exception as e:  # polars raises many types; name the file, keep one line
        if path.suffix != ".parquet" and (bad := _not_utf8_line(path)):
            raise UserError(f"{path}: {bad}; save the file as UTF-8") from None
        reason = str(e).strip().splitlines()[0]
        raise UserError(
            f"{path}: cannot read as {path.suffix.lstrip('.') or 'CSV'}: {reason}"
        ) from e
    first = frame.columns[0] if frame.columns else ""
    if first.startswith("\ufeff"):  # a spreadsheet's UTF-8 BOM, should the reader keep it
        frame = frame.rename({first: first.lstrip("\ufeff")})
    return frame


def _not_utf8_line(path: Path) -> str | None:
    """`line N: not UTF-8 text (byte 0x..)` for the first line that is not UTF-8, else None.

    Line by line is exact: a newline byte never occurs inside a UTF-8 sequence.
    """
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                return f"line {n}: not UTF-8 text (byte 0x{raw[e.start]:02x})"
    return None


def cmd_fit(args: argparse.Namespace) -> int:
    from sparseeval.method.synthetic import make_synthetic
    from sparseeval.pipeline.compare import compare_methods, write_fit
    from sparseeval.pipeline.recipe import clamp_note
    from sparseeval.pipeline.settings import Settings

    budgets = parse_budgets(args.anchors)  # checked before any work
    if args.out:
        _set_name(args)  # a bad set name is refused before any work
    if args.data is None and args.targets:
        raise UserError("--targets needs a data file: sparseeval fit responses.csv --targets ...")
    if args.data is not None and args.synthetic:
        raise UserError("give a data file or --synthetic M N, not both")
    if args.data is None and not args.synthetic:
        raise UserError(
            "give a data file (sparseeval fit responses.csv) or --synthetic M N"
            " for the built-in demo leaderboard, e.g. --synthetic 2000 600"
        )
    settings = Settings.load(seed=args.seed, n_test=args.test, n_valid=args.valid)
    say = (lambda s: None) if args.quiet or args.json else (lambda s: print(s, file=sys.stderr))
    if args.data is not None:
        matrix = read_wide(Path(args.data), Path(args.targets) if args.targets else None, say)
    else:
        m, n = args.synthetic
        if m * n > MAX_SYNTHETIC_CELLS:
            raise UserError(f"--synthetic {m} {n}: {m * n:,} answers is more than the demo makes"
                            f" ({MAX_SYNTHETIC_CELLS:,}); ingest real data for more")  # fmt: skip
        say(f"the built-in synthetic leaderboard: {m} models x {n} items")
        matrix = make_synthetic(m, n, seed=settings.splits.seed)
    say(f"matrix: {matrix.shape[0]:,} models x {matrix.shape[1]:,} items")
    if note := clamp_note(budgets, matrix.shape[1], settings.selection.max_anchor_share):
        say(note)
    result = compare_methods(matrix, budgets, settings, progress=say, paper=args.paper,
                             benchmark=_set_name(args))  # fmt: skip
    if args.out:
        write_fit(args.out, result, matrix, settings)
        _write_sets(args, result, matrix, settings, say)
    if args.json:
        print(json.dumps({"split": result.split.sizes(), "test_metrics": result.rows}, indent=2))
    else:
        print(f"test split: {result.split.sizes()['test']} models")
        print(result.table())
    return 0


def _set_name(args: argparse.Namespace) -> str:
    """The benchmark name of the sets `--out` holds: `--benchmark`, else the data's file name."""
    from sparseeval.consume.answers.ids import IdError, check_benchmark_name

    name = args.benchmark or (Path(args.data).stem if args.data else "synthetic")
    try:
        return check_benchmark_name(name)
    except IdError as exc:
        raise UserError(f"--benchmark: {exc}") from None


def _write_sets(args: argparse.Namespace, result, matrix, settings, say) -> None:
    """Each budget as a promoted anchor set under `--out`; how to score a model with it."""
    from sparseeval.pipeline.fit_sets import LOCAL_LINE, fit_provenance, fit_target, publish_fits

    data = Path(args.data) if args.data else None
    target = fit_target(matrix, Path(args.targets) if args.targets else None)
    extra = {"target": target, "provenance": fit_provenance(data, matrix)}
    name = _set_name(args)
    folders = publish_fits(args.out, name, result, matrix, settings, extra)
    say(f"wrote anchors, predictors and metrics to {args.out}, and {len(folders)} anchor set(s)"
        f" of {name!r} ({', '.join(str(f) for f in folders)})")  # fmt: skip
    say(LOCAL_LINE)
    say(
        f"next: sparseeval predict --anchor-set {quoted(args.out)} --benchmark {quoted(name)}"
        " --responses answers.csv"
    )


__all__ = [
    "FIT_EXAMPLE",
    "MAX_SYNTHETIC_CELLS",
    "add_fit_command",
    "cmd_fit",
    "read_wide",
]
