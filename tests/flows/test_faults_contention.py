"""Publishing under contention (issue 21): runs on one home at once never tombstone each
other's candidate. Two real `sparseeval refresh` processes race on one home; a retrain
started while another run holds the home waits for it (it used to publish past the lease,
and a refresh starting meanwhile took its candidate for a crashed run's leftover).
The runs here publish the benchmarks' sets only (`suite = false`): those are what is checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import TOMBSTONE, list_versions, live_budget, set_dir
from sparseeval.consume.sets.promotion import promoted_versions
from sparseeval.pipeline.lease import HomeLease, LeaseHeld
from sparseeval.pipeline.versions import LEFTOVER_REASON
from tests.helpers import TINY, release, run

ROOT = Path(__file__).resolve().parents[2]
SETS = ("arc", "gsm8k")
NO_SUITE = {"suite": False}  # the benchmarks' candidates are what these tests look at
SMALL = {"n_anchors": 2, "refine_steps": 0}  # one budget (k2) for the fixture and the races


@pytest.fixture
def published_home(prefect_harness, tmp_path):
    """A home where release [0, 200) is published (v1 of arc and gsm8k)."""
    home = tmp_path / "home"
    run(home, [release(tmp_path, 0, 200)], **SMALL, **NO_SUITE)
    return home


def _set(home: Path, b: str) -> Path:
    """The folder of the set readers load (`{b}/k{K}`; the suite's is `suite/`)."""
    root = home / "published"
    return set_dir(root, b, live_budget(root, b))


def tombstones(home: Path) -> dict[str, str]:
    """{set/vN: reason} of every tombstone under published/."""
    out = {}
    for b in SETS:
        for p in _set(home, b).glob(".discarded-v*"):
            out[f"{b}/v{TOMBSTONE.match(p.name).group(1)}"] = json.loads(p.read_text())["reason"]
    return out


def cli_refresh(home: Path, source: str) -> subprocess.Popen:
    from prefect.settings import PREFECT_API_URL

    env = os.environ | {"PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONPATH": str(ROOT)}
    values = TINY | SMALL | NO_SUITE | {"drift_mae_points": 0.01}
    sets = [f"--set={k}={v}" for k, v in values.items()]
    argv = [sys.executable, "-m", "sparseeval", "refresh", "--home", str(home), "--source",
            source, "--set=lease_wait_seconds=240", *sets]  # fmt: skip
    return subprocess.Popen(argv, env=env, cwd=home.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip


@pytest.mark.slow  # minutes: the slow group
def test_two_refreshes_at_once_never_tombstone_each_others_candidate(published_home, tmp_path):
    home = published_home
    procs = [cli_refresh(home, release(tmp_path, lo, lo + 60)) for lo in (200, 260)]
    outs = [p.communicate(timeout=400)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("Traceback" not in out for out in outs), outs
    leftovers = {v: why for v, why in tombstones(home).items() if why == LEFTOVER_REASON}
    assert not leftovers, (leftovers, outs)
    for b in SETS:
        folder = _set(home, b)
        promoted = promoted_versions(folder)
        assert set(list_versions(home / "published", b, live_budget(home / "published", b))) <= set(
            promoted
        )
        load_anchor_set(home / "published", b)
    assert max(promoted_versions(_set(home, "arc"))) >= 2  # new data was published


def test_a_retrain_waits_for_the_run_holding_the_home(published_home):
    from sparseeval.flows.manual import retrain_benchmark

    home = published_home
    before = {b: sorted((home / "published" / b).iterdir()) for b in SETS}
    overrides = TINY | SMALL | NO_SUITE | {"lease_wait_seconds": 0.3}
    with HomeLease(home, "refresh nightly (another process)"):
        state = retrain_benchmark("arc", home=str(home), settings_overrides=overrides,
                                  return_state=True)  # fmt: skip
    exc = state.result(raise_on_failure=False)
    assert isinstance(exc, LeaseHeld), exc
    assert "refresh nightly (another process)" in str(exc)
    assert {b: sorted((home / "published" / b).iterdir()) for b in SETS} == before
