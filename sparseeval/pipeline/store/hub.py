"""Open LLM Leaderboard details on the Hugging Face Hub (v1 parquet, v2 jsonl), incremental.

Discovery is one paginated `list_datasets(author=org, search=..., expand=["sha"])` listing:
each listed repo carries its revision sha, so repos already ingested at that revision cost
no further request. At most `max_repos` new or changed repos are read per run, in repo-name
order; the rest wait for the next run. Every Hub call is retried on HTTP 429 / 5xx (and
network errors) with exponential backoff that honours `Retry-After`; a repo that still
fails becomes a failed unit and the other repos go on. Messages built from Hub errors are
passed through `redact`, so the token never reaches logs, the store or re-raised errors.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

import duckdb
import polars as pl
import yaml

from sparseeval.consume.hashing import fingerprint
from sparseeval.consume.hub import redact
from sparseeval.consume.lm_eval import newest_samples
from sparseeval.consume.taskmap import TaskMap, map_lm_eval_task, map_v1_config
from sparseeval.pipeline.store.db import Store, execute, fetch
from sparseeval.pipeline.store.readers import read_samples
from sparseeval.pipeline.store.retries import HubError, with_retries
from sparseeval.pipeline.store.unit import (
    BAD_SCHEMA,
    SRC_SCHEMA,
    SourceError,
    Unit,
    conform,
    stage_frames,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_ORG = "open-llm-leaderboard"
DEFAULT_MAX_REPOS = 200  # the `hub_max_repos` setting's default
# After this many repos in a row fail on Hub calls (the Hub is down, not one repo broken),
# the rest of a listing waits for the next run instead of each burning its retries (0: off).
BREAKER_FAILURES = 3

SPEC_HELP = (
    "hub source: hub:ORG/MODEL[,ORG/MODEL...] (v1 details of those models), or"
    " hub:v1:GLOB[,GLOB...][@DETAILS_ORG] / hub:v2:GLOB... (every details repo whose"
    " org/model matches; * = all)"
)
_NAME = re.compile(r"[^/\s*?\[\]@,]+/[^/\s*?\[\]@,]+")

__all__ = [
    "DEFAULT_MAX_REPOS",
    "HubClient",
    "HubError",
    "OpenLLMLeaderboard",
    "default_hub_client",
    "redact",
    "with_retries",
]


@dataclass
class _Breaker:
    fails: int = 0  # repos in a row whose Hub calls failed


class HubClient(Protocol):
    """The part of `huggingface_hub.HfApi` we use (tests inject a fake)."""

    def dataset_info(self, repo_id: str, *, revision: str | None = None) -> Any: ...
    def list_repo_files(
        self, repo_id: str, *, revision: str | None = None, repo_type: str | None = None
    ) -> list[str]: ...
    def hf_hub_download(
        self,
        repo_id: str,
        filename: str,
        *,
        repo_type: str | None = None,
        revision: str | None = None,
    ) -> str: ...
    def list_datasets(
        self,
        *,
        author: str | None = None,
        search: str | None = None,
        expand: list[str] | None = None,
    ) -> Iterable[Any]: ...


def default_hub_client() -> HubClient:
    """A real `HfApi`; the token, if any, comes from the HF_TOKEN environment variable."""
    from huggingface_hub import HfApi

    return HfApi(token=os.environ.get("HF_TOKEN") or None)


# -- names and specs --------------------------------------------------------------------


def repo_for(model: str, version: str, org: str) -> str:
    """`org/model` -> the details dataset repo of that leaderboard version."""
    flat = model.replace("/", "__", 1)
    return f"{org}/details_{flat}" if version == "v1" else f"{org}/{flat}-details"


def model_for(repo: str, version: str) -> str | None:
    """The model of a details repo name, or None if the name is not a details repo."""
    name = repo.split("/", 1)[-1]
    pattern = r"details_(.+)" if version == "v1" else r"(.+)-details"
    m = re.fullmatch(pattern, name)
    return m.group(1).replace("__", "/", 1) if m and "__" in m.group(1) else None


@dataclass
class OpenLLMLeaderboard:
    """Per-item details of leaderboard models: named `org/model`s, or the org's details repos.

    `models`: exactly these models (their revision asked per model); otherwise every
    details repo of `org` found by one listing, filtered by the `globs` over `org/model`
    (`fnmatch`; None = all). Only what is new is downloaded: a repo whose revision was
    already ingested is skipped without downloads, and within a new revision only files
    not read before are fetched. At most `max_repos` new or changed repos are read per
    run (None: no cap), in repo-name order, so a first pull of thousands spreads over runs.
    """

    client: HubClient
    models: list[str] | None = None
    version: str = "v1"
    org: str = DEFAULT_ORG
    globs: list[str] | None = None
    max_repos: int | None = DEFAULT_MAX_REPOS

    @classmethod
    def from_spec(
        cls, text: str, client: HubClient, *, max_repos: int | None = DEFAULT_MAX_REPOS
    ) -> OpenLLMLeaderboard:
        """`org/model[,org/model...]` (v1 details of those models), or `v1:GLOB[,GLOB...]` /
        `v2:GLOB...` (every details repo whose `org/model` matches; `*` = all); either form
        may end in `@DETAILS_ORG` (default `open-llm-leaderboard`)."""
        body = text.strip()
        version = None
        if m := re.fullmatch(r"(v\d+):(.*)", body, flags=re.DOTALL):
            version, body = m.group(1), m.group(2)
        org = DEFAULT_ORG
        if "@" in body:
            body, _, org = body.rpartition("@")
            if not re.fullmatch(r"[\w.-]+", org):
                raise ValueError(f"{SPEC_HELP}; bad details org {org!r}")
        parts = [p.strip() for p in body.split(",") if p.strip()]
        if not parts:
            raise ValueError(f"{SPEC_HELP}; got {text!r}")
        if version is None:
            bad = [p for p in parts if not _NAME.fullmatch(p)]
            if bad:
                raise ValueError(
                    f"{SPEC_HELP}; {bad[0]!r} is not org/model (for globs: hub:v1:{bad[0]})"
                )
            return cls(client, parts, "v1", org, max_repos=max_repos)
        globs = None if "*" in parts else parts
        return cls(client, None, version, org, globs=globs, max_repos=max_repos)

    def __post_init__(self) -> None:
        if self.version not in {"v1", "v2"}:
            raise ValueError(f"leaderboard version must be v1 or v2, got {self.version!r}")
        if self.max_repos is not None and self.max_repos < 1:
            raise ValueError(f"max_repos must be at least 1 (or None), got {self.max_repos}")

    @property
    def kind(self) -> str:
        return f"ollm-{self.version}"

    def units(self, store: Store) -> Iterator[Unit]:
        if self.models is not None:
            yield from self._named_units(store)
        else:
            yield from self._listed_units(store)

    # -- discovery ----------------------------------------------------------------------

    def _named_units(self, store: Store) -> Iterator[Unit]:
        """Named models: one `dataset_info` each (they are few)."""
        staged = 0
        for model in self.models or []:
            repo = repo_for(model, self.version, self.org)
            try:
                sha = self._call(f"dataset_info {repo}", self.client.dataset_info, repo).sha
            except HubError as exc:
                yield self._failed(repo, exc)
                continue
            unit = self._unit(repo, sha, model)
            if store.hub_revision(repo) == sha:
                unit.skip = f"revision {sha[:12]} of {repo} already ingested"
            elif self.max_repos is not None and staged >= self.max_repos:
                unit.skip = f"left for the next run (hub_max_repos={self.max_repos})"
            else:
                staged += 1
            yield unit

    def _listed_units(self, store: Store) -> Iterator[Unit]:
        """One paginated listing of the org's details repos, with each repo's sha."""
        where = f"hub:{self.version}:{','.join(self.globs or ['*'])}@{self.org}"
        search = "details_" if self.version == "v1" else "-details"
        try:
            listed = self._call(
                f"listing {self.org} datasets",
                lambda: list(
                    self.client.list_datasets(author=self.org, search=search, expand=["sha"])
                ),
            )
        except HubError as exc:
            yield self._failed(f"{where} (listing)", exc)
            return
        found: dict[str, tuple[str, str | None]] = {}
        prefix = f"{self.org.lower()}/"
        for d in listed:
            model = model_for(d.id, self.version)
            if model and d.id.lower().startswith(prefix) and self._wanted(model):
                found[d.id] = (model, getattr(d, "sha", None))
        unchanged, todo = 0, []
        for repo in sorted(found):
            model, sha = found[repo]
            if sha is None:  # a listing without shas (a Hub that ignores expand): ask per repo
                try:
                    sha = self._call(f"dataset_info {repo}", self.client.dataset_info, repo).sha
                except HubError as exc:
                    yield self._failed(repo, exc)
                    continue
            if store.hub_revision(repo) == sha:
                unchanged += 1
            else:
                todo.append((repo, model, sha))
        cap = len(todo) if self.max_repos is None else self.max_repos
        now, later = todo[:cap], todo[cap:]
        log.info(
            "%s: %d details repos match; %d unchanged, %d new or changed to read now, %d left"
            " for the next run (hub_max_repos=%s)",
            where, len(found), unchanged, len(now), len(later), self.max_repos,
        )  # fmt: skip
        breaker, stopped = _Breaker(), 0
        for i, (repo, model, sha) in enumerate(now):
            if BREAKER_FAILURES and breaker.fails >= BREAKER_FAILURES:
                stopped = len(now) - i
                log.warning(
                    "%s: %d repos in a row failed on Hub calls; %d left for the next run",
                    where, breaker.fails, stopped,
                )  # fmt: skip
                break
            yield self._unit(repo, sha, model, breaker)
        if unchanged or later or stopped or not found:
            summary = (
                f"{len(found)} details repos match; {unchanged} unchanged, {len(now) - stopped}"
                f" new or changed read now, {len(later) + stopped} left for the next run"
                + (f" (hub_max_repos={self.max_repos})" if later else "")
                + (f" (stopped: {BREAKER_FAILURES} repos in a row failed)" if stopped else "")
            )
            key = fingerprint(self.kind, "listing", where, summary)
            yield Unit(self.kind, f"{where} (listing)", key, [], _no_stage, skip=summary)

    def _wanted(self, model: str) -> bool:
        return self.globs is None or any(fnmatch.fnmatchcase(model, g) for g in self.globs)

    def _unit(self, repo: str, sha: str, model: str, breaker: _Breaker | None = None) -> Unit:
        unit = Unit(self.kind, f"{repo}@{sha}", fingerprint(self.kind, repo, sha), [], _no_stage)
        unit.stage = partial(self._stage, repo, sha, model, unit, breaker or _Breaker())
        unit.record = partial(_record, repo, sha)
        return unit

    def _failed(self, label: str, exc: HubError) -> Unit:
        """A unit that fails when ingested: recorded as a failed run, the others go on."""

        def stage(con: duckdb.DuckDBPyConnection) -> None:
            raise exc

        return Unit(self.kind, label, fingerprint(self.kind, label, "failed", str(exc)), [], stage)

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        return with_retries(what, fn, *args, secret=getattr(self.client, "token", None), **kw)

    def _download(self, repo: str, sha: str, path: str) -> Path:
        return Path(
            self._call(
                f"download {repo}@{sha[:12]}:{path}",
                self.client.hf_hub_download,
                repo,
                path,
                repo_type="dataset",
                revision=sha,
            )
        )

    # -- reading ------------------------------------------------------------------------

    def _stage(
        self,
        repo: str,
        sha: str,
        model: str,
        unit: Unit,
        breaker: _Breaker,
        con: duckdb.DuckDBPyConnection,
    ) -> None:
        try:
            self._read(repo, sha, model, unit, con)
        except HubError:
            breaker.fails += 1
            raise
        breaker.fails = 0

    def _read(
        self, repo: str, sha: str, model: str, unit: Unit, con: duckdb.DuckDBPyConnection
    ) -> None:
        files = self._call(
            f"listing files of {repo}@{sha[:12]}",
            self.client.list_repo_files,
            repo,
            repo_type="dataset",
            revision=sha,
        )
        done = {row[0] for row in fetch(con, "hub_files", {"repo": repo})}
        wanted = self._v1_files(repo, sha, files) if self.version == "v1" else _v2_files(files)
        new = [(path, task) for path, task in wanted if path not in done]
        rows = []
        for ref_no, (path, task) in enumerate(new):
            local = self._download(repo, sha, path)
            unit.refs.append(f"{repo}@{sha}:{path}")
            if self.version == "v1":
                rows.append(read_v1_parquet(local, task, model, ref_no))
            else:  # v2 samples: the metric read per task is recorded in the ingest report
                rows.append(read_samples(local, task, model, ref_no, read_with=unit.read_with))
        good = pl.concat([r[0] for r in rows]) if rows else None
        bad = pl.concat([r[1] for r in rows]) if rows else None
        stage_frames(con, good, bad)
        con.register(
            "unit_hub_files",
            pl.DataFrame({"path": [p for p, _ in new]}, schema={"path": pl.String}),
        )

    def _v1_files(self, repo: str, sha: str, files: list[str]) -> list[tuple[str, TaskMap]]:
        """The `latest` parquet file of each config we know, per the dataset card."""
        card = self._download(repo, sha, "README.md")
        out = []
        for config, patterns in card_latest(card).items():
            task = map_v1_config(config)
            matches = sorted(f for f in files for p in patterns if fnmatch.fnmatchcase(f, p))
            if task and matches:
                out.append((matches[-1], task))
        return out


def card_latest(card: Path) -> dict[str, list[str]]:
    """{config name: path patterns of its `latest` split} from a dataset card's YAML header."""
    text = card.read_text(encoding="utf-8")
    m = re.match(r"---\s*\n(.*?)\n---", text, flags=re.DOTALL)
    if not m:
        raise SourceError(f"{card}: dataset card has no YAML header")
    meta = yaml.safe_load(m.group(1)) or {}
    out: dict[str, list[str]] = {}
    for cfg in meta.get("configs", []):
        for split in cfg.get("data_files", []):
            if split.get("split") == "latest":
                paths = split.get("path")
                out[cfg["config_name"]] = [paths] if isinstance(paths, str) else list(paths)
    return out


