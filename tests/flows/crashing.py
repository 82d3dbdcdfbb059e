"""A refresh that always crashes (its process exits mid-run), served for the rerun tests:
`python -m tests.flows.crashing` serves it as `refresh/crashing` on PREFECT_API_URL."""

from __future__ import annotations

import os

from prefect import flow
from sparseeval.flows._run import run_name


@flow(name="refresh", flow_run_name=lambda: run_name("refresh"))
def always_crashes(rerun_of: str | None = None) -> None:
    """Named as the refresh names its runs, then the process dies (as a `kill -9` would)."""
    os._exit(1)


if __name__ == "__main__":
    always_crashes.serve(name="crashing", tags=["sparseeval"], limit=1)
