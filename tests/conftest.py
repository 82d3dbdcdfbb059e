"""Shared fixtures. `prefect_harness` is opt-in: only flow tests pay Prefect's start-up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _consumer_state(tmp_path_factory):
    """The signed pointers a test follows are remembered in a temporary folder
    (`signing.pointer_memory`), not in the home of whoever runs the tests; subprocesses too."""
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    yield
    if saved is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = saved


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """A temporary Prefect server and home (results, state) for the whole session."""
    root = tmp_path_factory.mktemp("prefect")
    env = {
        "PREFECT_HOME": str(root / "home"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(root / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
        "HF_HUB_OFFLINE": "1",
    }
    # The harness's API is plain http on 127.0.0.1, yet each Prefect client (one per task
    # run) builds an SSL context from certifi's whole bundle, about 40 ms; one certificate
    # of it builds in about 1 ms. A client of an https server would still verify against it.
    env["PREFECT_API_SSL_CERT_FILE"] = str(_one_certificate(root / "ca.pem"))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    from prefect.settings import (
        PREFECT_API_SSL_CERT_FILE,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        PREFECT_HOME,
        PREFECT_RESULTS_LOCAL_STORAGE_PATH,
        PREFECT_SERVER_ANALYTICS_ENABLED,
        temporary_settings,
    )
    from prefect.testing.utilities import prefect_test_harness

    with (
        temporary_settings(
            updates={
                PREFECT_HOME: env["PREFECT_HOME"],
                PREFECT_RESULTS_LOCAL_STORAGE_PATH: env["PREFECT_RESULTS_LOCAL_STORAGE_PATH"],
                PREFECT_SERVER_ANALYTICS_ENABLED: False,
                PREFECT_API_SSL_CERT_FILE: env["PREFECT_API_SSL_CERT_FILE"],
                # no heartbeat thread: Prefect joins it at each flow run's end, up to 1 s
                PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None,
            }
        ),
        prefect_test_harness(server_startup_timeout=120),
    ):
        yield root
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _one_certificate(path):
    """The first certificate of certifi's bundle, alone in `path`."""
    import certifi

    end = "-----END CERTIFICATE-----"
    bundle = Path(certifi.where()).read_text(encoding="ascii")
    path.write_text(
        bundle[bundle.index("-----BEGIN CERTIFICATE-----") : bundle.index(end)] + end + "\n"
    )
    return path


@pytest.fixture
def store(tmp_path):
    """An empty results store in the test's temporary folder, closed afterwards."""
    from sparseeval.pipeline.store import Store

    with Store.open(tmp_path / "store.duckdb") as s:
        yield s


@pytest.fixture(autouse=True)
def _progress_logger_restored():
    """A command run in-process (`main(["refresh", ...])`) adds its progress handler on the
    test's captured stream, and Prefect's logging set up inside a test adds its console
    handler to the root logger on it; neither outlives the test (a later test's logging
    would write to a closed stream: `--- Logging error ---`)."""
    import logging

    progress, root = logging.getLogger("sparseeval.progress"), logging.getLogger()
    handlers, propagate, level = progress.handlers[:], progress.propagate, progress.level
    root_handlers = root.handlers[:]
    yield
    progress.handlers[:], progress.propagate = handlers, propagate
    progress.setLevel(level)
    for handler in root.handlers[:]:
        if handler not in root_handlers and type(handler).__name__ == "PrefectConsoleHandler":
            root.removeHandler(handler)
