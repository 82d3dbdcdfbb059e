"""The publish unit: one set (a benchmark's, one budget's, or the suite) goes live, or not.

`publish_unit` is the one implementation: candidate -> gate -> mirror -> promote, as one
unit of work that discards the candidate on any failure and says why. A candidate is
written as a new version nobody points at (`write_candidate`, a suite's
`suite_publish.suite_candidate`, or `fit_sets.publish_fits` for `fit --out`, ungated). The
quality gate (`assess.assess` for a benchmark, `assess.suite_gate` for the suite) gives a
`GateResult`. Then:

    unchanged    what a consumer loads is that of the live version (`artifacts.substance`):
                 the candidate is discarded ("unchanged from vN"), nothing goes live, and
                 the set's ledger notes it, so a later run does not write it again
    refused      the candidate is discarded with `refused_reason` and the set's ledger of
                 refusals notes it (`roll_back(..., refusal=)`): never gated again
    mirror       pushed to the Hub repo (`mirror`) before it goes live; on failure it is
                 discarded (`mirror_rollback_reason`) and the live set stays everywhere
    promote      `latest` swaps to it (`promote`); a crash there discards it too

`Steps` says how the unit runs: plain Python by default (`LocalTransaction`), and in the
refresh flow a Prefect transaction whose tasks mirror and promote (`flows/publish.py`).
Its result is an `Outcome`, for a benchmark and the suite alike. The ledger
`artifacts/published/{name}-v{N}.json` also notes what each version was built from.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.scoring.flags import KEY as POOL_KEY
from sparseeval.consume.sets.anchorset import AnchorSet, load_anchor_set
from sparseeval.consume.sets.hub import redact
from sparseeval.consume.sets.layout import budget_of, latest_version, live_budget, set_dir
from sparseeval.consume.sets.models import MODELS_FILE, models_text
from sparseeval.pipeline import artifacts, versions
from sparseeval.pipeline import mirror as hub_mirror
from sparseeval.pipeline.artifacts import (
    artifact_path,
    note_refusal,
    note_unchanged,
    read_once,
    unchanged_from,
    unchanged_reason,
)
from sparseeval.pipeline.drift import drift_history
from sparseeval.pipeline.identity import anchor_sources
from sparseeval.pipeline.recipe import (
    FLAG_ARRAYS,
    curves_of,
    evaluation_of,
    fitted_of,
    pool_check_of,
)
from sparseeval.pipeline.records import Candidate, FitInfo, GateResult, LiveSet, set_name
from sparseeval.pipeline.settings import Settings, SourcesSection, recorded


class Refused(SparseEvalError):
    """The gate refused the candidate: the unit of work rolls back."""

    def __init__(self, gate: GateResult) -> None:
        super().__init__(gate.reason)
        self.gate = gate


class Unchanged(SparseEvalError):
    """The candidate is the live version over again: the unit of work rolls back."""

    def __init__(self, version: int) -> None:
        super().__init__(unchanged_reason(version))
        self.version = version


class MirrorFailed(SparseEvalError):
    """The Hub mirror refused or failed: roll back, the live set stays live everywhere."""


ROLLED_BACK = "rolled back"  # the tombstone's reason when the unit named none


@dataclass(frozen=True)
class Outcome:
    """What publishing one candidate came to: one line, the version when it went live, and
    the gate's verdict (None when the candidate was never written)."""

    line: str
    version: int | None = None
    path: str | None = None
    hub_commit: str | None = None
    gate: GateResult | None = None
    unchanged_from: int | None = None  # the live version the candidate repeated


# -- the live set -------------------------------------------------------------------------


def live_anchor_set(
    published_dir: str | Path, benchmark: str, version: int, budget: int | None = None
) -> AnchorSet:
    """One published version, loaded and verified once per process (budget: the set's;
    default: the one readers load, `layout.live_budget`)."""
    if budget is None:
        budget = live_budget(published_dir, benchmark)
    where = set_dir(published_dir, benchmark, budget)
    load = lambda: load_anchor_set(published_dir, benchmark, version, budget=budget)  # noqa: E731
    return read_once("anchor-set", where, f"v{int(version)}", load)


