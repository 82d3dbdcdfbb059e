"""A full disk while a refresh publishes is a fault of the machine (issue 46): the command
says it in one line (exit 1: some benchmarks failed, or 2), never 'a bug in sparseeval'
with a traceback, and nothing half-written is published."""

from __future__ import annotations

import errno

import pytest

from sparseeval.pipeline import versions
from tests.helpers import TINY, release

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_a_full_disk_while_publishing_is_one_line_not_a_bug(tmp_path, capsys, cli_refresh,
                                                            monkeypatch):  # fmt: skip
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(versions, "write_version", full)
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    code = cli_refresh("--home", str(tmp_path / "home"), "--source",
                       release(tmp_path, 0, 200), *sets)  # fmt: skip
    err = capsys.readouterr().err
    assert code in (1, 2), err
    assert "No space left on device" in err
    assert "a bug in sparseeval" not in err and "Traceback" not in err
    assert not list((tmp_path / "home").rglob("manifest.json"))  # nothing published
