"""Fixtures of the flow tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def cli_refresh(monkeypatch):
    """`sparseeval refresh ARGS` in this process -> exit code; the environment variables and
    the progress handler that the command sets up are undone afterwards."""
    import argparse
    import logging

    from sparseeval.cli.refresh import add_refresh_command

    defaults = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "ERROR"}  # fmt: skip
    for name, value in defaults.items():  # what the command sets, restored whatever it was
        monkeypatch.setenv(name, os.environ.get(name, value))
    progress = logging.getLogger("sparseeval.progress")
    saved = progress.handlers[:], progress.propagate, progress.level
    parser = argparse.ArgumentParser(prog="sparseeval")
    add_refresh_command(parser.add_subparsers())

    def cli(*argv: str) -> int:
        args = parser.parse_args(["refresh", *argv])
        return args.func(args)

    yield cli
    progress.handlers[:], progress.propagate = saved[:2]  # no handler left on capsys's stream
    progress.setLevel(saved[2])  # setLevel also clears logging's cache of enabled levels