def live_set(
    published_dir: str | Path, benchmark: str, artifacts_dir: str | Path | None = None,
    budget: int | None = None,
) -> LiveSet | None:  # fmt: skip
    """The live published version of a benchmark (version, created, metrics), or None.

    budget: one of the run's several budgets; None (a run with one): the set readers load
    (`layout.live_budget`), whatever its number of anchors."""
    where = budget if budget is not None else live_budget(published_dir, benchmark)
    version = latest_version(published_dir, benchmark, where)
    if version is None:
        return None
    man = live_anchor_set(published_dir, benchmark, version, where).manifest
    built = artifact_path(
        artifacts_dir, "published", f"{set_name(benchmark, budget)}-v{version}.json"
    )
    noted = artifacts.read_note(built, {}) if artifacts_dir else {}
    if noted.get("data_fingerprint") != man.get("data_fingerprint"):
        noted = {}  # not ours (e.g. another home published it)
    return LiveSet(
        version, man.get("created"), man.get("data_fingerprint"), _test_mae(man),
        man.get("n_anchors"), noted.get("last_run"),
    )  # fmt: skip


def _test_mae(manifest: dict[str, Any]) -> float | None:
    """The test MAE (points) from a manifest's metrics, whatever its nesting."""
    m = manifest.get("metrics") or {}
    for path in (("test", "mae"), ("test_mae",), ("mae",)):
        cur: Any = m
        for k in path:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if isinstance(cur, int | float):
            return float(cur)
    return None


# -- the candidate ------------------------------------------------------------------------


def candidate(folder: str | Path, benchmark: str, key: str, budget: int | None = None) -> Candidate:
    """The record of a written version folder `{published}/{benchmark}/k{K}/v{N}` (the
    suite's: `{published}/suite/v{N}`); budget: the run's, when it has several."""
    folder = Path(folder)
    bench_dir = folder.parent.parent if budget_of(folder) is not None else folder.parent
    root = bench_dir.parent
    return Candidate(benchmark, str(root), str(folder), int(folder.name[1:]), budget, key)


def write_candidate(settings: Settings, fit: FitInfo, budget: int | None = None) -> Candidate:
    """Write the fitted model as a new (not yet live) version; note what it was built from.

    Its report shows the set's drift checks so far (`drift.drift_history`).
    """
    drift_rows = drift_history(settings.paths.artifacts_dir, set_name(fit.benchmark, budget))
    evaluation = evaluation_of(fit)
    fitted = fitted_of(fit)
    decided = versions.new_version(
        fit.benchmark, fitted,
        data_fingerprint=fit.matrix_fingerprint, split_sizes=fit.split_sizes,
        metrics={"test": fit.test_metrics, "valid": {"mae": fit.valid_scores.get(fit.predictor)}},
        settings=recorded(settings) | {"code_version": fit.code_version},
        report_inputs={
            "test_pred": evaluation["test_pred"].tolist(),
            "test_true": evaluation["test_true"].tolist(),
            **{k: evaluation[k].tolist() for k in FLAG_ARRAYS if k in evaluation},
            "test_recent": _recent(settings, fit.benchmark, evaluation.get("test_ids")),
            "drift_rows": list(drift_rows), "budget_rows": fit.budget_rows,
        },
        extra={"target": fit.target, "provenance": fit.provenance} | pool_extra(fit),
        item_sources=anchor_sources(fit.matrix_path, fitted.anchor_ids_, fit.benchmark),
        files={MODELS_FILE: models_text(split_models(evaluation))},
        curves=curves_of(fit),
    )  # fmt: skip
    path = versions.write_version(settings.paths.published_dir, decided, budget=budget)
    cand = candidate(path, fit.benchmark, fit.key, budget)
    built = artifact_path(
        settings.paths.artifacts_dir, "published", f"{cand.name}-v{cand.version}.json"
    )
    built.parent.mkdir(parents=True, exist_ok=True)
    built.write_text(
        json.dumps({"data_fingerprint": fit.matrix_fingerprint, "last_run": fit.last_run})
    )
    return cand


def _recent(settings: Settings, benchmark: str, test_ids) -> list[bool] | None:
    """Which test models arrived last in the store (`reports.arrivals`; None: no order)."""
    from sparseeval.pipeline.reports.arrivals import recent_flags
    from sparseeval.pipeline.store import Store

    path = Path(settings.paths.store_path)
    if test_ids is None or not path.exists():
        return None
    with Store.open(path, read_only=True) as store:
        frame = store.query("models_first_seen", {"bid": store.benchmark_id(benchmark),
                                                  "after": None, "run": 0})  # fmt: skip
    runs = dict(zip(frame["model"].to_list(), frame["first_run"].to_list(), strict=True))
    return recent_flags(frame["model"].to_list(), runs, test_ids)


