"""One writer per home (`sparseeval.pipeline.lease`): a second run waits then refuses naming
the holder; a lease left by a dead process or never renewed is taken over."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from sparseeval.pipeline.lease import LEASE_FILE, HomeLease, LeaseHeld, read_lease


def test_a_second_run_refuses_naming_the_holder_and_gets_it_after_release(tmp_path, caplog):
    caplog.set_level("INFO", logger="sparseeval.progress")
    first = HomeLease(tmp_path, "refresh 03:00").acquire()
    start = time.monotonic()
    with pytest.raises(LeaseHeld) as err:
        HomeLease(tmp_path, "refresh (served)", wait=0.5).acquire()
    assert time.monotonic() - start >= 0.5  # it waited
    msg = str(err.value)
    assert f"home {tmp_path} is in use by 'refresh 03:00' (pid {os.getpid()} on" in msg
    assert msg.endswith("; waited 0.5s")
    (said,) = [r.getMessage() for r in caplog.records if r.name == "sparseeval.progress"]
    assert said.startswith(f"home {tmp_path} is in use by 'refresh 03:00'")  # while it waits
    assert said.endswith("; waiting up to 0.5s for it (lease_wait_seconds)")
    first.release()
    assert not (tmp_path / LEASE_FILE).exists()
    with HomeLease(tmp_path, "refresh (served)") as second:
        assert read_lease(tmp_path / LEASE_FILE)["holder"] == "refresh (served)"
        assert second.took_over is None
    assert not (tmp_path / LEASE_FILE).exists()


def _lease_of_a_dead_process(home) -> dict:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    record = {"holder": "refresh (crashed)", "token": "dead", "pid": int(proc.stdout),
              "host": socket.gethostname(), "since": "2026-12-01T03:00:00+00:00",
              "renewed": time.time()}  # fmt: skip
    (home / LEASE_FILE).write_text(json.dumps(record))
    return record


def test_a_crashed_runs_lease_is_taken_over_at_once(tmp_path):
    dead = _lease_of_a_dead_process(tmp_path)
    with HomeLease(tmp_path, "refresh 03:00") as lease:
        assert lease.took_over == dead
        assert read_lease(tmp_path / LEASE_FILE)["token"] == lease.token
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no stale copies left


def test_a_lease_not_renewed_in_time_is_stale_even_on_another_host(tmp_path):
    record = {"holder": "refresh (other host)", "token": "x", "pid": 1, "host": "elsewhere",
              "renewed": time.time() - 601}  # fmt: skip
    (tmp_path / LEASE_FILE).write_text(json.dumps(record))
    with HomeLease(tmp_path, "refresh", stale_after=600) as lease:
        assert lease.took_over["holder"] == "refresh (other host)"
    record["renewed"] = time.time()
    (tmp_path / LEASE_FILE).write_text(json.dumps(record))
    with pytest.raises(LeaseHeld, match="in use by 'refresh \\(other host\\)'"):
        HomeLease(tmp_path, "refresh", stale_after=600).acquire()


def test_the_holder_renews_while_it_runs(tmp_path):
    with HomeLease(tmp_path, "refresh", stale_after=4):
        first = read_lease(tmp_path / LEASE_FILE)["renewed"]
        time.sleep(1.5)
        assert read_lease(tmp_path / LEASE_FILE)["renewed"] > first


def test_a_lease_renewed_in_the_future_is_stale(tmp_path):
    record = {"holder": "refresh (clock ahead)", "token": "x", "pid": 1, "host": "elsewhere",
              "renewed": time.time() + 10 * 365 * 86400}  # fmt: skip
    (tmp_path / LEASE_FILE).write_text(json.dumps(record))
    with HomeLease(tmp_path, "refresh", stale_after=600) as lease:
        assert lease.took_over["holder"] == "refresh (clock ahead)"


@pytest.mark.parametrize("renewed", [True, "soon", None])
def test_a_lease_with_a_bad_renewal_time_is_stale(tmp_path, renewed):
    record = {"holder": "h", "token": "x", "pid": 1, "host": "elsewhere", "renewed": renewed}
    (tmp_path / LEASE_FILE).write_text(json.dumps(record))
    with HomeLease(tmp_path, "refresh") as lease:
        assert lease.took_over is not None


def test_a_lease_that_is_a_folder_is_one_line(tmp_path):
    (tmp_path / LEASE_FILE).mkdir()
    with pytest.raises(LeaseHeld, match="is a folder or a link"):
        HomeLease(tmp_path, "refresh").acquire()
    assert read_lease(tmp_path / LEASE_FILE) is None  # no IsADirectoryError


def test_lease_held_is_an_input_error_said_in_one_line():
    from sparseeval.consume.errors import SparseEvalError

    assert issubclass(LeaseHeld, SparseEvalError)


def test_a_holder_stops_on_sigterm_and_gives_the_lease_back(tmp_path):
    code = ("import sys, time; from sparseeval.pipeline.lease import HomeLease\n"
            "with HomeLease(sys.argv[1], 'refresh nightly'):\n"
            "    print('held', flush=True); time.sleep(60)")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stdout.readline() == "held\n" and (tmp_path / LEASE_FILE).exists()
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 128 + signal.SIGTERM
    assert time.monotonic() - sent < 5
    assert not (tmp_path / LEASE_FILE).exists()


def test_a_run_that_does_not_unwind_after_sigterm_says_so_before_it_ends(tmp_path, caplog,
                                                                       monkeypatch):  # fmt: skip
    """A deployed run's process ended 2 s after SIGTERM without a word (the operator's trial):
    the last resort says why the process ends, after giving the lease back."""
    import logging

    from sparseeval.pipeline import lease as lease_module

    ended = []
    monkeypatch.setattr(lease_module.os, "_exit", ended.append)
    held = HomeLease(tmp_path, "run A").acquire()
    caplog.set_level(logging.WARNING, logger="sparseeval.progress")
    lease_module._stop_now(held, 143)
    assert ended == [143] and read_lease(tmp_path / ".lease") is None
    assert "stopped by signal SIGTERM: the run did not end within 2s of it" in caplog.text
