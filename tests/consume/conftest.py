"""Fixtures of the consumer tests."""

from __future__ import annotations

import pytest

from tests.helpers import tiny_fit


@pytest.fixture(scope="module")
def fitted():
    """Item ids are lm-eval doc ids ("0".."59"), so lm-eval samples files map too."""
    return tiny_fit(seed=2, n_test=60, n_valid=80, item_ids=[str(j) for j in range(60)])
