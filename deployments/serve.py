"""Serve the SparseEval flows from this host: a nightly schedule plus manual-trigger deployments.

    prefect server start                           # in one terminal (or set PREFECT_API_URL)
    python deployments/serve.py                    # in another, from the repository root
    prefect deployment run 'refresh/manual-local'  # trigger by hand

Served deployments are named `{name}-local` (nightly-local, manual-local, ...): the work
pool's deployments (`prefect deploy`, names without the suffix) are never replaced by
serving, and stopping this script pauses only the `-local` ones.

Environment: SPARSEEVAL_HOME (required: where state lives), SPARSEEVAL_CONFIG (a settings
file; default {home}/sparseeval.toml), SPARSEEVAL_CRON (default "0 3 * * *", UTC),
SPARSEEVAL_* settings as usual.
One run at a time per deployment (DuckDB has one writer; the store also waits for its lock).
The deployments are defined in deployments/spec.py (which also generates prefect.yaml).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, when not installed

from deployments.spec import HEARTBEAT_SECONDS

# Heartbeats for the zombie automation; set before Prefect reads its settings.
os.environ.setdefault("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", str(HEARTBEAT_SECONDS))

from prefect import serve
from prefect.client.schemas.objects import ConcurrencyLimitConfig
from prefect.schedules import Cron

from deployments.spec import COLLISION_STRATEGY, SERVE_SUFFIX, TIMEZONE, load_flow, specs


def deployments(cron: str | None = None) -> list:
    """A `RunnerDeployment` per spec; `cron` (default SPARSEEVAL_CRON) schedules the nightly."""
    return [
        load_flow(s.entrypoint).to_deployment(
            name=s.name + SERVE_SUFFIX,
            description=s.description,
            tags=list(s.tags),
            parameters=dict(s.parameters),
            schedule=Cron(s.cron, timezone=TIMEZONE) if s.cron else None,
            concurrency_limit=ConcurrencyLimitConfig(
                limit=s.concurrency_limit, collision_strategy=COLLISION_STRATEGY
            ),
        )
        for s in specs(cron)
    ]


if __name__ == "__main__":
    serve(*deployments(), limit=1)  # at most one flow run at a time on this host


__all__ = [
    "deployments",
]
