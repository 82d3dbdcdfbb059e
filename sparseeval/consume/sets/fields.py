"""Every field a published manifest may hold, the shape check its readers rely on, and the
typed value they read (`Manifest`).

One table, `MANIFEST` (top-level fields), with sub-tables for the predictor, the interval
(its adaptive bands and coverage check), the pool check, the items' sources and the suite's
member readers. `check_fields` runs the check of every field present and says the first
that fails in one `AnchorSetError` line, naming the field; a field this library does not
know is left alone (a newer writer's). A field the writer adds without a check here fails
tests/consume/test_manifest_fields.py, which walks written manifests. Drift rows (report
input and the artifacts' drift history) are checked here too (`drift_row_problem`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from sparseeval.consume.answers.responses import ITEM_SCALES, printable
from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.sets.layout import AnchorSetError

Items = Sequence[str] | None  # the anchors the lengths refer to (None: not known here)
Check = Callable[[Any, Items], None]  # raises FieldProblem


class FieldProblem(SparseEvalError, ValueError):
    """A field that is not what readers need: its path and what is wrong."""

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.path = message, path


def _got(v: Any) -> str:
    return printable(repr(v))[:40]


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def number(lo: float = -math.inf, hi: float = math.inf, *, open_lo: bool = False,
           null: bool = False) -> Check:  # fmt: skip
    """A finite number in [lo, hi] ((lo, hi] with `open_lo`); None too with `null`."""
    side = "(" if open_lo else "["

    def check(v: Any, items: Items) -> None:
        if v is None and null:
            return
        if not _finite(v) or v < lo or v > hi or (open_lo and v == lo):
            span = "" if math.isinf(lo) and math.isinf(hi) else f" in {side}{lo:g}, {hi:g}]"
            raise FieldProblem(f"must be a finite number{span}, got {_got(v)}")

    return check


def integer(lo: int = 0, *, null: bool = False) -> Check:
    def check(v: Any, items: Items) -> None:
        if v is None and null:
            return
        if type(v) is not int or v < lo:
            raise FieldProblem(f"must be an integer >= {lo}, got {_got(v)}")

    return check


def text(*, null: bool = False, one_of: tuple[str, ...] = ()) -> Check:
    def check(v: Any, items: Items) -> None:
        if v is None and null:
            return
        if not isinstance(v, str) or (one_of and v not in one_of):
            want = " (" + " or ".join(one_of) + ")" if one_of else ""
            raise FieldProblem(f"must be text{want}, got {_got(v)}")

    return check


def anything(v: Any, items: Items) -> None:
    """A field readers take as it is (shown, never computed with)."""


def listing(of: Check, *, length: int | str | None = None, ascending: bool = False,
            null: bool = False) -> Check:  # fmt: skip
    """A list whose entries pass `of`; `length` a count, or "items" (one per anchor)."""

    def check(v: Any, items: Items) -> None:
        if v is None and null:
            return
        if not isinstance(v, list):
            raise FieldProblem(f"must be a list, got {_got(v)}")
        n = len(items) if length == "items" and items is not None else length
        if isinstance(n, int) and len(v) != n:
            raise FieldProblem(f"must have {n} entries, has {len(v)}")
        for i, entry in enumerate(v):
            _at(str(i), of, entry, items)
        if ascending and any(b < a for a, b in pairwise(v)):
            raise FieldProblem("must be in ascending order")

    return check


class Table:
    """An object: its known `fields` pass their checks, `required` ones are present, `rule`
    (on the whole object and the anchors) says nothing; `each`: the check of every other
    value (a map by id). `scoped=False`: lengths are not checked against these anchors."""

    def __init__(
        self, fields: Mapping[str, Check], required: tuple[str, ...] = (), *,
        rule: Callable[[Mapping, Items], str | None] | None = None, null: bool = False,
        each: Check | None = None, scoped: bool = True,
    ) -> None:  # fmt: skip
        self.fields, self.required, self.rule = dict(fields), required, rule
        self.null, self.each, self.scoped = null, each, scoped

    def __call__(self, v: Any, items: Items) -> None:
        if v is None and self.null:
            return
        if not isinstance(v, Mapping):
            raise FieldProblem(f"must be an object, got {_got(v)}")
        items = items if self.scoped else None
        for name in self.required:
            if name not in v:
                raise FieldProblem("is missing", (name,))
        for name, value in v.items():
            sub = self.fields.get(name, self.each)
            if sub is not None:
                _at(str(name), sub, value, items)
        if self.rule is not None and (problem := self.rule(v, items)):
            raise FieldProblem(problem)

    def unscoped(self) -> Table:
        """This table without the anchors' count (a suite member's lengths are checked as
        the member is read, against its own anchors)."""
        return Table(self.fields, self.required, rule=self.rule, null=self.null,
                     each=self.each, scoped=False)  # fmt: skip


table = Table


def _at(name: str, check: Check, value: Any, items: Items) -> None:
    try:
        check(value, items)
    except FieldProblem as p:
        raise FieldProblem(p.message, (name, *p.path)) from None


def _in_order(low: str, high: str) -> Callable[[Mapping, Items], str | None]:
    def rule(d: Mapping, items: Items) -> str | None:
        lo, hi = d.get(low), d.get(high)
        if _finite(lo) and _finite(hi) and lo > hi:
            return f"has {low} {lo:g} above {high} {hi:g}"
        return None

    return rule


def _bands(d: Mapping, items: Items) -> str | None:
    edges, qs = d.get("edges"), d.get("quantiles")
    if isinstance(edges, list) and isinstance(qs, list) and len(qs) != len(edges) + 1:
        return f"has {len(qs)} quantiles for {len(edges) + 1} bands"
    return None


def _ramp(d: Mapping, items: Items) -> str | None:
    ramp = [d.get(k) for k in ("near", "full")]
    if ramp.count(None) == 1:
        return "has one of near and full without the other"
    near, full, up, start = [*ramp, d.get("up"), d.get("start")]
    numbers = all(isinstance(x, (int, float)) for x in (near, full, up, start))
    if near is not None and numbers and (near > up or full < start):
        return f"ramps from near {near} to up {up} between {start} and {full}"
    return None


def _anchors_only(d: Mapping, items: Items) -> str | None:
    stray = [k for k in d if items is not None and k not in set(items)]
    return f"names {_got(stray[0])}, which is not an anchor" if stray else None


SOURCE = table({"task": text(), "doc_id": integer(0), "hash": text(), "id_kind": text()})
SOURCES = table({}, each=SOURCE, rule=_anchors_only, null=True)
SPREAD = table(
    {"coef": listing(number(), length=3), "floor": number(0, open_lo=True), "low": number(),
     "high": number()},
    ("coef", "floor", "low", "high"), rule=_in_order("low", "high"),
)  # fmt: skip
ADAPTIVE = table(
    {"spread": SPREAD, "edges": listing(number(), ascending=True),
     "quantiles": listing(number(0, null=True))},
    ("spread", "edges", "quantiles"), rule=_bands, null=True,
)  # fmt: skip
COVERAGE_CHECK = table(
    {"coverage_before": number(0, 1), "coverage_after": number(0, 1),
     "standard_error": number(0, 1),
     "action": text(one_of=("kept", "widened")), "reason": text()},
    ("coverage_before", "action"), null=True,
)  # fmt: skip
INTERVAL = table(
    {"method": text(), "level": number(0, 1, open_lo=True), "halfwidth": number(0, null=True),
     "diff_halfwidth": number(0, null=True), "n_calibration": integer(0),
     "adaptive": ADAPTIVE, "calibration_coverage": number(0, 1, null=True),
     "calibrated_on": text(), "missing_answers": text(),
     "test_coverage": number(0, 1, null=True), "n_test": integer(0),
     "coverage_check": COVERAGE_CHECK},
    ("level",),
)  # fmt: skip
EDGE = table({"start": number(), "down": number(0), "up": number(0), "n_models": integer(0),
               "near": number(0), "full": number()},
              ("start", "down", "up"), rule=_ramp)  # fmt: skip
_SATURATION = ("top", "peak", "bottom", "trough", "ceiling", "floor", "best", "worst")
SATURATION = table(
    {k: number(0, 1) for k in _SATURATION}  # flags.Saturation
    | {"rates": listing(number(0, 1), length="items")},
    _SATURATION,
)
POOL_CHECK = table(
    {"method": text(), "low": number(), "high": number(), "margin": number(0),
     "a": listing(number(), length="items"), "b": listing(number(), length="items"),
     "threshold": number(), "rate": number(0, 1, open_lo=True), "widen": number(1),
     "n_models": integer(0), "edges": table({"top": EDGE}), "saturation": SATURATION},
    ("low", "high", "margin", "a", "b", "threshold", "rate", "widen"),
    rule=_in_order("low", "high"), null=True,
)  # fmt: skip
METRICS = table({}, each=table({}, each=number(null=True)))
PREDICTOR = table(
    {"name": text(null=True), "valid_mae": anything, "folder": text(),
     "anchor_means": listing(number(), length="items", null=True)},
    ("folder",),
)  # fmt: skip
ITEM_CURVES = table(
    {"folder": text(), "n_items": integer(1), "item_mean": anything,
     "item_map": table({"a": number(), "b": number(), "rmse": number(0)}, ("a", "b", "rmse"),
                       null=True)},
    ("folder", "n_items"), null=True,
)  # fmt: skip
READER = table(  # its folder: `shape.reader_folder`, as the member is read
    {"folder": anything, "interval": INTERVAL, "anchor_means": listing(number(), null=True),
     "pool_check": POOL_CHECK.unscoped(), "item_sources": SOURCES.unscoped(),
     "item_curves": ITEM_CURVES},
    ("folder", "interval"),
)  # fmt: skip
MEMBER = table(
    {"items": listing(text()), "reader": text(), "valid_mae": anything, "joint": READER,
     "own": READER, "item_scale": text(one_of=ITEM_SCALES)},
    ("items", "joint", "own"),
)  # fmt: skip
SUITE = table(
    {"benchmarks": listing(text()), "members": table({}, each=MEMBER), "test_metrics": METRICS,
     "matrices_key": text()},
    ("members",),
)  # fmt: skip
MANIFEST: dict[str, Check] = {
    "schema_version": integer(1), "kind": text(), "benchmark": text(),
    "library_version": text(), "items": listing(text()), "item_sources": SOURCES,
    "n_anchors": integer(1), "item_scale": text(one_of=ITEM_SCALES),
    "data_fingerprint": text(), "split_sizes": table({}, each=integer(0)),
    "predictor": PREDICTOR, "metrics": METRICS, "interval": INTERVAL,
    "settings": table({}), "target": table({}, each=text(null=True)),
    "provenance": table({}), "pool_check": POOL_CHECK, "suite": SUITE, "version": integer(1),
    "created": text(), "files": table({}, each=text()), "manifest_sha256": text(),
    "item_curves": ITEM_CURVES,
}  # fmt: skip
REQUIRED = ("benchmark", "items", "predictor", "interval", "version")
# `item_scale`: how the answers are read (`consume.answers.responses.sign`); absent (a set
# published before graded items): binary.


def _n_anchors(m: Mapping, items: Items) -> str | None:
    n = m.get("n_anchors")
    if type(n) is int and items is not None and n != len(items):
        return f"n_anchors is {n}, but the manifest lists {len(items)} items"
    return None


MANIFEST_TABLE = table(MANIFEST, REQUIRED, rule=_n_anchors)
MEMBER_READER = table(
    {"items": listing(text()), "folder": text(), "interval": INTERVAL,
     "anchor_means": listing(number(), length="items", null=True), "pool_check": POOL_CHECK,
     "item_sources": SOURCES, "item_curves": ITEM_CURVES},
    ("items", "folder", "interval"),
)  # fmt: skip


def check_fields(where: object, manifest: Mapping, schema: Check | None = None) -> None:
    """Every known field of `manifest` is what readers need; else one AnchorSetError line.

    schema: `MANIFEST_TABLE` (default), or `MEMBER_READER` for one suite member's reader
    with its own items (`{"items": [...]} | reader`)."""
    items = manifest.get("items")
    items = items if isinstance(items, list) else None
    try:
        (schema or MANIFEST_TABLE)(manifest, items)
    except FieldProblem as p:
        field = ".".join(p.path)
        raise AnchorSetError(
            f"{printable(where)}: manifest field {field or '(top)'} {p.message}; the set is"
            " damaged or hand-edited"
        ) from None


@dataclass(frozen=True)
class PredictorEntry:
    """The manifest's `predictor`: where its reader is and what it needs."""

    folder: str
    name: str | None = None
    anchor_means: tuple[float, ...] | None = None  # centring of the anchor answers


