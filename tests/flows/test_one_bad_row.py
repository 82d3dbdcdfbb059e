"""One bad row never stops a benchmark (issue 46), a whole night against a real Prefect test
server: a stray row for an item no other model has, and a file of an unknown benchmark, lie
in the inbox beside a good release. Both benchmarks train and publish; the stray result is
set aside and said in the matrix line and the run report, the unknown file is quarantined
once, named in the ingest line and report, and moved aside; the next night stores nothing
again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sparseeval.flows.refresh import refresh

from sparseeval.pipeline.store import Store
from tests.helpers import TINY, release

pytestmark = pytest.mark.usefixtures("prefect_harness")
HEADER = "model,benchmark,item,correct\n"


def _settled(path) -> None:
    old = os.path.getmtime(path) - 3600
    os.utime(path, (old, old))


def test_a_stray_row_and_an_unknown_benchmark_do_not_stop_the_night(tmp_path):
    home, inbox = tmp_path / "home", tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(release(tmp_path, 0, 200), inbox / "good.parquet")
    (inbox / "stray.csv").write_text(HEADER + "org/newcomer,arc,99999,1\n")
    (inbox / "unknown.csv").write_text(HEADER + "".join(f"m0,nosuch,{i},1\n" for i in range(9)))
    for f in inbox.iterdir():
        _settled(f)
    overrides = TINY | {"sources": [f"inbox:{inbox}"]}
    state = refresh(home=str(home), return_state=True, settings_overrides=overrides)
    assert state.is_completed(), state.result(raise_on_failure=False)
    run = state.result()
    assert run.n_published == 2 and not run.failed
    (arc,) = [r for r in run.results if r.benchmark == "arc"]
    assert "set aside 1 result(s) of 1 item(s)" in arc.matrix.summary
    assert "stray.csv (1)" in arc.matrix.summary
    report = Path(run.report_path).read_text()  # where the operator looks
    assert f"- **arc**: {arc.outcome}\n  - set aside 1 result(s) of 1 item(s)" in report
    assert "stray.csv (1)); the matrix is built from the rest" in report
    assert "9 quarantined (unknown.csv: 9 unknown benchmark: nosuch)" in run.ingest.line()
    assert f"- {inbox / 'unknown.csv'}: 9 (9 unknown benchmark: nosuch)" in run.ingest.markdown()
    assert (inbox / "failed" / "unknown.csv").is_file()

    again = refresh(home=str(home), return_state=True, settings_overrides=overrides).result()
    assert again.ingest.quarantined == 0 and not again.failed
    with Store.open(home / "store.duckdb", read_only=True) as store:
        assert store.scalar("count_quarantine") == 9  # held once, not once a night
