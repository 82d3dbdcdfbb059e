"""Prefect flows of the SparseEval pipeline (the library itself knows nothing of Prefect)."""

from sparseeval.flows.manual import evaluate_published, ingest_only, retrain_benchmark
from sparseeval.flows.refresh import refresh

__all__ = ["evaluate_published", "ingest_only", "refresh", "retrain_benchmark"]