@dataclass(frozen=True)
class Target:
    """The manifest's `target`: what the set estimates."""

    kind: str | None = None  # "items" (the items' mean) or "reported" (a reported score)
    definition: str = ""
    note: str = ""


@dataclass(frozen=True, eq=False)
class Manifest:
    """A published set's manifest as readers use it: typed fields, checked once.

    `Manifest.read(where, d)` checks every field (`check_fields`: one AnchorSetError line
    naming the bad field) and builds it; readers use the attributes (`items` are the anchor
    ids). `raw` is the manifest as written (its seal covers exactly that); fields without an
    attribute read by key (`manifest["metrics"]`, `.get`, `in`, `keys()`, `to_dict()`).
    """

    benchmark: str
    items: tuple[str, ...]
    version: int
    predictor: PredictorEntry
    interval: Mapping[str, Any]
    item_scale: str = "binary"
    item_sources: Mapping[str, Any] | None = None
    target: Target = field(default_factory=Target)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    pool_check: Mapping[str, Any] | None = None
    item_curves: Mapping[str, Any] | None = None
    suite: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls, where: object, manifest: Mapping[str, Any], schema: Check | None = None,
             checked: bool = False) -> Manifest:  # fmt: skip
        """The typed manifest of `manifest` once its fields pass (`check_fields` with
        `schema`; `checked`: the caller checked them, or built them itself)."""
        if isinstance(manifest, Manifest):
            return manifest
        if not checked:
            check_fields(where, manifest, schema)
        d = manifest
        pred, target = d.get("predictor") or {}, d.get("target") or {}
        means = pred.get("anchor_means")
        return cls(
            benchmark=d.get("benchmark", ""), items=tuple(d.get("items") or ()),
            version=int(d.get("version") or 0),
            predictor=PredictorEntry(pred.get("folder", ""), pred.get("name"),
                                     None if means is None else tuple(means)),
            interval=d.get("interval") or {}, item_scale=d.get("item_scale") or "binary",
            item_sources=d.get("item_sources"),
            target=Target(target.get("kind"), target.get("definition") or "",
                          target.get("note") or ""),
            provenance=d.get("provenance") or {}, pool_check=d.get("pool_check"),
            item_curves=d.get("item_curves"), suite=d.get("suite"), raw=d,
        )  # fmt: skip

    @property
    def synthetic(self) -> bool:
        """Whether the set was fit on the built-in synthetic demo leaderboard."""
        return bool(self.provenance.get("synthetic"))

    def to_dict(self) -> dict[str, Any]:
        """The manifest as written (a plain dict: JSON-ready)."""
        return dict(self.raw)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def keys(self) -> Iterator[str]:
        return iter(self.raw.keys())

    def __contains__(self, key: object) -> bool:
        return key in self.raw

    def __eq__(self, other: object) -> bool:
        raw = other.raw if isinstance(other, Manifest) else other
        return isinstance(raw, Mapping) and dict(self.raw) == dict(raw)

    __hash__ = None  # type: ignore[assignment]


