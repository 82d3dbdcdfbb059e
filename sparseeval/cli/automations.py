"""`sparseeval automations`: install the Prefect automations kept in `flows/automations.py`."""

from __future__ import annotations

import argparse
import os

from sparseeval.cli.common import UserError

EPILOG = """examples:
  sparseeval automations install --webhook https://alerts.example/hook
  sparseeval automations install          # healing only (or reuse the saved webhook block)
  sparseeval automations list

Installs, on the Prefect server PREFECT_API_URL names (replacing earlier versions):
crash-zombie-runs (a run whose heartbeats stop is marked Crashed, freeing its slot),
rerun-crashed-refresh (a crashed refresh runs again once), and, with a webhook, alerts on
crashed/failed runs, refused candidates and drift that persists. The deployments send
heartbeats (PREFECT_FLOWS_HEARTBEAT_FREQUENCY in their job variables).
"""


def add_automations_command(subparsers: argparse._SubParsersAction) -> None:
    """Register `automations install|list`."""
    p = subparsers.add_parser(
        "automations",
        help="install the Prefect automations: heal crashed runs, alert on failures and drift",
        description="Create or list the SparseEval automations on the Prefect server.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["install", "list"])
    p.add_argument("--webhook", metavar="URL", help="POST alerts as JSON {subject, body} here")
    p.set_defaults(func=run_automations)


def run_automations(args: argparse.Namespace) -> int:
    if not os.environ.get("PREFECT_API_URL"):
        raise UserError("automations live on a Prefect server: set PREFECT_API_URL first")
    from sparseeval.flows import automations

    if why := automations.unreachable():
        raise UserError(
            f"cannot reach the Prefect server at PREFECT_API_URL={os.environ['PREFECT_API_URL']}"
            f" ({why}): start it (prefect server start) or point PREFECT_API_URL at a running one"
        )
    names = automations.install(args.webhook) if args.action == "install" else None
    for name in names if names is not None else automations.installed():
        print(name)
    return 0


__all__ = [
    "EPILOG",
    "add_automations_command",
    "run_automations",
]
