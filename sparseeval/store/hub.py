"""Open LLM Leaderboard details on the Hugging Face Hub (v1 parquet, v2 jsonl), incremental."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import duckdb
import polars as pl
import yaml

from ..hashing import fingerprint
from ..lm_eval import newest_samples
from ..taskmap import TaskMap, map_lm_eval_task, map_v1_config
from .db import Store, execute, fetch
from .sources import read_samples
from .unit import BAD_SCHEMA, SRC_SCHEMA, SourceError, Unit, conform, stage_frames


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
        self, *, author: str | None = None, search: str | None = None
    ) -> Iterable[Any]: ...


def default_hub_client() -> HubClient:
    """A real `HfApi`; the token, if any, comes from the HF_TOKEN environment variable."""
    from huggingface_hub import HfApi

    return HfApi(token=os.environ.get("HF_TOKEN") or None)


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
    """Per-item details of leaderboard models: a list of `org/model`, or every repo of `org`.

    Only what is new is downloaded: a repo whose revision was already ingested is skipped
    without downloads, and within a new revision only files not read before are fetched.
    """

    client: HubClient
    models: list[str] | None = None
    version: str = "v1"
    org: str = "open-llm-leaderboard"

    @classmethod
    def from_spec(cls, text: str, client: HubClient) -> OpenLLMLeaderboard:
        """`org/model[,org/model...]` (v1 details of those models)."""
        models = [m for m in text.split(",") if m]
        return cls(client, models=models or None)

    def __post_init__(self) -> None:
        if self.version not in {"v1", "v2"}:
            raise ValueError(f"leaderboard version must be v1 or v2, got {self.version!r}")

    def units(self, store: Store) -> Iterator[Unit]:
        for model in self._model_names():
            repo = repo_for(model, self.version, self.org)
            sha = self.client.dataset_info(repo).sha
            kind = f"ollm-{self.version}"
            unit = Unit(kind, f"{repo}@{sha}", fingerprint(kind, repo, sha), [], _no_stage)
            if store.hub_revision(repo) == sha:
                unit.skip = f"revision {sha[:12]} of {repo} already ingested"
            else:
                unit.stage = partial(self._stage, repo, sha, model, unit)
                unit.record = partial(_record, repo, sha)
            yield unit

    def _model_names(self) -> list[str]:
        if self.models is not None:
            return list(self.models)
        search = "details_" if self.version == "v1" else "-details"
        found = (
            model_for(d.id, self.version)
            for d in self.client.list_datasets(author=self.org, search=search)
        )
        return sorted({m for m in found if m})

    def _stage(
        self, repo: str, sha: str, model: str, unit: Unit, con: duckdb.DuckDBPyConnection
    ) -> None:
        files = self.client.list_repo_files(repo, repo_type="dataset", revision=sha)
        done = {row[0] for row in fetch(con, "hub_files", {"repo": repo})}
        wanted = self._v1_files(repo, sha, files) if self.version == "v1" else _v2_files(files)
        new = [(path, task) for path, task in wanted if path not in done]
        rows = []
        for ref_no, (path, task) in enumerate(new):
            local = Path(self.client.hf_hub_download(repo, path, repo_type="dataset", revision=sha))
            unit.refs.append(f"{repo}@{sha}:{path}")
            reader = read_v1_parquet if self.version == "v1" else read_samples
            rows.append(reader(local, task, model, ref_no))
        good = pl.concat([r[0] for r in rows]) if rows else None
        bad = pl.concat([r[1] for r in rows]) if rows else None
        stage_frames(con, good, bad)
        con.register(
            "unit_hub_files",
            pl.DataFrame({"path": [p for p, _ in new]}, schema={"path": pl.String}),
        )

    def _v1_files(self, repo: str, sha: str, files: list[str]) -> list[tuple[str, TaskMap]]:
        """The `latest` parquet file of each config we know, per the dataset card."""
        card = self.client.hf_hub_download(repo, "README.md", repo_type="dataset", revision=sha)
        out = []
        for config, patterns in card_latest(Path(card)).items():
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
