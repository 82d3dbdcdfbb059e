"""One schedule per home and a clean stop (issue [3/5]), against a real Prefect test server:
a deployed run that finds its home held is a skipped Completed run (it never pages); a
deployment refuses the synthetic demo unless `allow_demo` (a lease holder's SIGTERM:
tests/pipeline/test_lease.py)."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest
from sparseeval.flows import _home
from sparseeval.flows.refresh import refresh

from sparseeval.pipeline.lease import LEASE_FILE
from sparseeval.pipeline.settings import Settings, SettingsError
from tests.helpers import TINY, InADeployment, release

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_a_deployed_run_on_a_held_home_is_skipped_and_does_not_page(monkeypatch, tmp_path):
    monkeypatch.setattr(_home, "deployment", InADeployment)
    home = tmp_path / "home"
    home.mkdir()
    holder = {"holder": "refresh 2026-12-01 03:00 UTC (flow run 1)", "token": "t",
              "pid": os.getpid(), "host": socket.gethostname(),
              "since": "2026-12-01T03:00:00+00:00", "renewed": time.time()}  # fmt: skip
    (home / LEASE_FILE).write_text(json.dumps(holder))
    state = refresh(sources=[release(tmp_path, 0, 200)], home=str(home), return_state=True,
                    settings_overrides=TINY | {"lease_wait_seconds": 0.2})  # fmt: skip
    print("state:", state)
    assert state.is_completed()  # Completed: the alert automation pages on Failed/Crashed only
    assert state.message.startswith(f"skipped: home {home} is in use by 'refresh 2026-12-01")
    assert "one schedule per home" in state.message
    assert json.loads((home / LEASE_FILE).read_text())["token"] == "t"  # left as it was
    assert not (home / "published").exists()


def test_a_deployment_refuses_the_synthetic_demo_unless_allowed(monkeypatch, tmp_path):
    monkeypatch.setattr(_home, "deployment", InADeployment)
    home = tmp_path / "home"
    state = refresh(sources=["synthetic"], home=str(home), return_state=True,
                    settings_overrides=TINY)  # fmt: skip
    exc = state.result(raise_on_failure=False)
    assert state.is_failed() and str(exc) == _home.NO_DEMO
    assert not (home / "published").exists()
    _home.check_no_demo(["synthetic:n_models=300"], Settings.of(allow_demo=True))  # allowed
    with pytest.raises(SettingsError):
        _home.check_no_demo(["synthetic:n_models=300"], Settings.of())
