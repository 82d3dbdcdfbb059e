"""The artifacts cache trusts no file it did not just write: each entry is sealed with its
key, its facts and its files' hashes; anything else on read is a logged miss, rebuilt."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from sparseeval.pipeline import artifacts
from sparseeval.pipeline.artifacts import (
    artifact_path,
    load_matrix,
    matrix_key,
    note_refusal,
    refused_before,
)
from sparseeval.pipeline.identity import anchor_sources, identity_path
from sparseeval.pipeline.recipe import (
    POOL_FILE,
    benchmark_states,
    cached_fit,
    fit_step,
    matrix_step,
    pool_check_of,
)
from sparseeval.pipeline.settings import Settings
from sparseeval.pipeline.store import LongTable, Store, ingest
from tests.helpers import TINY, release


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A store with arc and gsm8k (200 models each); settings of a tiny fit."""
    root = tmp_path_factory.mktemp("cache")
    settings = Settings.of(home=root).replace(**TINY)
    with Store.open(settings.paths.store_path) as s:
        ingest(s, LongTable(release(root, 0, 200)))
    return settings


def _matrix(settings, bench="arc"):
    state = benchmark_states(settings.paths.store_path)[bench]
    return matrix_step(settings.paths, settings.matrix, bench, state)


def _pointer(settings, bench="arc") -> Path:
    state = benchmark_states(settings.paths.store_path)[bench]
    key = matrix_key(bench, state, settings.matrix, settings.paths.artifacts_dir)
    return artifact_path(settings.paths.artifacts_dir, "matrix", key + ".json")


def test_a_sealed_matrix_is_reused(home):
    first = _matrix(home)
    again = _matrix(home)
    assert again.built is False and again.fingerprint == first.fingerprint


@pytest.mark.parametrize(
    "damage",
    [
        "truncate",
        "garble-items",
        "garble-pointer",
        "no-seal",
        "matrix-a-folder",
        "items-a-folder",
        "pointer-a-folder",
    ],
)
def test_a_damaged_matrix_entry_is_a_logged_miss_rebuilt(home, damage, caplog):
    info = _matrix(home)
    path, pointer = Path(info.path), _pointer(home)
    if damage.endswith("a-folder"):  # unreadable: a folder where the file was
        what = {"matrix": path, "items": identity_path(path), "pointer": pointer}
        what[damage.split("-")[0]].unlink()
        what[damage.split("-")[0]].mkdir()
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "garble-items":
        identity_path(path).write_text("{not json")
    elif damage == "garble-pointer":
        pointer.write_text('{"benchmark": ')
    else:
        data = json.loads(pointer.read_text())
        pointer.write_text(json.dumps({k: v for k, v in data.items() if k != "seal"}))
    with caplog.at_level(logging.WARNING, "sparseeval.pipeline.cache"):
        again = _matrix(home)
    assert again.built is True
    assert "cache miss" in caplog.text and (pointer.name in caplog.text)
    assert load_matrix(again.path).shape == (info.n_models, info.n_items)
    assert json.loads(identity_path(again.path).read_text())  # the identity written again
    assert _matrix(home).built is False  # and sealed again


def test_a_matrix_swapped_for_another_benchmarks_is_not_used(home, caplog):
    arc, gsm = _matrix(home, "arc"), _matrix(home, "gsm8k")
    shutil.copy(gsm.path, arc.path)
    with caplog.at_level(logging.WARNING, "sparseeval.pipeline.cache"):
        again = _matrix(home, "arc")
    assert again.built and "not the file that was written" in caplog.text
    assert list(load_matrix(again.path).item_ids) != list(load_matrix(gsm.path).item_ids)


def test_a_pointer_naming_another_benchmark_is_a_miss(home, caplog):
    _matrix(home, "arc")
    gsm = _matrix(home, "gsm8k")
    shutil.copy(_pointer(home, "gsm8k"), _pointer(home, "arc"))
    with caplog.at_level(logging.WARNING, "sparseeval.pipeline.cache"):
        again = _matrix(home, "arc")
    assert again.built and again.fingerprint != gsm.fingerprint and "'gsm8k'" in caplog.text


@pytest.fixture(scope="module")
def fitted(home):
    info = _matrix(home)
    return info, fit_step(info, home)


