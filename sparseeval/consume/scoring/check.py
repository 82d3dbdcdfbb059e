"""A user's acceptance test of a set: score models it never saw, against their reported scores.

Pure Python + NumPy (the light install). Answers come as one table for many models: wide
(a `model` column and one column per item, 0/1, true/false or -1/+1; empty = not answered)
or long (columns `model,item,correct`), as `sparseeval ingest` reads them. Reported scores
come as `model,score`, `model,benchmark,score` (the benchmark's rows) or a leaderboard table
(models in `model` or `name`) with a column named after the benchmark; percent when any is
above 1, else fractions.
Models in the set's pool (`consume.sets.models`: its training, validation, calibration or
test models) are refused: the check is about models the set never saw.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from sparseeval.consume.answers.responses import ResponsesError, printable
from sparseeval.consume.scoring.conformal import inside
from sparseeval.consume.scoring.flags import SATURATED

LONG = ("model", "item", "correct")
SHOWN = 3  # model names shown per refusal line
# How each kind of flag line starts (`consume.scoring.flags`): range, answer pattern, saturation.
FLAG_KINDS = ("estimate ", "answer pattern", SATURATED)


def _rows(path: Path, ids: tuple[str, ...] = ("model",)) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of a UTF-8 CSV file (a BOM is fine), one clear line when it is not. The
    model's column is the first of `ids` the file has, read as `model`."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = [h.strip() for h in reader.fieldnames or []]
    except UnicodeDecodeError:
        raise ResponsesError(f"{printable(path)}: not UTF-8 text; save it as UTF-8") from None
    found = next((c for c in ids if c in header), None)
    if found is None:
        wanted = " or ".join(f"'{c}'" for c in ids)
        raise ResponsesError(f"{printable(path)}: no {wanted} column (has {', '.join(header[:6])})")
    rename = {found: "model"}
    header = [rename.get(h, h) for h in header]
    return header, [
        {rename.get(k.strip(), k.strip()): (v or "").strip() for k, v in r.items() if k}
        for r in rows
    ]


def read_answers(path: str | Path) -> dict[str, dict[str, str]]:
    """{model: {item: answer text}} of a wide or long answers table."""
    header, rows = _rows(Path(path))
    out: dict[str, dict[str, str]] = {}
    if set(LONG) <= set(header):
        for r in rows:
            out.setdefault(r["model"], {})[r["item"]] = r["correct"]
        return out
    items = [h for h in header if h != "model"]
    for r in rows:
        out.setdefault(r["model"], {}).update({i: r[i] for i in items if r.get(i, "") != ""})
    return out


def read_scores(path: str | Path, benchmark: str) -> tuple[dict[str, float], str]:
    """({model: score in [0, 1]}, a note on the scale) of a scores table (the leaderboard's
    file names its models in a `name` column)."""
    header, rows = _rows(Path(path), ("model", "name"))
    if "benchmark" in header and "score" in header:
        rows, col = [r for r in rows if r["benchmark"] == benchmark], "score"
    elif "score" in header or benchmark in header:
        col = "score" if "score" in header else benchmark
    else:
        raise ResponsesError(
            f"{printable(path)}: needs a score column: model,score, model,benchmark,score or a"
            f" column named {benchmark}"
        )
    out: dict[str, float] = {}
    for n, r in enumerate(rows, start=2):
        if r.get(col, "") == "":
            continue
        try:
            out[r["model"]] = float(r[col])
        except ValueError:
            why = f"{printable(path)}: line {n}: score {r[col]!r} is not a number"
            raise ResponsesError(why) from None
    top = max(out.values(), default=0.0)
    if top > 1:
        return {m: v / 100 for m, v in out.items()}, f"scores read as percent (max {top:g})"
    return out, "scores read as fractions (none above 1)"


@dataclass
class CheckResult:
    """What scoring the new models came to (accuracies as fractions)."""

    benchmark: str
    version: int
    level: float
    n: int = 0
    mae: float = float("nan")
    coverage: float = float("nan")
    bias: float = float("nan")  # mean of estimate - reported
    n_flagged: int = 0
    n_range: int = 0
    n_pattern: int = 0
    n_saturated: int = 0  # at the top (or bottom) of what the anchors can tell
    n_missed: int = 0  # reported score outside the interval
    n_missed_flagged: int = 0  # of those, flagged (a miss not flagged is the defect to avoid)
    coverage_flagged: float = float("nan")
    coverage_others: float = float("nan")
    scored_from: str = "anchors"  # "anchors", or "anchors+extra" (`extra_items=True`)
    n_extra_ignored: int = 0  # models with answers on other items, not used (anchors only)
    in_pool: list[str] = field(default_factory=list)
    no_answers: list[str] = field(default_factory=list)
    no_score: list[str] = field(default_factory=list)
    pool_known: bool = True
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """Strict JSON: a figure with nothing to measure (NaN) is null."""
        return {k: None if isinstance(v, float) and math.isnan(v) else v
                for k, v in asdict(self).items()}  # fmt: skip

    def nothing_checked(self) -> str:
        """Why no model was scored, and what to do (a set fit on all the data saw them all)."""
        if not self.in_pool:
            return "nothing to check: no model had both answers on the anchors and a score"
        return (
            "nothing to check: every model given is in the set's pool (it was fit, calibrated"
            " or tested on them; a set fit on all your data has no models it never saw). Hold"
            " models out: fit on part of them (sparseeval fit TRAIN.csv --targets SCORES.csv"
            " --out DIR) and check the rest (check --anchor-set DIR --responses REST.csv"
            " --scores SCORES.csv), or pass --scores and --responses of models outside the pool"
            " (e.g. newer ones)"
        )

    def lines(self) -> list[str]:
        """The check for a person: what was scored, refused, and how the set did."""
        out = [f"{self.benchmark} v{self.version}: {self.n} new model(s) scored", *self.notes]
        if not self.pool_known:
            out.append("note: the set does not list its models (written before sets did):"
                       " models it was fit or tested on cannot be told apart")  # fmt: skip
        for names, why in ((self.in_pool, "refused: in the set's train/test pool (it saw them)"),
                           (self.no_answers, "skipped: no answer on any anchor"),
                           (self.no_score, "skipped: no reported score")):  # fmt: skip
            if names:
                more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
                shown = ", ".join(printable(m) for m in names[:SHOWN])
                out.append(f"{len(names)} {why}: {shown}{more}")
        if not self.n:
            return [*out, self.nothing_checked()]
        level = f"{self.level:.0%}"
        out.append(f"MAE {100 * self.mae:.2f} points; {level} interval coverage"
                   f" {self.coverage:.1%}; mean signed error (estimate - reported)"
                   f" {100 * self.bias:+.2f} points")  # fmt: skip
        flagged = f"flagged {self.n_flagged} ({self.n_flagged / self.n:.1%}): {self.n_range} by"
        flagged += f" range, {self.n_pattern} by answer pattern, {self.n_saturated} at the top"
        flagged += " or bottom of what these anchors can tell (one model may have several)"
        if self.n_flagged:
            flagged += f"; coverage of the flagged {self.coverage_flagged:.1%}"
            flagged += (f", of the others {self.coverage_others:.1%}" if self.n_flagged < self.n
                        else " (every model was flagged)")  # fmt: skip
        out.append(flagged)
        out.append(f"missed {self.n_missed} (reported score outside the interval), of them"
                   f" flagged {self.n_missed_flagged}, not flagged"
                   f" {self.n_missed - self.n_missed_flagged}")  # fmt: skip
        return out


def check_models(
    aset,
    answers: Mapping[str, Mapping],
    scores: Mapping[str, float],
    pool: set[str] | None,
    extra_items: bool = False,
) -> CheckResult:
    """Score each model of `answers` that has a score and is not in `pool` (None: unknown):
    from its anchor answers alone, what the set's interval is about, unless `extra_items`
    (its answers on the benchmark's other items then correct the estimate, as `predict`
    does; with every item answered that is the items' own mean, not the anchors' test)."""
    res = CheckResult(aset.benchmark, aset.version, aset.level, pool_known=pool is not None,
                      scored_from="anchors+extra" if extra_items else "anchors")  # fmt: skip
    anchors, rows = set(aset.items), []
    for model in sorted(answers):
        if pool is not None and model in pool:
            res.in_pool.append(model)
        elif model not in scores:
            res.no_score.append(model)
        elif not anchors & {str(i) for i, v in answers[model].items() if v not in ("", None)}:
            res.no_answers.append(model)
        else:
            given = answers[model]
            read = given if extra_items else {i: v for i, v in given.items() if str(i) in anchors}
            res.n_extra_ignored += len(read) < len(given)
            try:
                est = aset.predict(read, allow_missing=True)
            except ResponsesError as e:
                raise ResponsesError(f"model {printable(model)}: {e}") from None
            kinds = [any(f.startswith(k) for f in est.flags) for k in FLAG_KINDS]
            rows.append((est.value, est.low, est.high, scores[model], bool(est.flags), *kinds))
    if rows:
        _summarize(res, np.array(rows, dtype=np.float64))
    res.notes.append(_scored_from(res))
    return res


def _scored_from(res: CheckResult) -> str:
    """The line saying what was scored: the anchors' estimate, or with the extra items'."""
    if res.scored_from != "anchors":
        return ("scored with the answers on the benchmark's other items correcting the anchors'"
                " estimate (as predict does); with every item answered that is the items' own"
                " mean, not a test of the anchors")  # fmt: skip
    line = "scored from the anchors' answers alone, the set's own estimate"
    if not res.n_extra_ignored:
        return line
    return (f"{line} ({res.n_extra_ignored} model(s) also answered other items, not used;"
            " --extra-items scores as predict does with them)")  # fmt: skip


def _summarize(res: CheckResult, a: np.ndarray) -> None:
    value, low, high, true, flagged, by_range, by_pattern, saturated = a.T
    covered, flagged = inside(low, high, true), flagged > 0
    res.n_saturated, res.n_pattern = int((saturated > 0).sum()), int((by_pattern > 0).sum())
    res.n_missed = int((~covered).sum())
    res.n_missed_flagged = int((~covered & flagged).sum())
    res.n = len(a)
    res.mae = float(np.abs(value - true).mean())
    res.bias = float((value - true).mean())
    res.coverage = float(covered.mean())
    res.n_flagged, res.n_range = int(flagged.sum()), int((by_range > 0).sum())
    if flagged.any():
        res.coverage_flagged = float(covered[flagged].mean())
    if (~flagged).any():
        res.coverage_others = float(covered[~flagged].mean())


__all__ = ["CheckResult", "check_models", "read_answers", "read_scores"]
