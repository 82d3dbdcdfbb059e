"""Fixtures of the consumer tests: the tiny ARC fit and its published set (`arc_set`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import published, tiny_fit


@pytest.fixture(scope="module")
def fitted():
    """Item ids are lm-eval doc ids ("0".."59"), so lm-eval samples files map too."""
    return tiny_fit(seed=2, n_test=60, n_valid=80, item_ids=[str(j) for j in range(60)])


@pytest.fixture(scope="module")
def pristine_arc_set(tmp_path_factory, fitted) -> Path:
    """`fitted` published as ARC v1 (latest), once per module (a report's plots take ~1 s)."""
    return published(tmp_path_factory.mktemp("pristine") / "published", "arc", fitted)


@pytest.fixture
def arc_set(tmp_path, pristine_arc_set) -> Path:
    """`pristine_arc_set` copied under tmp_path/published: a fresh copy that a test may
    damage."""
    return Path(shutil.copytree(pristine_arc_set, tmp_path / "published", symlinks=True))
