"""Real data without stumbles in `refresh`: a budget above the pool is capped in one line;
a benchmark that fails is the CLI's one line, not Prefect's traceback (issue 28, class 6)."""

from __future__ import annotations

import re

import pytest

from tests.helpers import TINY, wide_csv

PROGRESS = re.compile(r"\d\d:\d\d:\d\d [^|]")  # the CLI's progress lines, not Prefect's


def _tiny(**overrides) -> list[str]:
    return [x for k, v in (TINY | overrides).items() for x in ("--set", f"{k}={v}")]


def test_a_budget_above_the_pool_is_capped_and_said_in_one_line(tmp_path, capfd, cli_refresh):
    data, _ = wide_csv(tmp_path / "arc.csv", 150, 12)
    argv = ["--home", str(tmp_path / "home"), "--source", f"wide:arc={data}", "--benchmark",
            "arc", *_tiny(n_anchors=12, max_anchor_share=1)]  # fmt: skip
    assert cli_refresh(*argv) == 0
    err = capfd.readouterr().err
    said = "arc: 150 models x 12 items, 11 anchors (of 12 asked: at least one item stays out"
    assert said in err
    assert "Traceback" not in err and "n_anchors must be in" not in err
    # what the anchors save, and a hint when they save little (issue [5/5], item 1)
    capped = "11 anchors (of 12 asked: at least one item stays out of the anchors)"
    assert f"{capped}, 1.1x cheaper" in err
    assert "saves little: --anchors 4 would read a third of the items (3.0x)" in err


def test_the_default_budget_reads_at_most_a_third_of_the_items(tmp_path, capfd, cli_refresh):
    """100 anchors on a 100-item benchmark saved nothing (99 of 100 items): the budget is
    capped at `max_anchor_share` (a third) and the line says so and what it saves."""
    data, _ = wide_csv(tmp_path / "arc.csv", 150, 12)
    argv = ["--home", str(tmp_path / "home"), "--source", f"wide:arc={data}", "--benchmark",
            "arc", *_tiny(n_anchors=100)]  # fmt: skip
    assert cli_refresh(*argv) == 0
    err = capfd.readouterr().err
    assert (
        "arc: 150 models x 12 items, 4 anchors (of 100 asked: the anchors read at most 33%"
        " of the items: max_anchor_share), 3.0x cheaper than all items"
    ) in err
    assert "saves little" not in err


def test_a_pool_too_small_fails_the_benchmark_in_one_line(tmp_path, capfd, cli_refresh):
    data, _ = wide_csv(tmp_path / "arc.csv", 150, 1)
    argv = ["--home", str(tmp_path / "home"), "--source", f"wide:arc={data}", *_tiny()]
    assert cli_refresh(*argv) == 2  # its only benchmark failed: nothing landed (exit 2, not 1)
    err = capfd.readouterr().err
    assert "arc: fit: PipelineError: arc: 1 item(s): selecting anchors needs at least 2" in err
    assert "Traceback" not in err


def _failing_benchmarks(tmp_path) -> list[str]:
    """arc that fits, gsm8k of one item (its fit fails) and hellaswag where each model
    answered other items (its matrix fails): the `--source` arguments."""
    arc, _ = wide_csv(tmp_path / "arc.csv", 150, 12)
    gsm8k, _ = wide_csv(tmp_path / "gsm8k.csv", 150, 1)
    disjoint = tmp_path / "hellaswag.csv"
    rows = [
        f"m{m:03d},hellaswag,it{3 * m + i},{(m + i) % 2}\n" for m in range(150) for i in range(3)
    ]
    disjoint.write_text("model,benchmark,item,correct\n" + "".join(rows))
    return ["--source", f"wide:arc={arc}", "--source", f"wide:gsm8k={gsm8k}",
            "--source", str(disjoint)]  # fmt: skip


@pytest.mark.parametrize("runner", ["thread", pytest.param("dask", marks=pytest.mark.slow)])
def test_failed_benchmarks_say_one_line_not_prefects(tmp_path, capfd, cli_refresh, runner):
    """The console of a refresh where benchmarks fail: the progress lines and the CLI's one
    error line; Prefect's traceback and "Finished in state" lines stay in the run's log,
    the worker processes' too (`--task-runner dask`)."""
    if runner == "dask":
        pytest.importorskip("prefect_dask")
    argv = ["--home", str(tmp_path / "home"), *_failing_benchmarks(tmp_path), *_tiny(),
            "--task-runner", runner, "--set", "workers=2"]  # fmt: skip
    assert cli_refresh(*argv) == 1  # arc landed, the two others failed
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Finished in state" not in err, err
    said = [line for line in err.splitlines() if not PROGRESS.match(line)]
    assert len(said) == 1 and said[0].startswith("sparseeval refresh: error: refresh failed for")
    assert "gsm8k: fit: PipelineError: gsm8k: 1 item(s)" in said[0]
    assert "arc: published v1" in err
    assert "hellaswag: matrix: MatrixError: hellaswag: no complete models x items" in err


def test_the_worker_console_filter_keeps_a_bug_and_drops_input_errors(monkeypatch):
    """`dask_setup` (a local Dask worker's preload) filters this process's consoles only when
    the CLI asked; the filter keeps a bug's record and drops Prefect's end-state lines."""
    import logging

    from sparseeval.flows import _console

    from sparseeval.pipeline.recipe import PipelineError

    console = logging.StreamHandler()
    logging.getLogger().addHandler(console)
    try:
        monkeypatch.delenv(_console.QUIET_ENV, raising=False)
        _console.dask_setup()
        assert console.filters == []  # no CLI run asked: a deployment's worker is as it was
        monkeypatch.setenv(_console.QUIET_ENV, "1")
        _console.dask_setup()
        _console.dask_setup()
        (drop,) = console.filters
    finally:
        logging.getLogger().removeHandler(console)

    def record(name, level, msg, exc=None):
        return logging.LogRecord(name, level, "f", 1, msg, None, exc and (type(exc), exc, None))

    task = "prefect.task_runs"
    assert not drop.filter(record(task, logging.ERROR, "x", PipelineError("arc: 1 item(s)")))
    assert not drop.filter(record(task, logging.ERROR, "Finished in state Failed('...')"))
    assert drop.filter(record(task, logging.ERROR, "Task run failed", ValueError("a bug")))
    assert drop.filter(record(task, logging.INFO, "Finished in state Completed()"))
    assert drop.filter(record("sparseeval.progress", logging.ERROR, "Finished in state x"))
    still = "Worker process still alive after 4.0 seconds, killing"  # a busy machine's Dask
    assert not drop.filter(record("distributed.nanny", logging.WARNING, still))
    assert drop.filter(record("distributed.nanny", logging.ERROR, "a worker died"))
