"""The results store: DuckDB tables, ingest of every source kind (`kinds`), ±1 matrices."""

from sparseeval.pipeline.store.build import TARGETS, BuildSummary, build_matrix
from sparseeval.pipeline.store.db import Store, StoreError, StoreLockedError
from sparseeval.pipeline.store.hub import OpenLLMLeaderboard, default_hub_client
from sparseeval.pipeline.store.ingestion import IngestReport, Source, ingest, ingest_unit
from sparseeval.pipeline.store.lm_eval_run import LmEvalRun
from sparseeval.pipeline.store.score_files import ScoresFile
from sparseeval.pipeline.store.scores import reported_scores
from sparseeval.pipeline.store.tables import LongTable, WideTable
from sparseeval.pipeline.store.unit import SourceError

__all__ = [
    "TARGETS",
    "BuildSummary",
    "IngestReport",
    "LmEvalRun",
    "LongTable",
    "OpenLLMLeaderboard",
    "ScoresFile",
    "Source",
    "SourceError",
    "Store",
    "StoreError",
    "StoreLockedError",
    "WideTable",
    "build_matrix",
    "default_hub_client",
    "ingest",
    "ingest_unit",
    "reported_scores",
]
