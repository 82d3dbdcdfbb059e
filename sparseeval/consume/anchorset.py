"""The consumer API: load a published anchor set, verify it, estimate accuracies (NumPy only).

anchors = load_anchor_set(".sparseeval/published", "arc")
anchors.predict({item: 1 for item in anchors.items})   # Estimate with a 90% interval
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.about import data_sources
from sparseeval.consume.conformal import ConformalInterval
from sparseeval.consume.estimate import Difference, Estimate
from sparseeval.consume.flags import PoolCheck, pool_check_of
from sparseeval.consume.ids import IdError, check_benchmark_name, is_canonical
from sparseeval.consume.layout import (
    LATEST,
    AnchorSetError,
    read_manifest,
    resolve_version_dir,
    verify,
)
from sparseeval.consume.promotion import check_promoted
from sparseeval.consume.responses import (
    ResponsesError,
    as_pairs,
    item_id,
    missing_message,
    printable,
    sign,
)
from sparseeval.consume.shape import check_arrays, check_estimate, check_manifest, reader_folder

N_COMPLETIONS = 256
ALLOW_MISSING = "allow_missing=True"  # as the error says it (the CLI says its flag instead)
_REPO_ID = re.compile(r"^(?:hf://(?:datasets/)?)?([A-Za-z0-9][\w.-]*/[\w.-]+)$")
MISSING_POLICY = (
    "with allow_missing, each missing anchor is imputed by its expected value under a "
    "one-parameter logistic shift: p_j = sigmoid(logit(training rate of item j) + s), with s "
    "chosen so that the mean of p over the answered anchors equals the model's accuracy on "
    "them; the estimate uses these expected values, and each side of the interval is widened "
    f"by the spread (central level-range) of the estimates over {N_COMPLETIONS} random "
    "completions of the missing answers, each drawn correct with its probability p_j."
)


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
    refuse the set unless its `manifest.sig` verifies with it (needs `cryptography`).
    Trust model: `sparseeval.consume.layout`.
    """
    try:
        check_benchmark_name(benchmark)
    except IdError as exc:
        raise AnchorSetError(str(exc)) from None
    folder, source, hub = _fetch(path_or_repo, benchmark, version, hub_client, revision, budget)
    manifest = _checked_manifest(folder, benchmark, hub, public_key)
    aset = AnchorSet(manifest=manifest, predictor=_predictor(folder, manifest), source=source,
                     folder=folder)  # fmt: skip
    aset.check_predictor()
    return aset


def _fetch(
    path_or_repo: str | Path,
    benchmark: str,
    version: int | str,
    hub_client,
    revision: str | None,
    budget: int | None,
) -> tuple[Path, str, bool]:
    """(version folder, where it came from, from the Hub?): a local folder, or a download."""
    p = Path(path_or_repo)
    hub = not p.exists() and _REPO_ID.match(str(path_or_repo))
    if hub:
        from sparseeval.consume.hub import download_version

        folder = download_version(hub.group(1), benchmark, version, hub_client, revision, budget)
        return folder, f"hf://datasets/{hub.group(1)}", True
    if not p.exists():
        raise AnchorSetError(
            f"{printable(path_or_repo)}: no such folder (nor a Hub repo id owner/name); run"
            " `sparseeval refresh` to publish anchor sets there, or pass the folder that holds"
            " them (--anchor-set DIR)"
        )
    folder = resolve_version_dir(p, benchmark, version, budget)
    return folder, str(folder), False


def _checked_manifest(folder: Path, benchmark: str, hub: bool, public_key) -> dict[str, Any]:
    """The folder's manifest, once it names `benchmark`, is promoted (locally) and every file,
    the seal and (with `public_key`) the signature verify."""
    manifest = read_manifest(folder)
    if manifest.get("benchmark") != benchmark:
        raise AnchorSetError(
            f"{printable(folder)} holds benchmark {printable(repr(manifest.get('benchmark')))}, "
            f"not {benchmark!r}"
        )
    if not hub:  # a Hub commit moves `latest` with the version; pin it with `revision`
        check_promoted(folder, manifest)
    verify(folder, manifest, follow_file_links=hub)  # the Hub cache links to blobs
    if public_key is not None:
        from sparseeval.consume.signing import verify_signature

        verify_signature(folder, manifest, public_key)
    _check_items(folder, manifest.get("items"))
    check_manifest(folder, manifest)
    return manifest


