"""The SparseEval deployments, defined once.

`deployments/serve.py` builds its deployments from `specs()`, and `deployments/prefect.yaml`
(for `prefect deploy`) is generated from them; `tests/flows/test_deployments.py` checks that the two
agree. After changing a deployment here, regenerate the yaml from the repository root:

    python deployments/spec.py              # rewrites deployments/prefect.yaml
    python deployments/spec.py OTHER.yaml   # e.g. with SPARSEEVAL_CRON set, for a one-off deploy

Plain Python: importing this module imports neither Prefect nor the flows.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_CRON = "0 3 * * *"  # 03:00 every day
TIMEZONE = "UTC"
CONCURRENCY_LIMIT = 1  # DuckDB has one writer; the store also waits for its lock
COLLISION_STRATEGY = "ENQUEUE"  # a run over the limit waits rather than being cancelled
WORK_POOL = "sparseeval-process"
PREFECT_VERSION = "3.9.1"
YAML_PATH = Path(__file__).resolve().with_name("prefect.yaml")
# Served deployments (serve.py) carry this suffix, so serving and `prefect deploy` never
# register the same name: neither replaces the other, and stopping serve.py pauses only
# its own deployments, never the work pool's nightly.
SERVE_SUFFIX = "-local"
# Flow-run heartbeats (seconds) let the zombie automation (flows/automations.py) mark a run
# whose worker or process died as Crashed, which frees its concurrency slot.
HEARTBEAT_SECONDS = 30
# Where a deployed run reads its settings: set these when you run `prefect deploy` (they
# become job variables) or in serve.py's environment. A deployed run refuses to start
# without SPARSEEVAL_HOME: the worker's working directory never decides where state lives.
JOB_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(HEARTBEAT_SECONDS),
    "SPARSEEVAL_HOME": "{{ $SPARSEEVAL_HOME }}",
    "SPARSEEVAL_CONFIG": "{{ $SPARSEEVAL_CONFIG }}",
}
# A deployment never fills an empty store from the built-in synthetic leaderboard.
NO_DEMO = {"fill_if_empty": False}


@dataclass(frozen=True)
class DeploymentSpec:
    name: str
    entrypoint: str  # "path/to/file.py:flow_function", relative to the repository root
    description: str
    tags: tuple[str, ...]
    parameters: dict[str, Any] = field(default_factory=dict)
    cron: str | None = None  # None: triggered by hand only
    concurrency_limit: int = CONCURRENCY_LIMIT


def nightly_cron() -> str:
    """The nightly schedule: SPARSEEVAL_CRON if set (a cron string, UTC), else DEFAULT_CRON."""
    return os.environ.get("SPARSEEVAL_CRON") or DEFAULT_CRON


def specs(cron: str | None = None) -> list[DeploymentSpec]:
    """Every deployment; `cron` (default `nightly_cron()`) schedules the nightly one."""
    return [
        DeploymentSpec(
            name="nightly",
            entrypoint="flows/refresh.py:refresh",
            description=(
                "Nightly refresh: ingest new results, retrain benchmarks whose data changed,"
                " publish a new anchor set where the live one drifts on newly arrived models."
            ),
            tags=("sparseeval", "nightly"),
            parameters=NO_DEMO,
            cron=cron or nightly_cron(),
        ),
        DeploymentSpec(
            name="manual",
            entrypoint="flows/refresh.py:refresh",
            description=(
                "The same refresh, triggered by hand (`prefect deployment run 'refresh/manual'`)."
            ),
            tags=("sparseeval", "manual"),
            parameters=NO_DEMO,
        ),
        DeploymentSpec(
            name="retrain-one",
            entrypoint="flows/manual.py:retrain_benchmark",
            description="Rebuild, refit and (through the quality gate) publish one benchmark.",
            tags=("sparseeval", "manual"),
            parameters={"benchmark": "arc"},
        ),
        DeploymentSpec(
            name="ingest-only",
            entrypoint="flows/manual.py:ingest_only",
            description="Ingest sources into the store; nothing is trained or published.",
            tags=("sparseeval", "manual"),
        ),
        DeploymentSpec(
            name="evaluate",
            entrypoint="flows/manual.py:evaluate_published",
            description=(
                "Score the published anchor set of one benchmark on models with full results"
                " in the store (by default those that arrived after it was published)."
            ),
            tags=("sparseeval", "manual"),
            parameters={"benchmark": "arc"},
        ),
    ]


def split_entrypoint(entrypoint: str) -> tuple[str, str]:
    """ "flows/refresh.py:refresh" -> ("sparseeval.flows.refresh", "refresh").

    The Prefect layer's folders (flows/, tasks/) install as `sparseeval.flows` / `.tasks`.
    """
    path, _, attr = entrypoint.rpartition(":")
    if not path.endswith(".py") or not attr:
        raise ValueError(f"entrypoint {entrypoint!r} is not 'path/to/file.py:function'")
    return "sparseeval." + path.removesuffix(".py").replace("/", "."), attr


def load_flow(entrypoint: str) -> Any:
    """The object an entrypoint names, imported from the installed `sparseeval` package."""
    module, attr = split_entrypoint(entrypoint)
    return getattr(importlib.import_module(module), attr)


# --- prefect.yaml ------------------------------------------------------------------------------

HEADER = f"""\
# GENERATED from deployments/spec.py by `python deployments/spec.py`: do not edit by hand.
# Change the deployments in spec.py and regenerate; tests/flows/test_deployments.py checks that
# this file, spec.py and deployments/serve.py agree.
#
# Prefect deployments of the SparseEval flows.
#
#   prefect work-pool create {WORK_POOL} --type process
#   prefect work-pool set-concurrency-limit {WORK_POOL} 1   # DuckDB has one writer
#   prefect deploy --all --prefect-file deployments/prefect.yaml   # from the repository root
#   prefect worker start --pool {WORK_POOL}                 # from the repository root
#   prefect deployment run 'refresh/manual'                        # trigger by hand
#
# nightly and manual run the same refresh flow. Each deployment also caps itself at one
# concurrent run, and the work pool's limit of 1 keeps runs (say the nightly and a manual
# one) from overlapping. Parameters can be overridden per run, e.g.
#   prefect deployment run 'refresh/manual' -p n_anchors=100
# The nightly cron is SPARSEEVAL_CRON when this file is generated (default "{DEFAULT_CRON}",
# UTC); the committed file uses the default.
"""

_ENV_YAML = "\n".join(f"        {k}: {json.dumps(v)}" for k, v in JOB_ENV.items())

STATIC = f"""\
name: sparseeval
prefect-version: {PREFECT_VERSION}