def split_models(evaluation: dict) -> dict[str, Any]:
    """{role: model ids} of a fit's saved evaluation (`consume.sets.models`; fits saved
    before the calibration ids leave those out)."""
    keys = {"test": "test_ids", "train": "train_ids", "valid": "valid_ids",
            "calibration": "calib_ids"}  # fmt: skip
    return {role: evaluation[k].tolist() for role, k in keys.items() if k in evaluation}


def pool_extra(fit: FitInfo) -> dict[str, Any]:
    """The manifest entry of the fit's pool check ({} for fits saved before there was one)."""
    pool = pool_check_of(fit)
    return {POOL_KEY: pool} if pool else {}


# -- the ledger of refusals ---------------------------------------------------------------


# -- the steps after the gate -------------------------------------------------------------


def refused_reason(gate: GateResult) -> str:
    """The tombstone's reason for a candidate the gate refused."""
    return f"refused by the quality gate: {gate.reason}"


def mirror_rollback_reason(hub_repo: str | None) -> str:
    """The tombstone's reason when mirroring the candidate fails."""
    return f"rolled back: mirror to {hub_repo or 'the Hub'} failed"


def promote_rollback_reason(cand: Candidate, hub_repo: str | None, sha: str | None) -> str:
    """The tombstone's reason when promoting the (already mirrored) candidate fails."""
    hub = f"; {hub_repo} already has v{cand.version} as latest ({sha})" if sha else ""
    return f"rolled back: promoting v{cand.version} failed{hub}"


def sign(cand: Candidate, signing_key: str | Path) -> Candidate:
    """Sign the candidate's manifest (`manifest.sig`); the candidate, whose pointers (the
    Hub's and the local `latest`) are then signed with the same key."""
    versions.sign_version(cand.path, signing_key)
    return replace(cand, signing_key=str(signing_key))


def mirror(cand: Candidate, hub_repo: str, client=None) -> str:
    """Push the candidate (and its `latest`) to the Hub repo in one commit; the commit sha."""
    return hub_mirror.mirror_version(cand.published_dir, cand.benchmark, cand.version, hub_repo,
                                     budget=cand.set_budget, client=client,
                                     signing_key=cand.signing_key)  # fmt: skip


def mirror_failed(hub_repo: str | None, exc: BaseException) -> MirrorFailed:
    """The failure of a mirror as the outcome's reason (tokens redacted)."""
    why = redact(f"{type(exc).__name__}: {exc}")
    return MirrorFailed(f"mirror to {hub_repo or 'the Hub'} failed ({why}); live set unchanged")


def promote(cand: Candidate) -> None:
    """Make the candidate the live version (`latest`, atomically)."""
    versions.set_latest(cand.published_dir, cand.benchmark, cand.version, cand.set_budget,
                        signing_key=cand.signing_key)  # fmt: skip


def discard(cand: Candidate, reason: str) -> None:
    """Remove the candidate; its tombstone keeps `reason`."""
    versions.discard_version(cand.published_dir, cand.benchmark, cand.version, reason,
                             cand.set_budget)  # fmt: skip


def roll_back(
    artifacts_dir: str | Path, cand: Candidate, reason: str, refusal: str | None = None
) -> None:
    """Discard the candidate with `reason`; a gate's `refusal` also goes into the ledger."""
    discard(cand, reason)
    if refusal is not None:
        note_refusal(artifacts_dir, cand.name, cand.key, refusal)


def roll_back_held(txn) -> None:
    """Roll back the candidate a unit of work holds (`candidate`), with the reason it was
    last told (`reason`); a gate's `refusal` also goes into the ledger."""
    cand = txn.get("candidate", None)
    if cand:
        roll_back(txn.get("artifacts_dir"), cand, txn.get("reason", ROLLED_BACK),
                  txn.get("refusal", None))  # fmt: skip


def unchanged(cand: Candidate, version: int, gate: GateResult | None) -> Outcome:
    """The outcome of a candidate that repeated the live version: nothing new published;
    its `path` is the live version's folder (what stays live)."""
    live = Path(cand.path).parent / f"v{version}"
    return Outcome(f"not published: {unchanged_reason(version)}", path=str(live), gate=gate,
                   unchanged_from=version)  # fmt: skip


def refused(gate: GateResult) -> Outcome:
    """The outcome of a candidate the gate refused."""
    return Outcome(f"not published: candidate refused ({gate.reason})", gate=gate)


def not_mirrored(failure: MirrorFailed, gate: GateResult | None = None) -> Outcome:
    """The outcome of a candidate whose mirror failed."""
    return Outcome(f"not published ({failure})", gate=gate)


