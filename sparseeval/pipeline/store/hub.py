"""Open LLM Leaderboard details on the Hugging Face Hub (v1 parquet, v2 jsonl), incremental:
which repos and revisions to read (reading one revision: `hub_details`).

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
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

import duckdb

from sparseeval.consume.answers.identity import LM_EVAL_DOC, ROW_INDEX
from sparseeval.consume.hashing import fingerprint
from sparseeval.consume.sets.hub import redact
from sparseeval.pipeline.progress import still_working
from sparseeval.pipeline.store.db import Store, execute
from sparseeval.pipeline.store.hub_details import HUB_FILES_FRAME, Revision, stage_revision
from sparseeval.pipeline.store.item_identity import ITEM_HASH_FRAME
from sparseeval.pipeline.store.retries import HubError, with_retries
from sparseeval.pipeline.store.scores import SCORE_FRAME
from sparseeval.pipeline.store.unit import SourceError, SpecOptions, Unit, no_stage

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
        """`org/model[,org/model...]` (v1 details of those models), `v2:org/model,...` (v2's),
        or `v1:GLOB[,GLOB...]` / `v2:GLOB...` (every details repo whose `org/model` matches;
        `*` = all); any form may end in `@DETAILS_ORG` (default `open-llm-leaderboard`)."""
        body = text.strip()
        version = None
        if m := re.fullmatch(r"(v\d+):(.*)", body, flags=re.DOTALL):
            version, body = m.group(1), m.group(2)
        org = DEFAULT_ORG
        if "@" in body:
            body, _, org = body.rpartition("@")
            if not re.fullmatch(r"[\w.-]+", org):
                raise SourceError(f"{SPEC_HELP}; bad details org {org!r}")
        parts = [p.strip() for p in body.split(",") if p.strip()]
        if not parts:
            raise SourceError(f"{SPEC_HELP}; got {text!r}")
        if version is None:
            bad = [p for p in parts if not _NAME.fullmatch(p)]
            if bad:
                raise SourceError(
                    f"{SPEC_HELP}; {bad[0]!r} is not org/model (for globs: hub:v1:{bad[0]})"
                )
            return cls(client, parts, "v1", org, max_repos=max_repos)
        if not any(set(p) & set("*?[") for p in parts):  # names, not globs: no listing
            return cls(client, parts, version, org, max_repos=max_repos)
        globs = None if "*" in parts else parts
        return cls(client, None, version, org, globs=globs, max_repos=max_repos)

    @classmethod
    def from_source_spec(cls, body: str, options: SpecOptions) -> OpenLLMLeaderboard:
        """The spec `hub:BODY` (see `from_spec`), read with the real Hub client."""
        return cls.from_spec(body, default_hub_client(), max_repos=options.hub_max_repos)

    def __post_init__(self) -> None:
        if self.version not in {"v1", "v2"}:
            raise SourceError(f"leaderboard version must be v1 or v2, got {self.version!r}")
        if self.max_repos is not None and self.max_repos < 1:
            raise SourceError(f"max_repos must be at least 1 (or None), got {self.max_repos}")

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
        try:
            found = self._list_repos()
        except HubError as exc:
            yield self._failed(f"{where} (listing)", exc)
            return
        todo: list[tuple[str, str, str]] = []
        unchanged = yield from self._changed(store, found, todo)
        cap = len(todo) if self.max_repos is None else self.max_repos
        now, later = todo[:cap], todo[cap:]
        log.info(
            "%s: %d details repos match; %d unchanged, %d new or changed to read now, %d left"
            " for the next run (hub_max_repos=%s)",
            where, len(found), unchanged, len(now), len(later), self.max_repos,
        )  # fmt: skip
        stopped = yield from self._read_now(where, now)
        if unchanged or later or stopped or not found:
            summary = (
                f"{len(found)} details repos match; {unchanged} unchanged, {len(now) - stopped}"
                f" new or changed read now, {len(later) + stopped} left for the next run"
                + (f" (hub_max_repos={self.max_repos})" if later else "")
                + (f" (stopped: {BREAKER_FAILURES} repos in a row failed)" if stopped else "")
            )
            key = fingerprint(self.kind, "listing", where, summary)
            yield Unit(self.kind, f"{where} (listing)", key, [], no_stage, skip=summary)

    def _list_repos(self) -> dict[str, tuple[str, str | None]]:
        """{repo: (model, sha or None)} of the org's details repos the globs want."""
        search = "details_" if self.version == "v1" else "-details"
        listed = self._call(f"listing {self.org} datasets", lambda: self._listing(search))
        found: dict[str, tuple[str, str | None]] = {}
        prefix = f"{self.org.lower()}/"
        for d in listed:
            model = model_for(d.id, self.version)
            if model and d.id.lower().startswith(prefix) and self._wanted(model):
                found[d.id] = (model, getattr(d, "sha", None))
        return found

    def _listing(self, search: str) -> list:
        """The org's datasets matching `search`, page by page (a progress line every 15 s)."""
        listed: list = []
        with still_working(lambda: f"hub: listing {self.org}'s datasets, {len(listed):,} so far"):
            listed.extend(self.client.list_datasets(author=self.org, search=search, expand=["sha"]))
        return listed

    def _changed(
        self, store: Store, found: dict[str, tuple[str, str | None]], todo: list
    ) -> Generator[Unit, None, int]:
        """Append (repo, model, sha) of new or changed repos to `todo`, in repo-name order;
        yield a failed unit per repo whose sha could not be asked; return how many are
        unchanged."""
        unchanged = 0
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
        return unchanged

    def _read_now(self, where: str, now: list[tuple[str, str, str]]) -> Generator[Unit, None, int]:
        """A unit per repo, until `BREAKER_FAILURES` in a row failed; return how many were
        left for the next run by that stop."""
        breaker = _Breaker()
        for i, (repo, model, sha) in enumerate(now):
            if BREAKER_FAILURES and breaker.fails >= BREAKER_FAILURES:
                log.warning(
                    "%s: %d repos in a row failed on Hub calls; %d left for the next run",
                    where, breaker.fails, len(now) - i,
                )  # fmt: skip
                return len(now) - i
            yield self._unit(repo, sha, model, breaker)
        return 0

    def _wanted(self, model: str) -> bool:
        return self.globs is None or any(fnmatch.fnmatchcase(model, g) for g in self.globs)

    def _unit(self, repo: str, sha: str, model: str, breaker: _Breaker | None = None) -> Unit:
        key = fingerprint(self.kind, repo, sha)
        kind = ROW_INDEX if self.version == "v1" else LM_EVAL_DOC
        unit = Unit(self.kind, f"{repo}@{sha}", key, [], no_stage,
                    frames=(HUB_FILES_FRAME, ITEM_HASH_FRAME, SCORE_FRAME),
                    id_kind=kind)  # fmt: skip
        rev = Revision(repo, sha, model, self.version, partial(self._list_files, repo, sha),
                       partial(self._download, repo, sha))  # fmt: skip
        unit.stage = partial(self._stage, rev, unit, breaker or _Breaker())
        unit.record = partial(_record, repo, sha)
        return unit

    def _failed(self, label: str, exc: HubError) -> Unit:
        """A unit that fails when ingested: recorded as a failed run, the others go on."""

        def stage(con: duckdb.DuckDBPyConnection) -> None:
            raise exc

        return Unit(self.kind, label, fingerprint(self.kind, label, "failed", str(exc)), [], stage)

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        return with_retries(what, fn, *args, secret=getattr(self.client, "token", None), **kw)

    def _list_files(self, repo: str, sha: str) -> list[str]:
        return self._call(
            f"listing files of {repo}@{sha[:12]}",
            self.client.list_repo_files,
            repo,
            repo_type="dataset",
            revision=sha,
        )

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

    def _stage(
        self, rev: Revision, unit: Unit, breaker: _Breaker, con: duckdb.DuckDBPyConnection
    ) -> None:
        try:
            stage_revision(rev, unit, con)
        except HubError:
            breaker.fails += 1
            raise
        breaker.fails = 0


def _record(repo: str, sha: str, con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    execute(con, "hub_record", {"repo": repo, "revision": sha, "run": run_id})