build: null
push: null

# The worker runs flows from the repository checkout (the folder `prefect deploy` ran in).
pull:
  - prefect.deployments.steps.set_working_directory:
      directory: "{{{{ $PWD }}}}"

definitions:
  work_pool: &process_pool
    name: {WORK_POOL}
    work_queue_name: default
    job_variables:
      env:
{_ENV_YAML}
  concurrency: &one_at_a_time
    limit: {CONCURRENCY_LIMIT}
    collision_strategy: {COLLISION_STRATEGY}
"""

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:-]*")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _scalar(value: Any, flow: bool = False) -> str:
    """A YAML scalar: plain where that reads back as the same string, else JSON-quoted."""
    if isinstance(value, str):
        plain = (
            _PLAIN.fullmatch(value)
            and value.lower() not in _RESERVED
            and not value.endswith(":")
            and not (flow and ":" in value)
        )
        return value if plain else json.dumps(value)
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{_scalar(k, True)}: {_scalar(v, True)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(v, True) for v in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__} {value!r} as YAML")


def _description(text: str, indent: str) -> str:
    """A folded block (`>-`) for a one-paragraph text, else a quoted string."""
    if text == " ".join(text.split()):
        lines = textwrap.wrap(text, width=96 - len(indent), break_on_hyphens=False)
        if lines and not any(line[0] in " \t" for line in lines):
            return ">-\n" + "".join(f"{indent}{line}\n" for line in lines).rstrip("\n")
    return json.dumps(text)


def _deployment(spec: DeploymentSpec) -> str:
    if spec.concurrency_limit == CONCURRENCY_LIMIT:
        concurrency = "*one_at_a_time"
    else:
        concurrency = _scalar(
            {"limit": spec.concurrency_limit, "collision_strategy": COLLISION_STRATEGY}
        )
    lines = [
        f"  - name: {_scalar(spec.name)}",
        f"    description: {_description(spec.description, ' ' * 6)}",
        f"    entrypoint: {_scalar(spec.entrypoint)}",
        f"    tags: {_scalar(list(spec.tags))}",
        f"    parameters: {_scalar(spec.parameters)}",
        f"    concurrency_limit: {concurrency}",
    ]
    if spec.cron:
        lines += [
            "    schedules:",
            f"      - cron: {json.dumps(spec.cron)}",
            f"        timezone: {_scalar(TIMEZONE)}",
            "        active: true",
        ]
    else:
        lines.append("    schedules: []")
    lines.append("    work_pool: *process_pool")
    return "\n".join(lines) + "\n"


def render_yaml(cron: str | None = None) -> str:
    """deployments/prefect.yaml, for `prefect deploy --all`, from `specs(cron)`."""
    body = "\n".join(_deployment(s) for s in specs(cron))
    return f"{HEADER}{STATIC}\ndeployments:\n{body}"


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else YAML_PATH
    out.write_text(render_yaml(), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])


__all__ = [
    "COLLISION_STRATEGY",
    "CONCURRENCY_LIMIT",
    "DEFAULT_CRON",
    "HEADER",
    "HEARTBEAT_SECONDS",
    "JOB_ENV",
    "NO_DEMO",
    "PREFECT_VERSION",
    "SERVE_SUFFIX",
    "STATIC",
    "TIMEZONE",
    "WORK_POOL",
    "YAML_PATH",
    "DeploymentSpec",
    "load_flow",
    "main",
    "nightly_cron",
    "render_yaml",
    "specs",
    "split_entrypoint",
]
