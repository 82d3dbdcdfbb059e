"""The CLI's temporary Prefect server: its port is the CLI's from the start (another process
that binds it meanwhile cannot take it: a probed port raced, "address already in use"),
`PREFECT_API_URL` names it for threads and child processes (none starts Prefect's own
temporary server, which outlived the CLI with parent pid 1), and it stops, group and all,
when the block ends, also on an error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request

import pytest

from sparseeval.cli import tempserver

pytestmark = pytest.mark.slow  # a real server process: the slow group


@pytest.fixture
def unconfigured(monkeypatch, tmp_path):
    """No Prefect server configured (not even the session harness's)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        yield


def _port(url: str) -> int:
    return urllib.parse.urlsplit(url).port


def test_its_port_cannot_be_taken_while_it_starts(unconfigured, monkeypatch):
    taken = []
    wait_healthy = tempserver._wait_healthy

    def intruder_first(url, proc, timeout, log):  # another process binds the port meanwhile
        with socket.socket() as other:
            try:
                other.bind(("127.0.0.1", _port(url)))
                other.listen(1)
                taken.append(True)  # it got the port: the server cannot bind it any more
            except OSError:
                pass
            wait_healthy(url, proc, timeout, log)

    monkeypatch.setattr(tempserver, "_wait_healthy", intruder_first)
    with tempserver.temporary_server() as url, urllib.request.urlopen(f"{url}/health") as r:
        assert r.read() == b"true"
    assert not taken


def test_it_is_named_in_the_environment_and_stopped_with_its_group(unconfigured):
    from prefect.settings import get_current_settings

    server = tempserver.temporary_server()
    with pytest.raises(RuntimeError, match="the run failed"), server as url:
        assert os.environ["PREFECT_API_URL"] == url
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.environ['PREFECT_API_URL'])"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert child.stdout.strip() == url
        seen = []  # a thread without Prefect's context: the process-global settings
        thread = threading.Thread(target=lambda: seen.append(get_current_settings().api.url))
        thread.start()
        thread.join()
        assert seen == [url]
        raise RuntimeError("the run failed")
    assert "PREFECT_API_URL" not in os.environ
    with pytest.raises(OSError):  # stopped: nothing listens on its port
        urllib.request.urlopen(f"{url}/health", timeout=5)
