"""A refresh on an existing Dask cluster (`dask_address`): a scheduler and two workers started
as separate processes on 127.0.0.1 (`tests/dask_cluster.py`), the home on a path all see."""

from __future__ import annotations

import pytest

from tests.dask_cluster import local_cluster
from tests.helpers import TINY, release

pytest.importorskip("prefect_dask")
pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]  # real processes


def test_refresh_on_an_existing_cluster_runs_on_its_workers(tmp_path):
    from prefect.settings import PREFECT_API_URL
    from sparseeval.flows.refresh import refresh

    # the workers report their task runs to this session's Prefect server
    with local_cluster(tmp_path, 2, {"PREFECT_API_URL": PREFECT_API_URL.value()}) as client:
        out = refresh(
            sources=[release(tmp_path, 0, 200)],
            home=str(tmp_path / "home"),
            settings_overrides=TINY
            | {"task_runner": "dask", "dask_address": client.scheduler.address},
        )
        ran = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert out.task_runner == "DaskTaskRunner"
    assert out.n_trained == 2 and out.n_published == 2, out
    # the matrix and fit tasks (2 benchmarks) ran in the two worker processes
    assert len(ran) == 2 and sum(ran.values()) >= 4, ran
