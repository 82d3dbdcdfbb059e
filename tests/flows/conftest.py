"""Fixtures of the flow tests."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest


@pytest.fixture
def receiver():
    """A webhook receiver on 127.0.0.1: (its URL, the JSON bodies it was sent)."""
    got: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}/hook", got
    httpd.shutdown()


@pytest.fixture
def cli_refresh(monkeypatch):
    """`sparseeval refresh ARGS` in this process -> exit code; the environment variables and
    the progress handler that the command sets up are undone afterwards."""
    import logging

    from sparseeval.cli import build_parser

    defaults = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "ERROR"}  # fmt: skip
    for name, value in defaults.items():  # what the command sets, restored whatever it was
        monkeypatch.setenv(name, os.environ.get(name, value))
    progress = logging.getLogger("sparseeval.progress")
    saved = progress.handlers[:], progress.propagate, progress.level
    parser = build_parser()

    def cli(*argv: str) -> int:
        args = parser.parse_args(["refresh", *argv])
        return args.func(args)

    yield cli
    progress.handlers[:], progress.propagate = saved[:2]  # no handler left on capsys's stream
    progress.setLevel(saved[2])  # setLevel also clears logging's cache of enabled levels
