"""The fit cache is the artifacts on disk: no pickled task results, files gone -> rebuilt."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import maintained, release, run

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture
def fresh_results(tmp_path):
    """A new, empty Prefect result storage (as in a new Prefect home), for one test."""
    from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH, temporary_settings

    path = tmp_path / "results"
    with temporary_settings(updates={PREFECT_RESULTS_LOCAL_STORAGE_PATH: str(path)}):
        yield path


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_home_rebuilt_from_scratch_refreshes_with_another_budget(tmp_path):
    home = tmp_path / "home"
    src = release(tmp_path, 0, 200, ["arc"])
    assert run(home, [src]).n_trained == 1
    shutil.rmtree(home)  # the home rebuilt: the same file ingested again
    again = run(home, [src])
    assert again.n_trained == 1 and not again.failed
    assert Path(again.results[0].matrix.path).is_file()
    other = run(home, [], n_anchors=6)
    r = other.results[0]
    assert r.error is None and r.fit.trained and r.fit.n_anchors == 6
    assert not other.failed


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_a_new_result_storage_reuses_every_fit(tmp_path, fresh_results):
    from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH, temporary_settings

    home = tmp_path / "home"
    first = run(home, [release(tmp_path, 0, 200)])
    assert first.n_trained == 2
    with temporary_settings(updates={PREFECT_RESULTS_LOCAL_STORAGE_PATH: str(tmp_path / "new")}):
        second = run(home, [])
    assert second.n_trained == 0 and second.n_cached == 2
    assert all(r.matrix_cached and r.fit_cached for r in second.results)


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_no_task_result_is_a_pickle(tmp_path, fresh_results):
    home = tmp_path / "home"
    run(home, [release(tmp_path, 0, 200)])
    run(home, [])  # a cached night too
    files = [p for p in fresh_results.rglob("*") if p.is_file()] if fresh_results.exists() else []
    for p in files:
        data = p.read_bytes()
        assert b"cloudpickle" not in data and b'"pickle"' not in data, p
        assert not data.startswith(b"\x80"), p  # a raw pickle stream


def test_a_matrix_whose_file_is_gone_is_rebuilt(tmp_path):
    home = tmp_path / "home"
    first = run(home, [release(tmp_path, 0, 200, ["arc"])])
    Path(first.results[0].matrix.path).unlink()
    second = run(home, [])
    r = second.results[0]
    assert not r.matrix_cached and Path(r.matrix.path).is_file()
    assert r.fit_cached and not second.failed  # the fit's artifact is still there


@pytest.mark.slow  # whole nights, 7 s or more on a worker: the slow group (README)
def test_two_benchmarks_with_the_same_answers_are_each_published_as_themselves(tmp_path):
    """The same answers under two names (one file ingested as arc and as winogrande) share
    no cache entry: winogrande's fit is its own, published as winogrande (it was arc's,
    published as arc/v2 on the first night), and arc's identity file stays arc's."""
    from sparseeval.consume.sets import layout
    from sparseeval.consume.sets.anchorset import load_anchor_set
    from tests.helpers import wide_csv

    home = tmp_path / "home"
    data, _ = wide_csv(tmp_path / "same.csv", 150, 12)
    out = run(home, [f"wide:arc={data}", f"wide:winogrande={data}"])
    assert not out.failed and out.n_published == 2
    pub = home / "published"
    for b in ("arc", "winogrande"):
        assert layout.list_versions(*maintained(pub, b)) == [1], b
        assert load_anchor_set(pub, b).manifest["benchmark"] == b
    assert len({r.fit.model_dir for r in out.results}) == 2
    again = run(home, [])
    assert again.n_trained == 0 and all(r.matrix_cached for r in again.results)
