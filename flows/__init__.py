"""Prefect flows of the SparseEval pipeline (the library itself knows nothing of Prefect)."""

from .refresh import refresh
from .stages import evaluate_published, ingest_only, retrain_benchmark

__all__ = ["evaluate_published", "ingest_only", "refresh", "retrain_benchmark"]