def _check_items(folder: Path, items: object) -> None:
    """A published set's item ids are a list of distinct canonical ids (`consume.ids`)."""
    if not isinstance(items, list) or not items:
        raise AnchorSetError(f"{printable(folder)}: manifest has no list of items")
    bad = next((i for i in items if not is_canonical(i)), None)
    if bad is not None:
        raise AnchorSetError(
            f"{printable(folder)}: manifest item id {printable(repr(bad))[:80]} is not canonical"
            " (trimmed, NFC, no control or format characters)"
        )
    if len(set(items)) != len(items):
        raise AnchorSetError(f"{printable(folder)}: manifest lists an item id twice")


def _predictor(folder: Path, manifest: dict[str, Any]):
    """The NumPy predictor of a verified version folder."""
    from sparseeval.consume.inference import load_predictor

    try:
        predictor = load_predictor(folder / reader_folder(folder, manifest["predictor"]))
    except AnchorSetError:
        raise
    except Exception as e:
        raise AnchorSetError(
            f"{printable(folder)}: cannot load predictor weights ({printable(e)})"
        ) from e
    check_arrays(folder, predictor.state()[1])
    return predictor


@dataclass
class AnchorSet:
    """A loaded, verified anchor set: the anchor items and a predictor over their answers."""

    manifest: dict
    predictor: Any
    source: str = ""
    folder: Path | None = None
    _index: dict = field(default_factory=dict, repr=False)
    _pool: PoolCheck | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._index = {item: j for j, item in enumerate(self.items)}
        try:
            self._pool = pool_check_of(self.manifest, len(self.items))
        except (KeyError, TypeError, ValueError) as e:
            raise AnchorSetError(f"{printable(self.source)}: bad pool check ({e})") from None

    @property
    def items(self) -> list[str]:
        """Anchor item ids in the order the predictor reads them."""
        return list(self.manifest["items"])

    @property
    def benchmark(self) -> str:
        return self.manifest["benchmark"]

    @property
    def version(self) -> int:
        return int(self.manifest["version"])

    @property
    def level(self) -> float:
        return float(self.manifest["interval"]["level"])

    @property
    def conformal(self) -> ConformalInterval:
        return ConformalInterval.from_dict(self.manifest["interval"])

    @property
    def pool_check(self) -> PoolCheck | None:
        """Whether a model is unlike the training pool (None: the set predates the check)."""
        return self._pool

    @property
    def item_sources(self) -> dict | None:
        return self.manifest.get("item_sources")

    @property
    def target(self) -> str:
        """What the set estimates, in words ("" for sets published before this was recorded)."""
        return str((self.manifest.get("target") or {}).get("definition") or "")

    @property
    def data(self) -> str:
        """Where the set's results came from, in words ("" when not recorded)."""
        return data_sources(self.manifest.get("provenance"))

    @property
    def synthetic(self) -> bool:
        """Whether the set was fit on the built-in synthetic demo leaderboard."""
        return bool((self.manifest.get("provenance") or {}).get("synthetic"))

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

    def predict(self, responses, allow_missing: bool = False) -> Estimate:
        """Estimate one model's full-benchmark accuracy from its answers on the anchors.

        responses: {item id: correct}, a polars/pandas DataFrame with columns
        `item` and `correct`, or a sequence/array in anchor order (`.items`).
        correct: 0/1, True/False or -1/+1 (None/NaN = not answered). Items that
        are not anchors are ignored. A missing anchor is an error naming it unless
        `allow_missing=True` (see MISSING_POLICY for how the interval widens).
        """
        return self._estimate(responses, allow_missing)[0]

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
        cols = {str(i): j for j, i in enumerate(item_ids)}
        missing = [i for i in self.items if i not in cols]
        if missing:
            raise ResponsesError(missing_message(missing, len(self.items), "matrix columns"))
        X = np.asarray(values_pm1)
        if X.ndim != 2 or X.shape[1] != len(cols):
            raise ResponsesError(
                f"matrix has shape {X.shape}, expected (models, {len(cols)}) for the item ids"
            )
        XA = X[:, [cols[i] for i in self.items]].astype(np.float32)
        if XA.size and XA.min() >= 0:  # 0/1 coding
            XA = 2 * XA - 1
        return np.asarray(self.predictor.predict(XA), dtype=np.float64)

    def intervals(self, preds) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) arrays for predictions from `predict_matrix`."""
        return self.conformal.interval(np.asarray(preds, dtype=np.float64))

    # -- internals

    def _estimate(self, responses, allow_missing: bool) -> tuple[Estimate, float]:
        x = self._vector(responses)
        value, spread, missing = self._point(x, allow_missing)
        conformal = self.conformal
        flags = self._pool.reasons(x, value) if self._pool else ()
        if flags:
            spread += float(
                self._pool.widening(x[None, :], [value], conformal.halfwidths(value))[0]
            )
        low, high = conformal.interval(value, extra=spread)
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
        if missing and not allow_missing:
            raise ResponsesError(
                missing_message(missing, len(self.items), "answers")
                + f"; pass {ALLOW_MISSING} to estimate from the rest"
            )
        if not missing:
            return self._predict_one(x), 0.0, []
        if miss.all():
            raise ResponsesError(f"no answers on any of the {len(self.items)} anchors")
        p = self._impute_probabilities(x, miss)
        filled = x.copy()
        filled[miss] = 2 * p - 1
        value = self._predict_one(filled)
        rng = np.random.default_rng(0)
        draws = np.repeat(x[None, :], N_COMPLETIONS, axis=0)
        draws[:, miss] = np.where(rng.random((N_COMPLETIONS, miss.sum())) < p, 1.0, -1.0)
        sims = np.asarray(self.predictor.predict(draws.astype(np.float32)), dtype=np.float64)
        tail = (1 - self.level) / 2
        lo, hi = np.quantile(sims, [tail, 1 - tail])
        return value, float(max(value - lo, hi - value, 0.0)), missing

    def _impute_probabilities(self, x: np.ndarray, miss: np.ndarray) -> np.ndarray:
        means = self.manifest["predictor"].get("anchor_means")
        rate = (
            np.full(len(self.items), 0.5) if means is None else (np.asarray(means, float) + 1) / 2
        )
        logit = np.log(np.clip(rate, 0.02, 0.98) / (1 - np.clip(rate, 0.02, 0.98)))
        target = float(np.clip(((x[~miss] + 1) / 2).mean(), 0.01, 0.99))
        lo_s, hi_s = -20.0, 20.0
        for _ in range(60):  # bisection: mean sigmoid(logit + s) over answered = target
            s = (lo_s + hi_s) / 2
            if np.mean(_sigmoid(logit[~miss] + s)) < target:
                lo_s = s
            else:
                hi_s = s
        return _sigmoid(logit[miss] + (lo_s + hi_s) / 2)

    def _vector(self, responses) -> np.ndarray:
        """+-1 floats in anchor order, NaN where not answered."""
        k = len(self.items)
        pairs = as_pairs(responses)
        if pairs is None:  # positional, in anchor order
            arr = list(responses)
            if len(arr) != k:
                raise ResponsesError(
                    f"got {len(arr)} answers in anchor order, expected {k} (one per anchor)"
                )
            return np.array([sign(v, f"anchor #{j}") for j, v in enumerate(arr)], dtype=float)
        x = np.full(k, np.nan)
        for item, v in pairs:
            j = self._index.get(item_id(item, "answers"))
            if j is not None:
                s = sign(v, str(item))
                if not np.isnan(x[j]) and not np.isnan(s) and x[j] != s:
                    raise ResponsesError(f"conflicting answers for anchor {printable(item)}")
                if not np.isnan(s):
                    x[j] = s
        return x


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))