DRIFT_ROW = table(
    {"version": integer(1), "mae": number(0), "n_models": integer(0), "drift": anything,
     "date": text()},
    ("version", "mae", "n_models"),
)  # fmt: skip


def drift_row_problem(row: Any) -> str | None:
    """Why `row` is not a drift check ({version, mae, n_models[, drift, date]}), or None."""
    try:
        DRIFT_ROW(row, None)
    except FieldProblem as p:
        return " ".join(filter(None, (".".join(p.path), p.message)))
    if "drift" in row and not isinstance(row["drift"], bool):
        return "drift must be true or false"
    return None


__all__ = [
    "ADAPTIVE",
    "COVERAGE_CHECK",
    "DRIFT_ROW",
    "EDGE",
    "INTERVAL",
    "ITEM_CURVES",
    "MANIFEST",
    "MANIFEST_TABLE",
    "MEMBER",
    "MEMBER_READER",
    "METRICS",
    "POOL_CHECK",
    "PREDICTOR",
    "READER",
    "REQUIRED",
    "SATURATION",
    "SOURCE",
    "SOURCES",
    "SPREAD",
    "SUITE",
    "Check",
    "FieldProblem",
    "Items",
    "Manifest",
    "PredictorEntry",
    "Table",
    "Target",
    "anything",
    "check_fields",
    "drift_row_problem",
    "integer",
    "listing",
    "number",
    "table",
    "text",
]
