"""Reported scores that the models' own items contradict, on the metabench data.

Every benchmark's responses (`wide:BM={bm}_responses_train.csv`) go into a fresh store in a
temporary folder, then two score files: the leaderboard's (`scores:open-llm-leaderboard.csv`)
and, in a second store, metabench's own full-benchmark scores (`{bm}_scores.csv`, written as
a long `model,benchmark,score` file in the temporary folder). Per benchmark it prints how
many rows each ingest quarantined as contradicted by the items and whether those rows are
good ones: a leaderboard row is *good* when it equals metabench's score of the same model
within 1 point (ARC, GSM8K, Winogrande: metabench's score is the leaderboard's metric; MMLU
is micro against the leaderboard's macro mean and TruthfulQA mc1 against mc2, so there no
row is called good by that test; there the row's own values are shown). Data:
../shared/data/metabench_reduced (never copied).

    python bench/targets_quarantine.py [--data DIR] [--out bench/out/targets_quarantine.txt]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import polars as pl

from sparseeval.pipeline.store import Store, ingest
from sparseeval.pipeline.store.kinds import source_from_spec

DATA = Path("/work/shared/data/metabench_reduced")
BENCHMARKS = ("arc", "gsm8k", "mmlu", "truthfulqa", "winogrande")
SAME_METRIC = ("arc", "gsm8k", "winogrande")  # metabench's score is the leaderboard's metric


def fill(store: Store, data: Path) -> None:
    for bm in BENCHMARKS:
        ingest(store, source_from_spec(f"wide:{bm}={data / f'{bm}_responses_train.csv'}"))


def own_scores(data: Path, folder: Path) -> Path:
    """metabench's own scores of the models with responses, as a long scores file."""
    frames = []
    for bm in BENCHMARKS:
        raw = pl.read_csv(data / f"{bm}_scores.csv", null_values=["NA"], infer_schema_length=None)
        frames.append(raw.filter(pl.col("split") == "train").select(
            "model", benchmark=pl.lit(bm), score=pl.col("score").cast(pl.String),
            definition=pl.lit("metabench full-benchmark score"),
        ))  # fmt: skip
    path = folder / "metabench_scores.csv"
    pl.concat(frames).unique(["model", "benchmark"], keep="first").write_csv(path)
    return path


def quarantined(store: Store) -> pl.DataFrame:
    """The contradicted rows: model, benchmark, reported value (percent), reason."""
    rows = store.con.execute("SELECT raw, reason FROM quarantine").fetchall()
    out = [(*raw.rsplit(",", 2), why) for raw, why in rows if "contradicts" in why]
    schema = dict.fromkeys(("model", "benchmark", "score", "reason"), pl.String)
    return pl.DataFrame(out, schema=schema, orient="row")


def truth(data: Path) -> pl.DataFrame:
    read = lambda bm: pl.read_csv(  # noqa: E731
        data / f"{bm}_scores.csv", null_values=["NA"], infer_schema_length=None
    )
    frames = [read(bm).select("model", benchmark=pl.lit(bm), metabench="score")
              for bm in BENCHMARKS]  # fmt: skip
    return pl.concat(frames).unique(["model", "benchmark"], keep="first")


def run(data: Path) -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, spec in (("leaderboard file", f"scores:{data / 'open-llm-leaderboard.csv'}"),
                            ("metabench's own scores", None)):  # fmt: skip
            with Store.open(Path(tmp) / f"{len(lines)}.duckdb") as store:
                fill(store, data)
                spec = spec or f"scores:{own_scores(data, Path(tmp))}"
                (report,) = ingest(store, source_from_spec(spec))
                lines += [f"## {label}", f"ingest: {report.line()}", ""]
                q = quarantined(store).join(truth(data), on=["model", "benchmark"], how="left")
                q = q.with_columns(score=pl.col("score").cast(pl.Float64))
                for bm in BENCHMARKS:
                    rows = q.filter(pl.col("benchmark") == bm)
                    same = (pl.col("score") - pl.col("metabench")).abs() <= 1
                    good = rows.filter(pl.col("benchmark").is_in(SAME_METRIC) & same)
                    zeros = rows.filter(pl.col("score") == 0).height
                    lines.append(f"{bm:<11} contradicted {rows.height:>3} (reported 0.0: {zeros});"
                                 f" of them equal to metabench's score within 1 point:"
                                 f" {good.height}")  # fmt: skip
                    others = rows.filter(pl.col("score") != 0)
                    for r in others.head(6).iter_rows(named=True):
                        lines.append(f"    {r['model']}: reported {r['score']:.1f}, metabench"
                                     f" {r['metabench']:.1f}; {r['reason']}")  # fmt: skip
                lines.append("")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    text = "\n".join(run(args.data)) + "\n"
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
