"""Serve the refresh flow from this host: a nightly schedule plus manual-trigger deployments.

    prefect server start                     # in one terminal (or set PREFECT_API_URL)
    python deployments/serve.py              # in another, from the repository root
    prefect deployment run 'refresh/manual'  # trigger by hand

Environment: SPARSEEVAL_CRON (default "0 3 * * *", UTC), SPARSEEVAL_* settings as usual.
One run at a time per deployment (DuckDB has one writer; the store also waits for its lock).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed

from prefect import serve
from prefect.schedules import Cron

from flows.refresh import refresh
from flows.stages import evaluate_published, ingest_only, retrain_benchmark

CRON = os.environ.get("SPARSEEVAL_CRON", "0 3 * * *")


def deployments() -> list:
    return [
        refresh.to_deployment(
            name="nightly",
            schedule=Cron(CRON, timezone="UTC"),
            concurrency_limit=1,
            tags=["sparseeval", "nightly"],
            description="Nightly refresh (ingest, retrain what changed, publish on drift).",
        ),
        refresh.to_deployment(name="manual", concurrency_limit=1, tags=["sparseeval", "manual"]),
        retrain_benchmark.to_deployment(
            name="retrain-one", concurrency_limit=1, parameters={"benchmark": "arc"}
        ),
        ingest_only.to_deployment(name="ingest-only", concurrency_limit=1),
        evaluate_published.to_deployment(
            name="evaluate", concurrency_limit=1, parameters={"benchmark": "arc"}
        ),
    ]


if __name__ == "__main__":
    serve(*deployments(), limit=1)  # at most one flow run at a time on this host
