"""The nightly on a watched Inspect AI log folder (issue 45): it publishes a set, and the next
night reads only the logs that are new. Real Prefect test server; the logs are written by
inspect-ai itself (tests/inspect_fixtures.py), one per model, for the benchmark `arc`: the
task's sample ids are the synthetic leaderboard's arc items, and each model answers them as
that leaderboard's model of the same row does, so the Inspect models join the release's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparseeval.pipeline.sources import SyntheticLeaderboard
from sparseeval.pipeline.store import watched
from tests.helpers import ITEMS, release, run
from tests.inspect_fixtures import mc_task

pytestmark = pytest.mark.usefixtures("prefect_harness")


def write_models(log_dir: Path, rows: range) -> None:
    """One Inspect log per synthetic model row in `rows` (task `arc`, its 60 items)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    arc = SyntheticLeaderboard(n_models=260, items=ITEMS, seed=3).leaderboard["arc"]
    questions = {str(i): (f"question {i}?", ["yes", "no"], "A") for i in arc.item_ids}
    models = [
        get_model(f"fixed/inspect-m{k}", answers={f"question {i}?": "B" for i, v in
                                                   zip(arc.item_ids, arc.values[k], strict=True)
                                                   if v <= 0})
        for k in rows
    ]  # fmt: skip
    inspect_eval(mc_task(questions=questions, name="arc"), model=models, log_dir=str(log_dir),
                 display="none", max_tasks=8)  # fmt: skip


@pytest.mark.slow  # real Inspect runs and two nights: the slow group
def test_a_watched_log_folder_publishes_then_reads_only_new_logs(tmp_path, monkeypatch):
    monkeypatch.setattr(watched, "SETTLE_SECONDS", 0)  # the logs are complete
    home, logs = tmp_path / "home", tmp_path / "logs"
    write_models(logs, range(200, 206))
    specs = [release(tmp_path, 0, 200, ["arc"]), f"inspect:{logs}"]
    first = run(home, specs)
    rows = {r["source"]: r for r in first.ingest.sources}
    assert (rows[f"inspect:{logs}"]["new_models"], rows[f"inspect:{logs}"]["new"]) == (6, 360)
    assert first.n_published == 1
    write_models(logs, range(206, 212))
    second = run(home, specs, min_new_models=100)  # what it reads, not another fit
    row = {r["source"]: r for r in second.ingest.sources}[f"inspect:{logs}"]
    assert (row["new_models"], row["new"], row["skipped"]) == (6, 360, 6)
    assert second.n_published == 0