@pytest.mark.parametrize("part", ["summary.json", POOL_FILE, "evaluation.npz", "seal.json"])
def test_a_damaged_fit_is_fitted_again(home, fitted, part, caplog):
    info, fit = fitted
    folder = Path(fit.model_dir)
    (folder / part).write_bytes(b"\x00garbled")
    assert cached_fit(folder, fit.key, info.fingerprint) is None
    with caplog.at_level(logging.WARNING, "sparseeval.pipeline.cache"):
        again = fit_step(info, home)
    assert again.trained and "cache miss" in caplog.text and str(folder) in caplog.text
    assert pool_check_of(again) is not None
    assert fit_step(info, home).trained is False  # sealed again


def test_a_fit_is_not_reused_for_another_matrix(home, fitted):
    info, fit = fitted
    assert cached_fit(fit.model_dir, fit.key, info.fingerprint) is not None
    assert cached_fit(fit.model_dir, fit.key, "0" * 64) is None
    assert cached_fit(fit.model_dir, "another-key", info.fingerprint) is None


def test_a_garbled_identity_never_publishes_a_set_without_hashes(home):
    """The identity file is part of the matrix's seal: garbled, the matrix step writes it again
    before anything is published from it."""
    info = _matrix(home)
    identity_path(info.path).write_text("[1, 2")
    again = _matrix(home)
    items = list(load_matrix(again.path).item_ids[:3])
    assert anchor_sources(again.path, items, "arc") is not None


@pytest.mark.parametrize("text", ["{oops", "[1, 2]", '"a string"'])
def test_damaged_ledger_and_notes_are_misses_not_errors(tmp_path, text, caplog):
    path = artifact_path(tmp_path, "published", "arc-refused.json")
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with caplog.at_level(logging.WARNING, "sparseeval.pipeline.cache"):
        assert refused_before(tmp_path, "arc", "k") is None
    assert "cache miss" in caplog.text
    note_refusal(tmp_path, "arc", "k", "worse")
    assert refused_before(tmp_path, "arc", "k") == "worse"


def test_read_note_keeps_a_good_note(tmp_path):
    p = tmp_path / "n.json"
    p.write_text(json.dumps({"a": 1}))
    assert artifacts.read_note(p, {}) == {"a": 1}
    assert artifacts.read_note(tmp_path / "absent.json", {}) == {}


def test_the_seal_lists_every_file(tmp_path):
    folder = tmp_path / "entry"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("a")
    (folder / "sub" / "b.npy").write_bytes(np.arange(3).tobytes())
    artifacts.seal_folder(folder, "k", matrix_fingerprint="f")
    artifacts.check_folder(folder, "k", ("a.txt",), matrix_fingerprint="f")
    (folder / "sub" / "b.npy").write_bytes(b"")
    with pytest.raises(artifacts.CacheMiss, match=r"b\.npy"):
        artifacts.check_folder(folder, "k", ("a.txt",), matrix_fingerprint="f")


def test_an_unwritable_artifacts_folder_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "artifacts"
    blocker.write_text("a file where the folder should be")
    with pytest.raises(artifacts.CacheUnwritable, match=r"artifacts folder .* cannot be written"):
        artifacts.check_writable(blocker)

    def read_only(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(artifacts.tempfile, "mkstemp", read_only)
    with pytest.raises(artifacts.CacheUnwritable, match="Permission denied"):
        artifacts.check_writable(tmp_path / "ok")
    monkeypatch.undo()
    artifacts.check_writable(tmp_path / "ok")
    assert list((tmp_path / "ok").iterdir()) == []  # no probe left behind


def test_a_fits_seconds_count_the_time_to_its_files(home, monkeypatch):
    """`trained in Ns` includes the pool check and its top edge (a refit), not only selection."""
    import time

    from sparseeval.method import pool

    real = pool.estimator_pool_check

    def slow_check(*args, **kw):
        time.sleep(1.5)
        return real(*args, **kw)

    monkeypatch.setattr(pool, "estimator_pool_check", slow_check)
    info = _matrix(home)
    start = time.perf_counter()
    fit = fit_step(info, home, force=True)
    wall = time.perf_counter() - start
    # seconds are saved rounded to 0.01 s (a fit of 1.9384 s is 1.94)
    assert fit.trained and wall - 0.5 <= fit.seconds <= wall + 0.005, (fit.seconds, wall)
    saved = json.loads((Path(fit.model_dir) / "summary.json").read_text())
    assert saved["seconds"] == fit.seconds
