"""Alerts a person reads: one webhook POST of JSON `{subject, body}` (the same shape the
Prefect automations send, `flows/automations.py`)."""

from __future__ import annotations

import json
import urllib.request

NEXT_FAILED = (
    "next: fix what the message names (the report lists every failure), then run the same"
    " command again"
)


def run_alert(run: str, run_id: str, deployment: str | None, url: str | None, state: str,
              message: str, next_step: str = NEXT_FAILED) -> dict[str, str]:  # fmt: skip
    """The alert of a run that ended `state`: its name, deployment, UI link, message and the
    next step."""
    lines = [f"run: {run} ({run_id})", f"deployment: {deployment or 'none (command line)'}",
             f"url: {url or 'none'}", f"{state}: {message}", next_step]  # fmt: skip
    return {"subject": f"SparseEval run {run} is {state}", "body": "\n".join(lines)}


def post(url: str, alert: dict[str, str], timeout: float = 10.0) -> None:
    """POST the alert as JSON; an OSError (unreachable, HTTP error) is the caller's to say."""
    request = urllib.request.Request(
        url, data=json.dumps(alert).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout):
        pass


__all__ = [
    "NEXT_FAILED",
    "post",
    "run_alert",
]