def _v2_files(files: list[str]) -> list[tuple[str, TaskMap]]:
    """The newest samples file of each leaderboard task."""
    latest = newest_samples(files)
    return [
        (f, map_lm_eval_task(task))
        for task, f in sorted(latest.items())
        if task.startswith("leaderboard_")
    ]


def read_v1_parquet(
    path: Path, task: TaskMap, model: str, ref_no: int = 0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows of one v1 details parquet file: one row per item, in the benchmark's order."""
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:
        raise SourceError(f"{path}: not a Parquet file ({exc})") from exc
    value = _metric_column(frame, task.metrics[0], path)
    n = frame.height
    rows = pl.DataFrame({
        "model": [model] * n,
        "benchmark": [task.benchmark] * n,
        "item": [task.item(i) for i in range(n)],
        "correct": frame.select(value.cast(pl.String)).to_series(),
        "ord": pl.Series(range(n) if task.subject is None else [None] * n, dtype=pl.Int64),
        "line": range(1, n + 1),
    }).with_columns(ref_no=pl.lit(ref_no))  # fmt: skip
    return conform(rows, SRC_SCHEMA), conform(None, BAD_SCHEMA)


def _metric_column(frame: pl.DataFrame, metric: str, path: Path) -> pl.Expr:
    """The metric as column `acc`, column `metrics.acc`, or field of a `metrics` struct."""
    if metric in frame.columns:
        return pl.col(metric)
    if f"metrics.{metric}" in frame.columns:
        return pl.col(f"metrics.{metric}")
    dtype = frame.schema.get("metrics")
    if isinstance(dtype, pl.Struct) and metric in [f.name for f in dtype.fields]:
        return pl.col("metrics").struct.field(metric)
    raise SourceError(f"{path}: no column {metric}, metrics.{metric} or metrics struct field")


def _record(repo: str, sha: str, con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    execute(con, "hub_record", {"repo": repo, "revision": sha, "run": run_id})


def _no_stage(con: duckdb.DuckDBPyConnection) -> None:
    raise RuntimeError("skipped unit has nothing to stage")
