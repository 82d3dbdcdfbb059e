"""Real data without stumbles in `refresh`: a budget above the pool is capped in one line."""

from __future__ import annotations

from tests.helpers import TINY, wide_csv


def _tiny(**overrides) -> list[str]:
    return [x for k, v in (TINY | overrides).items() for x in ("--set", f"{k}={v}")]


def test_a_budget_above_the_pool_is_capped_and_said_in_one_line(tmp_path, capfd, cli_refresh):
    data, _ = wide_csv(tmp_path / "arc.csv", 150, 12)
    argv = ["--home", str(tmp_path / "home"), "--source", f"wide:arc={data}", "--benchmark",
            "arc", *_tiny(n_anchors=12)]  # fmt: skip
    assert cli_refresh(*argv) == 0
    err = capfd.readouterr().err
    said = "arc: 150 models x 12 items, 11 anchors (of 12 asked: one item at least stays out)"
    assert said in err
    assert "Traceback" not in err and "n_anchors must be in" not in err


def test_a_pool_too_small_fails_the_benchmark_in_one_line(tmp_path, capfd, cli_refresh):
    data, _ = wide_csv(tmp_path / "arc.csv", 150, 1)
    argv = ["--home", str(tmp_path / "home"), "--source", f"wide:arc={data}", *_tiny()]
    assert cli_refresh(*argv) == 2  # its only benchmark failed: nothing landed (exit 2, not 1)
    err = capfd.readouterr().err
    assert "arc: fit: PipelineError: arc: 1 item(s): selecting anchors needs at least 2" in err
    assert "Traceback" not in err