def published(
    cand: Candidate, hub_repo: str | None, sha: str | None, gate: GateResult | None = None
) -> Outcome:
    where = f" and {hub_repo}@{sha[:12]}" if sha and hub_repo else ""
    line = f"published v{cand.version} (local{where})"
    return Outcome(line, cand.version, cand.path, sha, gate)


# -- the unit ------------------------------------------------------------------------------


class UnitOfWork(Protocol):
    """What the unit needs of its transaction (`prefect.transactions.Transaction` has it)."""

    def set(self, name: str, value: Any) -> None: ...


class LocalTransaction:
    """The unit of work in plain Python: on any exception, the candidate it holds is rolled
    back with the reason it was last told (`roll_back_held`), as the flow's transaction does."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def set(self, name: str, value: Any) -> None:
        self._values[name] = value

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def __enter__(self) -> LocalTransaction:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            roll_back_held(self)
        return False


def mirror_step(sources: SourcesSection, cand: Candidate) -> str:
    """Mirror the candidate to the `sources` section's `hub_repo`; the commit sha."""
    return mirror(cand, sources.hub_repo)


@dataclass(frozen=True)
class Steps:
    """How the unit runs: its unit of work, and the steps after the gate.

    Plain Python by default; the refresh flow passes `prefect.transactions.transaction`
    and its tasks, whose rollback hook is `roll_back_held` (`flows/publish.py`).
    """

    transaction: Callable[[], AbstractContextManager[UnitOfWork]] = LocalTransaction
    mirror: Callable[[SourcesSection, Candidate], str] = mirror_step
    promote: Callable[[Candidate], None] = promote


LOCAL = Steps()


def publish_unit(
    settings: Settings,
    write: Callable[[], tuple[Candidate, GateResult]],
    steps: Steps = LOCAL,
) -> Outcome:
    """Run `write` (write a candidate, gate it), then mirror and promote, as one unit of work.

    Before each step the unit of work is told why the candidate would be rolled back
    (`reason`; `refusal` for a refused gate). A candidate that repeats the live version
    (`unchanged_from`), a refusal and a failed mirror are outcomes (the candidate
    discarded; the refusal, or the unchanged key, in the set's ledger); a crash propagates
    after the rollback. `settings.paths.signing_key` set: signed once the gate accepts it (its
    manifest and both pointers). `settings.sources.hub_repo` set: mirrored before it goes live.
    """
    hub_repo, gate, sha = settings.sources.hub_repo, None, None
    try:
        with steps.transaction() as txn:
            cand, gate = write()
            txn.set("candidate", cand)
            txn.set("artifacts_dir", str(settings.paths.artifacts_dir))
            if (same := unchanged_from(cand)) is not None:
                txn.set("reason", unchanged_reason(same))
                raise Unchanged(same)
            if not gate.accept:
                txn.set("reason", refused_reason(gate))
                txn.set("refusal", gate.reason)
                raise Refused(gate)
            if settings.paths.signing_key:
                cand = sign(cand, settings.paths.signing_key)
            if hub_repo:
                txn.set("reason", mirror_rollback_reason(hub_repo))
                try:
                    sha = steps.mirror(settings.sources, cand)
                except Exception as exc:
                    raise mirror_failed(hub_repo, exc) from exc
            txn.set("reason", promote_rollback_reason(cand, hub_repo, sha))
            steps.promote(cand)
    except Unchanged as exc:
        if cand.key:  # a candidate with no key (`fit --out`'s) is never looked up
            note_unchanged(settings.paths.artifacts_dir, cand.name, cand.key, exc.version)
        return unchanged(cand, exc.version, gate)
    except Refused:
        return refused(gate)
    except MirrorFailed as exc:
        return not_mirrored(exc, gate)
    return published(cand, hub_repo, sha, gate)


__all__ = [
    "LOCAL",
    "ROLLED_BACK",
    "LocalTransaction",
    "MirrorFailed",
    "Outcome",
    "Refused",
    "Steps",
    "Unchanged",
    "UnitOfWork",
    "candidate",
    "discard",
    "live_anchor_set",
    "live_set",
    "mirror",
    "mirror_failed",
    "mirror_rollback_reason",
    "mirror_step",
    "not_mirrored",
    "pool_extra",
    "promote",
    "promote_rollback_reason",
    "publish_unit",
    "published",
    "refused",
    "refused_reason",
    "roll_back",
    "roll_back_held",
    "split_models",
    "unchanged",
    "write_candidate",
]
