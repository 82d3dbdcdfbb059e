"""Running a flow: its settings, its task runner and the progress lines a person reads."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from prefect import get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from sparseeval.pipeline.settings import Settings, SettingsError

PROGRESS = logging.getLogger("sparseeval.progress")  # the CLI prints these lines


def say(message: str, level: int = logging.INFO) -> None:
    """One line for a person: to the run's log (the Prefect UI) and to the console."""
    get_run_logger().log(level, message)
    PROGRESS.log(level, message)


def resolve_settings(
    home: str | None = None,
    n_anchors: int | list[int] | None = None,
    settings_overrides: dict[str, Any] | None = None,
) -> Settings:
    """Defaults < sparseeval.toml < SPARSEEVAL_* env < flow parameters."""
    overrides = dict(settings_overrides or {})
    if home is not None:
        overrides["home"] = home
    if n_anchors is not None:
        overrides["n_anchors"] = n_anchors
    return Settings.load(**overrides)


def task_runner_for(settings: Settings, dask_processes: bool = True):
    """The task runner named by `settings.task_runner`: threads here, or a Dask cluster."""
    if settings.task_runner == "thread":
        return ThreadPoolTaskRunner(max_workers=max(1, settings.workers))
    if settings.task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as exc:  # the `dask` extra
            raise SettingsError(
                "task_runner = 'dask' needs prefect-dask: pip install 'sparseeval[dask]'"
            ) from exc
        if settings.dask_address:
            return DaskTaskRunner(address=settings.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": settings.workers,
                "threads_per_worker": 1,
                "processes": dask_processes,
                "dashboard_address": None,
            }
        )
    raise SettingsError(f"task_runner must be 'thread' or 'dask', got {settings.task_runner!r}")


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
