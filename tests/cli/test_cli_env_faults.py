"""Faults of the machine, not of sparseeval (issue 46): a full disk, or a PREFECT_API_URL
server that is down, answers 503 or answers junk, is one line and exit 2, before any work
where it can be told, never 'a bug in sparseeval' with a traceback."""

from __future__ import annotations

import errno
import http.server
import threading
import time

import pytest

from sparseeval.cli import main
from sparseeval.cli.common import EXIT_USER_ERROR, report


class _Answer(http.server.BaseHTTPRequestHandler):
    status, body = 503, b""

    def do_GET(self):
        self.send_response(self.status)
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    """A local HTTP server answering every GET with `_Answer.status` and `.body`."""
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}/api"
    httpd.shutdown()


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [(503, b"", "the server answered 503"), (200, b"<html>hi</html>", "not as a Prefect server")],
)
def test_refresh_against_a_bad_prefect_server_is_one_line(
    server, tmp_path, capsys, monkeypatch, status, body, said
):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.setattr(_Answer, "status", status)
    monkeypatch.setattr(_Answer, "body", body)
    t0 = time.monotonic()
    with temporary_settings(updates={PREFECT_API_URL: server}):
        rc = main(["refresh", "--home", str(tmp_path / "home")])
    err = capsys.readouterr().err
    assert rc == EXIT_USER_ERROR and said in err and "PREFECT_API_URL" in err, err
    assert "Traceback" not in err and "a bug in sparseeval" not in err
    assert time.monotonic() - t0 < 60  # not the client's minutes of retries


def test_a_full_disk_and_a_dropped_connection_are_not_bugs(capsys):
    full = OSError(errno.ENOSPC, "No space left on device")  # a write's: no file name
    assert report("refresh", full) == EXIT_USER_ERROR
    assert "disk full" in capsys.readouterr().err
    too_big = OSError(errno.EFBIG, "File too large")  # a file-size limit (ulimit -f, quota)
    assert report("refresh", too_big) == EXIT_USER_ERROR
    assert "disk full" in capsys.readouterr().err
    try:
        raise RuntimeError("publishing failed") from full
    except RuntimeError as wrapped:
        assert report("refresh", wrapped) == EXIT_USER_ERROR
    import httpx

    assert report("refresh", httpx.ConnectError("refused")) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 2


def test_a_bug_raised_while_handling_a_fault_stays_a_bug(capsys):
    try:
        try:
            raise ConnectionError("down")
        except ConnectionError:
            {}["missing"]  # a bug in the handler
    except KeyError as bug:
        assert report("refresh", bug) == 3
    assert "Traceback" in capsys.readouterr().err
