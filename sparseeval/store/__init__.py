"""The results store: DuckDB tables, ingest from four real sources, ±1 matrices."""

from .build import BuildSummary, build_matrix
from .db import Store, StoreError, StoreLockedError
from .hub import OpenLLMLeaderboard, default_hub_client
from .ingestion import IngestReport, Source, ingest, ingest_unit
from .sources import LmEvalRun, LongTable, WideTable
from .unit import SourceError

__all__ = [
    "BuildSummary",
    "IngestReport",
    "LmEvalRun",
    "LongTable",
    "OpenLLMLeaderboard",
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
]
