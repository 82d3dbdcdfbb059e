"""Published anchor sets: versioned, checksummed folders that consumers score models with.

Layout under a published root (usually `settings.published_dir`)::

    {root}/{benchmark}/v{N}/manifest.json        what this is, how good it is, sha256 of files
    {root}/{benchmark}/v{N}/predictor/            predictor.json + weights.npz (no pickle)
    {root}/{benchmark}/v{N}/report.md|.html       evaluation report (plots under plots/)
    {root}/{benchmark}/v{N}/metrics.json          the report's numbers, machine-readable
    {root}/{benchmark}/v{N}/report_inputs.json    what the report was drawn from (re-render)
    {root}/{benchmark}/latest                     {"version": N, ...} (replaced atomically)

Publishing is three steps so that a caller (the refresh flow) can put a quality
gate between them and roll back: `write_version` (a new folder appears whole, by
rename, and nothing points at it yet), `set_latest` (atomic pointer swap) and, on
failure, `discard_version`. Version numbers are never reused: a discarded version
leaves a small tombstone file `.discarded-v{N}`.

Consumers call `load_anchor_set(root_or_repo, benchmark)` and `.predict(responses)`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from .conformal import ConformalInterval

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
LATEST = "latest"
PREDICTOR_DIR = "predictor"
KIND = "sparseeval.anchor_set"
N_COMPLETIONS = 256
_VERSION_DIR = re.compile(r"^v(\d+)$")
_TOMBSTONE = re.compile(r"^\.discarded-v(\d+)$")
_REPO_ID = re.compile(r"^(?:hf://(?:datasets/)?)?([A-Za-z0-9][\w.-]*/[\w.-]+)$")


class AnchorSetError(ValueError):
    """A published anchor set is missing, damaged, or cannot be read by this version."""


class ResponsesError(ValueError):
    """A model's answers on the anchors cannot be used (missing, unknown or bad values)."""


# --------------------------------------------------------------------------- writing


