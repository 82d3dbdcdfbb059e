"""The consumer API: load a published anchor set, verify it, estimate accuracies (NumPy only).

anchors = load_anchor_set(".sparseeval/published", "arc")
anchors.predict({item: 1 for item in anchors.items})   # Estimate with a 90% interval
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.answers.ids import IdError, check_benchmark_name
from sparseeval.consume.answers.responses import (
    GRADED,
    ResponsesError,
    as_pairs,
    item_id,
    printable,
    sign,
)
from sparseeval.consume.answers.vector import anchor_vector, missing_message, none_of_the_anchors
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.scoring.estimate import Difference, Estimate
from sparseeval.consume.scoring.flags import PoolCheck, bounds, in_top_zone, pool_check_of
from sparseeval.consume.scoring.missing import fill_missing
from sparseeval.consume.scoring.next_items import (
    DEFAULT_STRATEGY,
    IDENTITY,
    ItemCurves,
    abilities,
    anchor_spread,
    choose,
    correct,
    items_for_width,
    misjudged,
    positions,
)
from sparseeval.consume.sets.about import data_sources
from sparseeval.consume.sets.fields import Manifest
from sparseeval.consume.sets.files import checked_manifest, fetch, load_curves, load_predictor
from sparseeval.consume.sets.layout import LATEST, AnchorSetError
from sparseeval.consume.sets.shape import check_estimate

ALLOW_MISSING = "allow_missing=True"  # as the error says it (the CLI says its flag instead)


def load_anchor_set(
    path_or_repo: str | Path,
    benchmark: str,
    version: int | str = LATEST,
    hub_client=None,
    revision: str | None = None,
    budget: int | None = None,
    public_key=None,
) -> AnchorSet:
    """Load and verify a published anchor set from a folder or a Hub dataset repo id.

    `path_or_repo`: the published root (`.../published`), a benchmark folder, a
    version folder, or a Hub dataset repo id (`owner/name` or `hf://datasets/owner/name`)
    when no such local path exists. Every file's sha256 and the manifest's own seal
    are checked, every file in the version folder must be listed, nothing may lead
    outside it and symlinks are refused; a newer schema than this library reads is
    refused. Locally, only a promoted version loads (one `latest` points or pointed to).
    `budget` picks one of several published budgets (default: the largest); `revision`
    pins a Hub commit. `public_key` (Ed25519, PEM bytes/str or a path to a PEM file):
    refuse the set unless its `manifest.sig` verifies with it, and follow `latest` only when
    the pointer verifies too (a rewritten pointer would roll you back); needs `cryptography`.
    Trust model: `sparseeval.consume.sets.layout`.
    """
    try:
        check_benchmark_name(benchmark)
    except IdError as exc:
        raise AnchorSetError(str(exc)) from None
    folder, source, hub = fetch(
        path_or_repo, benchmark, version, hub_client, revision, budget, public_key
    )
    manifest = checked_manifest(folder, benchmark, hub, public_key)
    aset = AnchorSet(manifest=manifest, predictor=load_predictor(folder, manifest), source=source,
                     folder=folder, curves=load_curves(folder, manifest))  # fmt: skip
    aset.check_predictor()
    return aset


@dataclass
class AnchorSet:
    """A loaded, verified anchor set: the anchor items and a predictor over their answers."""

    manifest: Manifest  # a plain dict is read (and checked) into one
    predictor: Any
    source: str = ""
    folder: Path | None = None
    curves: ItemCurves | None = None  # every item of the benchmark and its curve
    _index: dict = field(default_factory=dict, repr=False)
    _pool: PoolCheck | None = field(default=None, repr=False)
    _all: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # a dict given here is the caller's own; `load_anchor_set` checks what it reads
        self.manifest = Manifest.read(self.source, self.manifest, checked=True)
        self._index = {item: j for j, item in enumerate(self.items)}
        if self.curves is not None:
            self._all = {item: j for j, item in enumerate(self.curves.items)}
        try:
            self._pool = pool_check_of(self.manifest, len(self.items))
        except (KeyError, TypeError, ValueError) as e:
            raise AnchorSetError(f"{printable(self.source)}: bad pool check ({e})") from None

    @property
    def items(self) -> list[str]:
        """Anchor item ids in the order the predictor reads them."""
        return list(self.manifest.items)

    @property
    def benchmark(self) -> str:
        return self.manifest.benchmark

    @property
    def graded(self) -> bool:
        """Whether the set's items are graded (manifest `item_scale`; absent: binary)."""
        return self.manifest.item_scale == GRADED

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def level(self) -> float:
        return float(self.manifest.interval["level"])

    @property
    def conformal(self) -> ConformalInterval:
        return ConformalInterval.from_dict(self.manifest.interval)

    @property
    def pool_check(self) -> PoolCheck | None:
        """Whether a model is unlike the training pool (None: the set predates the check)."""
        return self._pool

    @property
    def item_sources(self) -> dict | None:
        return self.manifest.item_sources

    @property
    def target(self) -> str:
        """What the set estimates, in words ("" for sets published before this was recorded)."""
        return self.manifest.target.definition

    @property
    def data(self) -> str:
        """Where the set's results came from, in words ("" when not recorded)."""
        return data_sources(self.manifest.provenance)

    @property
    def synthetic(self) -> bool:
        """Whether the set was fit on the built-in synthetic demo leaderboard."""
        return self.manifest.synthetic

    def check_predictor(self) -> None:
        """The predictor reads exactly the manifest's anchors and returns one value per model."""
        k = len(self.items)
        try:
            out = np.asarray(self.predictor.predict(np.zeros((2, k), dtype=np.float32)))
        except Exception as e:
            raise AnchorSetError(
                f"{printable(self.source)}: predictor does not accept the {k} anchors of the "
                f"manifest ({printable(e)})"
            ) from e
        if out.shape != (2,):
            raise AnchorSetError(
                f"{printable(self.source)}: predictor output has shape {out.shape}"
            )

    # -- single model

    @property
    def known_items(self) -> list[str]:
        """Every item the set can read: the anchors, then the benchmark's other items."""
        extra = [i for i in (self.curves.items if self.curves else ()) if i not in self._index]
        return self.items + extra

    @property
    def all_item_sources(self) -> dict | None:
        """Task, doc id and hash of every known item, where known (the anchors' first)."""
        merged = dict((self.curves.sources if self.curves else None) or {})
        return (merged | dict(self.item_sources or {})) or None

    def predict(self, responses, allow_missing: bool = False) -> Estimate:
        """Estimate one model's full-benchmark accuracy from its answers.

        responses: {item id: correct}, a polars/pandas DataFrame with columns
        `item` and `correct`, or a sequence/array in anchor order (`.items`).
        correct: 0/1, True/False or -1/+1 (None/NaN = not answered). A missing anchor is
        an error naming it unless `allow_missing=True` (`consume.scoring.missing.MISSING_POLICY`
        says how the interval widens). Answers on the benchmark's other items (`next_items`)
        correct the anchor estimate: the unbiased difference estimate from this model's
        residuals on them, combined with the anchor estimate by their spreads (the anchors'
        from this interval, trusted less where the model is flagged or in the top edge's
        zone), with the combined interval (`consume.scoring.next_items`); other items are
        ignored.
        """
        est, _ = self._estimate(responses, allow_missing)
        return self.corrected(est, responses)

    def next_items(
        self, responses=None, n: int = 30, strategy: str = DEFAULT_STRATEGY, seed: int | None = 0
    ) -> list[str]:
        """`n` item ids of the benchmark, neither anchors nor answered, to answer next.

        strategy "random" (the default): a random sample of the rest, which keeps the
        corrected estimate of `predict` unbiased on any model; "informative": the items
        this model is least sure of given its anchor answers (measured in
        bench/next_items.py). Answer them and pass every answer to `predict`.
        """
        curves = self._need_curves()
        known = self._answered_positions(responses)
        candidates = np.setdiff1d(np.arange(len(curves.items)), known)
        theta = None if strategy == DEFAULT_STRATEGY else self._ability(responses)
        picked = choose(curves, candidates, n, strategy, theta, seed)
        return [curves.items[j] for j in picked]

    def items_needed(self, responses, width: float) -> int | None:
        """How many more items (`next_items`) would bring the interval to `width` (0-1).

        Guessed from this model's curves (their p(1-p) stands for the residuals' variance);
        None when the set has no item curves or its target does not follow the items' mean.
        """
        line = self.curves and self.curves.target_map
        if line is None:
            return None
        p = self.curves.probabilities(self._ability(responses))[0]
        rest = np.setdiff1d(np.arange(len(self.curves.items)), positions(self.curves, self.items))
        answered = len(self._extra(responses)[0])
        total = items_for_width(self.curves, len(self.items), p[rest], answered,
                                width / line.b, self.level, self.curves.w[rest])  # fmt: skip
        return None if total is None else max(total - answered, 0)

    def items_left(self, responses) -> int:
        """How many of the benchmark's items are neither anchors nor answered (0 without curves)."""
        if self.curves is None:
            return 0
        return len(self.curves.items) - len(self.items) - len(self._extra(responses)[0])

    def _ability(self, responses) -> float:
        """This model's ability on the curves, from its anchor estimate and answers."""
        answers = {} if responses is None else responses
        est, _ = self._estimate(answers, allow_missing=True)
        x = self._vector(answers)
        answered = ~np.isnan(x)
        anchors = positions(
            self.curves, [i for i, a in zip(self.items, answered, strict=True) if a]
        )
        value = (self.curves.target_map or IDENTITY).to_items(est.value)  # the items' mean
        return float(abilities(self.curves, anchors, (x[answered][None, :] + 1) / 2, [value])[0])

    def _need_curves(self) -> ItemCurves:
        if self.curves is None:
            raise AnchorSetError(
                f"{printable(self.source)}: this set has no list of the benchmark's items"
                " (published before next items); refit it to ask for more items"
            )
        return self.curves

    def _answered_positions(self, responses) -> np.ndarray:
        """Positions (in the curves' list) of the anchors and of every answered item."""
        curves = self._need_curves()
        extra, _ = self._extra(responses)
        return np.union1d(positions(curves, self.items), extra).astype(int)

    def _extra(self, responses) -> tuple[np.ndarray, np.ndarray]:
        """Positions and 0/1 answers of answered items of the benchmark that are not anchors."""
        pairs = as_pairs(responses) if responses is not None else None
        if pairs is None or self.curves is None:
            return np.zeros(0, int), np.zeros(0)
        got: dict[int, float] = {}
        for item, v in pairs:
            name = item_id(item, "answers")
            j = self._all.get(name)
            if j is None or name in self._index:
                continue
            s = sign(v, str(item), self.graded)
            if np.isnan(s):
                continue
            if got.get(j, s) != s:
                raise ResponsesError(f"conflicting answers for item {printable(item)}")
            got[j] = s
        idx = np.array(sorted(got), dtype=int)
        return idx, (np.array([got[j] for j in idx], dtype=float) + 1) / 2

    def corrected(self, est: Estimate, responses) -> Estimate:
        """`est` corrected by the answers on extra items (unchanged when there are none);
        a suite corrects its joint readers' estimates with each benchmark's own set."""
        extra, answers = self._extra(responses)
        if not len(extra):
            return est
        line = self.curves.target_map
        if est.missing or line is None:
            why = ("anchors are missing" if est.missing else
                   "the set's target does not follow the mean over its items")  # fmt: skip
            return replace(est, note=f"{len(extra)} extra items not used: {why}")
        x = self._vector(responses)
        spread = float(anchor_spread(est.value, est.low, est.high, self.level)) / line.b
        off = misjudged(bool(est.flags), in_top_zone(self._pool, est.value)[0])
        c = correct(self.curves, positions(self.curves, self.items), (x + 1) / 2,
                    line.to_items(est.value), extra, answers, spread, float(off))  # fmt: skip
        c = line.on_target(c)
        low, high = c.interval(self.level)
        c = c.within(low, high)
        check_estimate(self.source, c.value, low, high)
        anchors = (est.value, est.low, est.high)
        return replace(est, value=c.value, low=low, high=high, correction=c.as_dict(anchors))

    def compare(self, responses_a, responses_b, allow_missing: bool = False) -> Difference:
        """Estimated accuracy of model A minus model B, with an interval at the set's level."""
        ea, spread_a = self._estimate(responses_a, allow_missing)
        eb, spread_b = self._estimate(responses_b, allow_missing)
        conf = self.conformal
        d, low, high = conf.difference(ea.value, eb.value, extra=spread_a + spread_b)
        return Difference(d, low, high, self.level, conf.diff_halfwidth, ea, eb)

    # -- many models

    def predict_matrix(self, values_pm1, item_ids: Sequence[str]) -> np.ndarray:
        """Estimates for many models at once from a models x items matrix.

        values_pm1: +-1 (or 0/1, bool) matrix whose columns are `item_ids`; only the
        anchor columns are read, in anchor order. Every anchor must be a column.
        """
        XA = self._anchor_matrix(values_pm1, item_ids)
        return np.asarray(self.predictor.predict(XA), dtype=np.float64)

    def intervals(self, preds, values_pm1=None, item_ids=None) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) arrays for predictions from `predict_matrix`: the interval `predict`
        gives each model from its anchor answers (`consume.scoring.flags.interval_of`: widened where
        flagged, the top edge; answers on more items correct `predict`'s, not these).

        values_pm1, item_ids: the matrix the predictions came from (its anchor answers say
        which models the pool check flags); required when the set has a pool check.
        """
        if values_pm1 is None and self._pool is not None:
            raise ResponsesError(
                "intervals: pass the answers matrix and its item ids too (the set's pool check"
                " widens the intervals of models it flags)"
            )
        XA = None if values_pm1 is None else self._anchor_matrix(values_pm1, item_ids)
        low, high, _ = bounds(self._pool, self.conformal, XA, preds)
        return low, high

    def _anchor_matrix(self, values_pm1, item_ids: Sequence[str] | None) -> np.ndarray:
        """The anchor columns of a models x items matrix, in anchor order, as +-1 float32."""
        cols = {str(i): j for j, i in enumerate(() if item_ids is None else item_ids)}
        missing = [i for i in self.items if i not in cols]
        if missing:
            raise ResponsesError(missing_message(missing, len(self.items), "matrix columns"))
        X = np.asarray(values_pm1)
        if X.ndim != 2 or X.shape[1] != len(cols):
            raise ResponsesError(
                f"matrix has shape {X.shape}, expected (models, {len(cols)}) for the item ids"
            )
        XA = X[:, [cols[i] for i in self.items]].astype(np.float32)
        if XA.size and XA.min() >= 0 and not self.graded:  # 0/1 coding (graded: 2*score - 1)
            XA = 2 * XA - 1
        return XA

    # -- internals

    def _estimate(self, responses, allow_missing: bool) -> tuple[Estimate, float]:
        x = self._vector(responses)
        value, spread, missing = self._point(x, allow_missing)
        flags = self._pool.reasons(x, value) if self._pool else ()
        one = bounds(self._pool, self.conformal, x[None, :], [value], spread)
        low, high, widen = (float(a[0]) for a in one)
        spread += widen
        check_estimate(self.source, value, low, high)
        k = len(self.items)
        est = Estimate(
            value, low, high, self.level, self.benchmark, self.version, n_anchors=k,
            n_answered=k - len(missing), missing=tuple(missing), imputed=bool(missing),
            target=self.target, synthetic=self.synthetic, data=self.data, flags=flags,
        )  # fmt: skip
        return est, spread

    def _predict_one(self, x: np.ndarray) -> float:
        return float(self.predictor.predict(x[None, :].astype(np.float32))[0])

    def _point(self, x: np.ndarray, allow_missing: bool) -> tuple[float, float, list[str]]:
        """(estimate, interval widening, missing anchors) from a +-1 vector with NaN gaps."""
        miss = np.isnan(x)
        missing = [self.items[j] for j in np.flatnonzero(miss)]
        if miss.all():  # nothing to estimate from, whatever --allow-missing says
            raise ResponsesError(
                f"no answers on any of the {len(self.items)} anchors (an empty answers file?);"
                " `sparseeval anchors --template FILE` writes the ids to answer"
            )
        if missing and not allow_missing:
            raise ResponsesError(
                missing_message(missing, len(self.items), "answers")
                + f"; pass {ALLOW_MISSING} to estimate from the rest"
            )
        if not missing:
            return self._predict_one(x), 0.0, []
        means = self.manifest.predictor.anchor_means
        value, spread = fill_missing(self.predictor, x, miss, means, self.level)
        return value, spread, missing

    def _vector(self, responses) -> np.ndarray:
        """+-1 floats in anchor order, NaN where not answered."""
        x = anchor_vector(responses, self._index, len(self.items), self.graded)
        if np.isnan(x).all() and (why := none_of_the_anchors(responses, self._index, self.items)):
            raise ResponsesError(why)
        return x


__all__ = [
    "ALLOW_MISSING",
    "AnchorSet",
    "load_anchor_set",
]