def write_version(
    root: str | Path,
    benchmark: str,
    estimator,
    *,
    data_fingerprint: str,
    split_sizes: Mapping[str, int],
    metrics: Mapping[str, Mapping[str, float]],
    settings,
    item_sources: Mapping[str, Any] | None = None,
    report_inputs: Mapping[str, Any] | None = None,
) -> Path:
    """Write a fitted estimator as `{root}/{benchmark}/v{N}/` and return that folder.

    The folder is built under a temporary name in the same parent and renamed into
    place, so readers never see half of it; N is the next free version number (a
    concurrent writer that takes N first makes this one retry with N + 1). The
    `latest` pointer is NOT moved: call `set_latest` after your quality gate.

    estimator: a fitted `SparseEval` (needs `anchor_ids_`, `predictor_`,
    `calibration_residuals_`; `predictor_name_` and `valid_scores_` are recorded if present).
    metrics: {split: {metric: value}}, e.g. {"test": {"mae": 1.2, "kendall_tau": .9}}.
    settings: a `Settings` (or a plain dict); `interval_level` sets the interval level.
    item_sources: optional {item id: (task, doc_id)} for the lm-eval round trip; when absent
    and every id maps by the rules of `sparseeval.lm_eval` (e.g. "17", "gsm8k:17"), the
    derived map is recorded.
    report_inputs: optional dict for the report: `test_pred`, `test_true` (arrays on
    the test models), `budget_rows` ([{method, n_anchors, mae, kendall_tau}]),
    `drift_rows` ([{version, mae, n_models, ...}]).
    """
    from .predictors import save_predictor
    from .report import render_report

    _check_benchmark(benchmark)
    settings_dict = settings.to_dict() if hasattr(settings, "to_dict") else dict(settings or {})
    level = float(settings_dict.get("interval_level", 0.9))
    items = [str(i) for i in estimator.anchor_ids_]
    if len(set(items)) != len(items):
        raise ValueError("anchor item ids must be unique")
    residuals = np.asarray(estimator.calibration_residuals_, dtype=np.float64)
    conformal = ConformalInterval.fit(residuals, level)
    sources = _normalise_sources(item_sources, items) or _derived_sources(items, benchmark)
    inputs = _jsonable(dict(report_inputs or {}))
    bench_dir = Path(root) / benchmark
    bench_dir.mkdir(parents=True, exist_ok=True)

    interval = conformal.to_dict() | {
        "calibration_coverage": float(np.mean(np.abs(residuals) <= conformal.halfwidth)),
        "calibrated_on": getattr(estimator, "calibration_source_", "validation"),
        "missing_answers": MISSING_POLICY,
    }
    if inputs.get("test_pred") is not None and inputs.get("test_true") is not None:
        interval["test_coverage"] = conformal.coverage(inputs["test_pred"], inputs["test_true"])
        interval["n_test"] = len(inputs["test_true"])

    while True:
        version = _next_version(bench_dir)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-v{version}-", dir=bench_dir))
        try:
            save_predictor(estimator.predictor_, tmp / PREDICTOR_DIR)
            (tmp / "report_inputs.json").write_text(json.dumps(inputs, indent=1))
            manifest = {
                "schema_version": SCHEMA_VERSION,
                "kind": KIND,
                "benchmark": benchmark,
                "version": version,
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
                "library_version": _library_version(),
                "items": items,
                "item_sources": sources,
                "n_anchors": len(items),
                "data_fingerprint": str(data_fingerprint),
                "split_sizes": {k: int(v) for k, v in dict(split_sizes).items()},
                "predictor": {
                    "name": getattr(estimator, "predictor_name_", None),
                    "valid_mae": _jsonable(getattr(estimator, "valid_scores_", None)),
                    "folder": PREDICTOR_DIR,
                    "anchor_means": _jsonable(_anchor_means(estimator.predictor_, len(items))),
                },
                "metrics": _jsonable({k: dict(v) for k, v in dict(metrics).items()}),
                "interval": _jsonable(interval),
                "settings": _jsonable(settings_dict),
            }
            render_report(tmp, manifest, inputs)
            manifest["files"] = {
                p.relative_to(tmp).as_posix(): _sha256(p)
                for p in sorted(tmp.rglob("*"))
                if p.is_file()
            }
            _write_json(tmp / MANIFEST, _seal(manifest))
            _fsync_tree(tmp)
            target = bench_dir / f"v{version}"
            try:
                os.rename(tmp, target)
            except OSError:
                if target.exists():  # another writer took this number: try the next one
                    shutil.rmtree(tmp, ignore_errors=True)
                    continue
                raise
            return target
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def set_latest(root: str | Path, benchmark: str, version: int) -> Path:
    """Point `{root}/{benchmark}/latest` at `v{version}` (atomic replace; verifies it first)."""
    version = int(version)
    folder = Path(root) / benchmark / f"v{version}"
    manifest = _read_manifest(folder)
    _verify(folder, manifest)
    pointer = {
        "version": version,
        "path": f"v{version}",
        "manifest_sha256": manifest["manifest_sha256"],
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    target = Path(root) / benchmark / LATEST
    tmp = target.with_name(f".{LATEST}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(pointer, f, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target


def latest_version(root: str | Path, benchmark: str) -> int | None:
    """The version `latest` points to, or None when nothing is published yet."""
    pointer = Path(root) / benchmark / LATEST
    if not pointer.is_file():
        return None
    try:
        return int(json.loads(pointer.read_text())["version"])
    except (ValueError, KeyError, TypeError) as e:
        raise AnchorSetError(f"{pointer}: unreadable latest pointer ({e})") from None


def list_versions(root: str | Path, benchmark: str) -> list[int]:
    """Published version numbers present on disk, ascending."""
    folder = Path(root) / benchmark
    if not folder.is_dir():
        return []
    found = (_VERSION_DIR.match(p.name) for p in folder.iterdir() if p.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


def discard_version(root: str | Path, benchmark: str, version: int, reason: str = "") -> None:
    """Remove `v{version}` (a transaction's rollback); refuses the version `latest` names.

    The folder is first renamed away (so it disappears at once), then deleted; a
    tombstone `.discarded-v{N}` keeps the number from being reused.
    """
    version = int(version)
    if latest_version(root, benchmark) == version:
        raise AnchorSetError(
            f"{benchmark} v{version} is the live (latest) version; point latest elsewhere first"
        )
    bench_dir = Path(root) / benchmark
    folder = bench_dir / f"v{version}"
    tomb = {"version": version, "discarded": datetime.now(UTC).isoformat(), "reason": reason}
    (bench_dir / f".discarded-v{version}").write_text(json.dumps(tomb))
    if folder.exists():
        trash = bench_dir / f".trash-v{version}-{uuid.uuid4().hex}"
        os.rename(folder, trash)
        shutil.rmtree(trash, ignore_errors=True)


def _next_version(bench_dir: Path) -> int:
    used = [0]
    for p in bench_dir.iterdir():
        m = _VERSION_DIR.match(p.name) or _TOMBSTONE.match(p.name)
        if m:
            used.append(int(m.group(1)))
    return max(used) + 1


# --------------------------------------------------------------------------- hub mirror


def push_to_hub(
    root: str | Path,
    benchmark: str,
    version: int | str,
    repo_id: str,
    client=None,
    *,
    update_latest: bool = True,
    commit_message: str | None = None,
):
    """Mirror one version to a Hub dataset repo in ONE commit (all files or none).

    Files land at `{benchmark}/v{N}/...`; with `update_latest` the commit also
    rewrites `{benchmark}/latest`. `client` is an `huggingface_hub.HfApi` (or any
    object with `create_commit`); tests pass a fake. Returns the commit info.
    """
    from huggingface_hub import CommitOperationAdd

    folder = resolve_version_dir(root, benchmark, version)
    manifest = _read_manifest(folder)
    _verify(folder, manifest)
    n = manifest["version"]
    prefix = f"{benchmark}/v{n}"
    ops = [
        CommitOperationAdd(path_in_repo=f"{prefix}/{rel}", path_or_fileobj=str(folder / rel))
        for rel in [*sorted(manifest["files"]), MANIFEST]
    ]
    if update_latest:
        pointer = {"version": n, "path": f"v{n}", "manifest_sha256": manifest["manifest_sha256"]}
        ops.append(
            CommitOperationAdd(
                path_in_repo=f"{benchmark}/{LATEST}",
                path_or_fileobj=json.dumps(pointer, indent=2).encode(),
            )
        )
    if client is None:
        from huggingface_hub import HfApi

        client = HfApi()
    return client.create_commit(
        repo_id=repo_id,
        operations=ops,
        commit_message=commit_message or f"Publish {benchmark} anchor set v{n}",
        repo_type="dataset",
    )


def _download_from_hub(repo_id: str, benchmark: str, version, client, revision=None) -> Path:
    """Fetch the requested version folder from a Hub dataset repo; returns the local version dir."""
    if client is None:
        from huggingface_hub import HfApi

        client = HfApi()
    kw = {"repo_type": "dataset", "revision": revision}
    try:
        if version in (None, LATEST):
            local = Path(
                client.snapshot_download(repo_id, allow_patterns=[f"{benchmark}/{LATEST}"], **kw)
            )
            pointer = local / benchmark / LATEST
            if not pointer.is_file():
                raise AnchorSetError(
                    f"hub repo {repo_id} has no published {benchmark!r} anchor set"
                )
            version = json.loads(pointer.read_text())["version"]
        n = _parse_version(version)
        local = Path(
            client.snapshot_download(repo_id, allow_patterns=[f"{benchmark}/v{n}/*"], **kw)
        )
    except AnchorSetError:
        raise
    except Exception as e:  # network, auth, missing repo: one clear message
        raise AnchorSetError(
            f"could not download {benchmark!r} from hub repo {repo_id}: {e}"
        ) from e
    folder = local / benchmark / f"v{n}"
    if not (folder / MANIFEST).is_file():
        raise AnchorSetError(f"hub repo {repo_id} has no {benchmark} v{n}")
    return folder


# --------------------------------------------------------------------------- loading


def resolve_version_dir(root: str | Path, benchmark: str, version: int | str = LATEST) -> Path:
    """The local folder of a version ("latest", 3, "v3"); also accepts a version folder itself."""
    root = Path(root)
    if (root / MANIFEST).is_file():
        return root
    bench = root / benchmark if (root / benchmark).is_dir() else root
    if not bench.is_dir():
        raise AnchorSetError(f"no published anchor sets at {root}")
    if version in (None, LATEST):
        n = latest_version(bench.parent, bench.name)
        if n is None:
            have = list_versions(bench.parent, bench.name)
            hint = f" (versions on disk: {', '.join(f'v{v}' for v in have)})" if have else ""
            raise AnchorSetError(f"no latest {benchmark!r} anchor set under {root}{hint}")
    else:
        n = _parse_version(version)
    folder = bench / f"v{n}"
    if not folder.is_dir():
        raise AnchorSetError(f"{benchmark} v{n} not found under {root}")
    return folder


def load_anchor_set(
    path_or_repo: str | Path,
    benchmark: str,
    version: int | str = LATEST,
    hub_client=None,
    revision: str | None = None,
) -> AnchorSet:
    """Load and verify a published anchor set from a folder or a Hub dataset repo id.

    `path_or_repo`: the published root (`.../published`), a benchmark folder, a
    version folder, or a Hub dataset repo id (`owner/name` or `hf://datasets/owner/name`)
    when no such local path exists. Every file's sha256 and the manifest's own seal
    are checked; a newer schema than this library reads is refused.
    """
    p = Path(path_or_repo)
    if not p.exists() and (m := _REPO_ID.match(str(path_or_repo))):
        folder = _download_from_hub(m.group(1), benchmark, version, hub_client, revision)
        source = f"hf://datasets/{m.group(1)}"
    elif not p.exists():
        raise AnchorSetError(f"{path_or_repo}: no such folder (nor a Hub repo id owner/name)")
    else:
        folder = resolve_version_dir(p, benchmark, version)
        source = str(folder)
    manifest = _read_manifest(folder)
    if manifest.get("benchmark") != benchmark:
        raise AnchorSetError(
            f"{folder} holds benchmark {manifest.get('benchmark')!r}, not {benchmark!r}"
        )
    _verify(folder, manifest)
    from .predictors import load_predictor

    try:
        predictor = load_predictor(folder / manifest["predictor"]["folder"])
    except Exception as e:
        raise AnchorSetError(f"{folder}: cannot load predictor weights ({e})") from e
    aset = AnchorSet(manifest=manifest, predictor=predictor, source=source, folder=folder)
    aset._check_predictor()
    return aset


def _read_manifest(folder: Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise AnchorSetError(f"{folder}: no {MANIFEST} (not an anchor set, or incomplete)")
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AnchorSetError(f"{path}: damaged or truncated manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise AnchorSetError(f"{path}: not a sparseeval anchor-set manifest")
    schema = manifest.get("schema_version")
    if not isinstance(schema, int):
        raise AnchorSetError(f"{path}: manifest has no schema_version")
    if schema > SCHEMA_VERSION:
        raise AnchorSetError(
            f"{path}: schema version {schema} is newer than this sparseeval "
            f"({_library_version()}) reads (up to {SCHEMA_VERSION}); upgrade sparseeval"
        )
    if manifest.get("manifest_sha256") != _manifest_digest(manifest):
        raise AnchorSetError(f"{path}: manifest was modified after publishing (seal mismatch)")
    return manifest


def _verify(folder: Path, manifest: dict) -> None:
    """Every file listed in the manifest exists and has its recorded sha256."""
    bad = []
    for rel, digest in manifest.get("files", {}).items():
        p = Path(folder) / rel
        if not p.is_file():
            bad.append(f"{rel} (missing)")
        elif _sha256(p) != digest:
            bad.append(f"{rel} (checksum mismatch)")
    if bad:
        raise AnchorSetError(
            f"{folder}: anchor set failed verification, refusing to use it: {', '.join(bad)}"
        )


# --------------------------------------------------------------------------- scoring


MISSING_POLICY = (
    "with allow_missing, each missing anchor is imputed by its expected value under a "
    "one-parameter logistic shift: p_j = sigmoid(logit(training rate of item j) + s), with s "
    "chosen so that the mean of p over the answered anchors equals the model's accuracy on "
    "them; the estimate uses these expected values, and each side of the interval is widened "
    f"by the spread (central level-range) of the estimates over {N_COMPLETIONS} random "
    "completions of the missing answers drawn from p"
)


@dataclass(frozen=True)
class Estimate:
    """An estimated full-benchmark accuracy in [0, 1] with its interval at `level`."""

    value: float
    low: float
    high: float
    level: float
    benchmark: str = ""
    version: int | None = None
    n_anchors: int = 0
    n_answered: int = 0
    missing: tuple[str, ...] = ()
    imputed: bool = False

    def to_dict(self) -> dict:
        d = asdict(self)
        d["missing"] = list(self.missing)
        return d

    def __str__(self) -> str:
        pct = round(100 * self.level)
        s = f"{100 * self.value:.1f}% ({pct}% interval {100 * self.low:.1f}-{100 * self.high:.1f}%)"
        if self.imputed:
            s += f", {len(self.missing)} of {self.n_anchors} anchors imputed"
        return s


@dataclass(frozen=True)
class Difference:
    """Estimated accuracy of A minus B, its interval, and the smallest resolvable gap."""

    value: float
    low: float
    high: float
    level: float
    resolvable: float
    a: Estimate | None = None
    b: Estimate | None = None

    @property
    def significant(self) -> bool:
        """True when the interval excludes zero."""
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("value", "low", "high", "level", "resolvable")}
        d["resolvable"] = _jsonable(d["resolvable"])
        d["significant"] = self.significant
        d["a"] = self.a.to_dict() if self.a else None
        d["b"] = self.b.to_dict() if self.b else None
        return d

    def __str__(self) -> str:
        pct = round(100 * self.level)
        return (
            f"{100 * self.value:+.1f} points ({pct}% interval {100 * self.low:+.1f} to "
            f"{100 * self.high:+.1f}); smallest resolvable difference "
            f"{100 * self.resolvable:.1f} points"
        )


@dataclass
class AnchorSet:
    """A loaded, verified anchor set: the anchor items and a predictor over their answers."""

    manifest: dict
    predictor: Any
    source: str = ""
    folder: Path | None = None
    _index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {item: j for j, item in enumerate(self.items)}

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
    def item_sources(self) -> dict | None:
        return self.manifest.get("item_sources")

    def _check_predictor(self) -> None:
        k = len(self.items)
        try:
            out = np.asarray(self.predictor.predict(np.zeros((2, k), dtype=np.float32)))
        except Exception as e:
            raise AnchorSetError(
                f"{self.source}: predictor does not accept the {k} anchors of the manifest ({e})"
            ) from e
        if out.shape != (2,):
            raise AnchorSetError(f"{self.source}: predictor output has shape {out.shape}")

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

    def _estimate(self, responses, allow_missing: bool) -> tuple[Estimate, float]:
        value, spread, _, missing = self._point(responses, allow_missing)
        low, high = self.conformal.interval(value, extra=spread)
        est = Estimate(
            value=value,
            low=low,
            high=high,
            level=self.level,
            benchmark=self.benchmark,
            version=self.version,
            n_anchors=len(self.items),
            n_answered=len(self.items) - len(missing),
            missing=tuple(missing),
            imputed=bool(missing),
        )
        return est, spread

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
            raise ResponsesError(_missing_message(missing, len(self.items), "matrix columns"))
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

    def _point(self, responses, allow_missing: bool):
        x = self._vector(responses)  # +-1 floats, NaN where missing
        miss = np.isnan(x)
        missing = [self.items[j] for j in np.flatnonzero(miss)]
        if missing and not allow_missing:
            raise ResponsesError(
                _missing_message(missing, len(self.items), "answers")
                + "; pass allow_missing=True (CLI: --allow-missing) to estimate from the rest"
            )
        if not missing:
            return float(self.predictor.predict(x[None, :].astype(np.float32))[0]), 0.0, x, []
        if miss.all():
            raise ResponsesError(f"no answers on any of the {len(self.items)} anchors")
        p = self._impute_probabilities(x, miss)
        filled = x.copy()
        filled[miss] = 2 * p - 1
        value = float(self.predictor.predict(filled[None, :].astype(np.float32))[0])
        rng = np.random.default_rng(0)
        draws = np.repeat(x[None, :], N_COMPLETIONS, axis=0)
        draws[:, miss] = np.where(rng.random((N_COMPLETIONS, miss.sum())) < p, 1.0, -1.0)
        sims = np.asarray(self.predictor.predict(draws.astype(np.float32)), dtype=np.float64)
        tail = (1 - self.level) / 2
        lo, hi = np.quantile(sims, [tail, 1 - tail])
        spread = float(max(value - lo, hi - value, 0.0))
        return value, spread, x, missing

    def _impute_probabilities(self, x: np.ndarray, miss: np.ndarray) -> np.ndarray:
        means = self.manifest["predictor"].get("anchor_means")
        rate = (
            np.full(len(self.items), 0.5) if means is None else (np.asarray(means, float) + 1) / 2
        )
        logit = np.log(np.clip(rate, 0.02, 0.98) / (1 - np.clip(rate, 0.02, 0.98)))
        observed = (x[~miss] + 1) / 2
        target = float(np.clip(observed.mean(), 0.01, 0.99))
        lo_s, hi_s = -20.0, 20.0
        for _ in range(60):  # bisection: mean sigmoid(logit + s) over answered = target
            s = (lo_s + hi_s) / 2
            if np.mean(_sigmoid(logit[~miss] + s)) < target:
                lo_s = s
            else:
                hi_s = s
        return _sigmoid(logit[miss] + (lo_s + hi_s) / 2)

    def _vector(self, responses) -> np.ndarray:
        k = len(self.items)
        pairs = _as_pairs(responses)
        if pairs is None:  # positional, in anchor order
            arr = list(responses)
            if len(arr) != k:
                raise ResponsesError(
                    f"got {len(arr)} answers in anchor order, expected {k} (one per anchor)"
                )
            return np.array([_sign(v, f"anchor #{j}") for j, v in enumerate(arr)], dtype=float)
        x = np.full(k, np.nan)
        for item, v in pairs:
            j = self._index.get(str(item))
            if j is not None:
                s = _sign(v, str(item))
                if not np.isnan(x[j]) and not np.isnan(s) and x[j] != s:
                    raise ResponsesError(f"conflicting answers for anchor {item}")
                if not np.isnan(s):
                    x[j] = s
        return x


def _as_pairs(responses):
    """(item, value) pairs from a dict or a DataFrame; None for a plain sequence."""
    if isinstance(responses, Mapping):
        return list(responses.items())
    cols = getattr(responses, "columns", None)
    if cols is not None:
        names = [str(c) for c in cols]
        if "item" not in names or "correct" not in names:
            raise ResponsesError(f"responses table needs columns item and correct, got {names}")
        items, values = responses["item"], responses["correct"]
        items = items.to_list() if hasattr(items, "to_list") else list(items)
        values = values.to_list() if hasattr(values, "to_list") else list(values)
        return list(zip(items, values, strict=True))
    if isinstance(responses, str | bytes):
        raise ResponsesError("responses must be a dict, a DataFrame or a sequence, not a string")
    return None


def _sign(v, where: str) -> float:
    """+1 for correct, -1 for wrong, NaN for not answered; anything else is an error."""
    if v is None:
        return math.nan
    if isinstance(v, str):
        t = v.strip().lower()
        if t in {"", "nan", "none", "null", "na"}:
            return math.nan
        mapping = {"1": 1.0, "1.0": 1.0, "true": 1.0, "0": -1.0, "0.0": -1.0, "false": -1.0}
        mapping |= {"-1": -1.0, "-1.0": -1.0, "+1": 1.0}
        if t in mapping:
            return mapping[t]
        raise ResponsesError(f"answer for {where} is {v!r}; expected 0/1, true/false or -1/+1")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ResponsesError(
            f"answer for {where} is {v!r}; expected 0/1, true/false or -1/+1"
        ) from None
    if math.isnan(f):
        return math.nan
    if f == 1.0:
        return 1.0
    if f in (0.0, -1.0):
        return -1.0
    raise ResponsesError(f"answer for {where} is {v!r}; expected 0/1, true/false or -1/+1")


def _missing_message(missing: list[str], k: int, what: str) -> str:
    shown = ", ".join(missing[:10]) + (
        f", ... (+{len(missing) - 10} more)" if len(missing) > 10 else ""
    )
    return f"{len(missing)} of {k} anchors missing from the {what}: {shown}"


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# --------------------------------------------------------------------------- helpers


def _anchor_means(predictor, k: int) -> list[float] | None:
    """The training mean of each anchor (+-1 scale), read from the predictor's state."""
    try:
        _, arrays = predictor.state()
    except Exception:
        return None
    for key in ("mean", "m0/mean", "m1/mean"):
        a = arrays.get(key)
        if a is not None and np.asarray(a).shape == (k,):
            return [float(v) for v in np.asarray(a)]
    for key, a in arrays.items():
        if key.endswith("mean") and np.asarray(a).shape == (k,):
            return [float(v) for v in np.asarray(a)]
    return None


def _normalise_sources(item_sources, items) -> dict | None:
    if not item_sources:
        return None
    out = {}
    for item in items:
        src = item_sources.get(item)
        if src is None:
            continue
        if isinstance(src, Mapping):
            task, doc = src["task"], src["doc_id"]
        else:
            task, doc = src
        out[item] = {"task": str(task), "doc_id": int(doc)}
    return out or None


def _derived_sources(items, benchmark) -> dict | None:
    """(task, doc_id) of every anchor by the id rules of `sparseeval.lm_eval`, if all map."""
    from .lm_eval import LmEvalError, item_source

    try:
        pairs = {i: item_source(i, benchmark) for i in items}
    except LmEvalError:
        return None
    return {i: {"task": t, "doc_id": d} for i, (t, d) in pairs.items()}


def _seal(manifest: dict) -> dict:
    manifest = dict(manifest)
    manifest.pop("manifest_sha256", None)
    manifest["manifest_sha256"] = _manifest_digest(manifest)
    return manifest


def _manifest_digest(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, allow_nan=False))


def _fsync_tree(folder: Path) -> None:
    for p in folder.rglob("*"):
        if p.is_file():
            with open(p, "rb") as f:
                os.fsync(f.fileno())


def _jsonable(obj):
    """Arrays to lists, numpy scalars to floats, non-finite floats to None, paths to str."""
    if obj is None or isinstance(obj, bool | str | int):
        return obj
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, os.PathLike):
        return str(obj)
    return str(obj)


def _parse_version(version) -> int:
    s = str(version).strip().lower().removeprefix("v")
    if not s.isdigit():
        raise AnchorSetError(f"version must be 'latest', N or vN, got {version!r}")
    return int(s)


def _check_benchmark(benchmark: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", benchmark or ""):
        raise ValueError(f"benchmark name {benchmark!r} must be letters, digits, '_', '-', '.'")


def _library_version() -> str:
    from . import __version__

    return __version__


__all__ = [
    "MISSING_POLICY",
    "SCHEMA_VERSION",
    "AnchorSet",
    "AnchorSetError",
    "Difference",
    "Estimate",
    "ResponsesError",
    "discard_version",
    "latest_version",
    "list_versions",
    "load_anchor_set",
    "push_to_hub",
    "resolve_version_dir",
    "set_latest",
    "write_version",
]
