"""A published set the consumer did not write is bounded before it is loaded (issue 46): an
.npz whose arrays would inflate far beyond any real predictor or item curves is refused in
one line from its zip directory and .npy headers, before an array is read."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from sparseeval.consume.sets import files
from sparseeval.consume.sets.anchorset import load_anchor_set
from sparseeval.consume.sets.layout import AnchorSetError, resolve_version_dir
from tests.consume.test_faults_consumer import B
from tests.consume.test_faults_published import refused_in_one_line, reseal
from tests.helpers import anchor_answers, answers_csv


@pytest.fixture
def published_set(arc_set, fitted, tmp_path):
    """The published ARC set (a fresh copy) and one test model's answers file."""
    return arc_set, answers_csv(tmp_path / "a.csv", anchor_answers(fitted))


def _bomb(path, shape=(20_000, 20_000)) -> None:
    """Replace the first array of the .npz at `path` with one whose header declares `shape`
    (3.2 GB of float64 for the default) over a few bytes of data."""
    with np.load(path) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    first = next(iter(arrays))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for name, value in arrays.items():
            with out.open(f"{name}.npy", "w") as f:
                if name == first:
                    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
                    np.lib.format.write_array_header_1_0(f, header)
                    f.write(b"\0" * 64)
                else:
                    np.lib.format.write_array(f, value)


def test_an_npz_declaring_gigabytes_is_refused_before_loading(published_set, capsys, monkeypatch):
    root, answers = published_set
    folder = resolve_version_dir(root, B, 1)
    path = folder / "predictor" / "weights.npz"
    _bomb(path)
    reseal(folder)
    read = np.lib.format.read_array
    monkeypatch.setattr(np.lib.format, "read_array", lambda *a, **k: pytest.fail("read"))
    err = refused_in_one_line(root, answers, capsys, f"{path.name} declares more than")
    assert "refused before loading" in err
    monkeypatch.setattr(np.lib.format, "read_array", read)


def test_a_set_within_the_bound_loads(published_set):
    root, _ = published_set
    aset = load_anchor_set(root, B)
    weights = aset.folder / "predictor" / "weights.npz"
    files.check_npz_size(aset.folder, weights)  # the real one: far under the bound
    with pytest.raises(AnchorSetError, match="declares more than 100 bytes"):
        files.check_npz_size(aset.folder, weights, limit=100)


# -- answers that name none of the set's anchors ------------------------------------------


@pytest.mark.parametrize("more", [[], ["--allow-missing"]])
def test_answers_of_another_benchmark_are_told_so_not_all_missing(arc_set, tmp_path, capsys, more):
    from tests.consume.test_faults_consumer import one_line_error, predict

    answers = tmp_path / "other.csv"
    answers.write_text("item,correct\n" + "".join(f"q{j},{j % 2}\n" for j in range(40)))
    err = one_line_error(*predict(arc_set, [answers], capsys, *more))
    assert "none of your 40 answers' ids are this set's anchors (yours: q0, q1, q2, ...;" in err
    assert "anchors missing" not in err and "--allow-missing" not in err


def test_a_blank_template_still_says_which_anchors_are_missing(arc_set, tmp_path, capsys):
    from tests.consume.test_faults_consumer import one_line_error, predict

    aset = load_anchor_set(arc_set, B)
    answers = tmp_path / "blank.csv"
    answers.write_text("item,correct\n" + "".join(f"{i},\n" for i in aset.items))
    err = one_line_error(*predict(arc_set, [answers], capsys))
    assert "none of your" not in err


def test_the_library_says_the_same_for_a_dict_of_answers(arc_set):
    from sparseeval.consume.answers.responses import ResponsesError

    aset = load_anchor_set(arc_set, B)
    with pytest.raises(ResponsesError, match="none of your 2 answers' ids are this set's"):
        aset.predict({"q1": 1, "q2": 0}, allow_missing=True)


def test_a_plain_answers_file_for_the_suite_says_its_ids_are_not_the_suites(tmp_path, capsys):
    from sparseeval.cli import main
    from sparseeval.method.synthetic import make_leaderboard
    from sparseeval.pipeline.settings import Settings
    from sparseeval.pipeline.suite_publish import write_suite
    from sparseeval.pipeline.suite_recipe import fit_suite
    from sparseeval.pipeline.versions import set_latest

    settings = Settings.of(home=tmp_path, n_anchors=4, n_test=40, n_valid=40, n_calib=40,
                        refine_steps=0, epochs=20, patience=5, ensemble=1)  # fmt: skip
    lb = make_leaderboard(240, {"arc": 30, "gsm8k": 25}, seed=4)
    write_suite(tmp_path, fit_suite(lb, settings), settings)
    set_latest(tmp_path, "suite", 1)
    plain = tmp_path / "plain.csv"
    plain.write_text("item,correct\n" + "".join(f"{j},1\n" for j in range(30)))
    rc = main(["predict", "--anchor-set", str(tmp_path), "--benchmark", "suite",
               "--responses", str(plain)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "none of your 30 answers' ids are this set's anchors" in err, err


# -- a Hub download: one line, no progress bars before it ----------------------------------


def test_a_failed_hub_download_prints_no_progress_bars_before_its_line(capfd):
    from huggingface_hub.utils import are_progress_bars_disabled
    from huggingface_hub.utils import tqdm as hub_tqdm

    from sparseeval.consume.sets.hub import download_version

    class Client:  # draws the Hub's own bar, as snapshot_download does, then fails
        def snapshot_download(self, repo_id, **kw):
            for _ in hub_tqdm(range(3), desc="Fetching 3 files"):
                pass
            raise ConnectionError("the Hub is unreachable")

    before = are_progress_bars_disabled()
    with pytest.raises(AnchorSetError, match="could not download 'arc' from hub repo o/r"):
        download_version("o/r", "arc", 1, Client())
    assert "Fetching" not in capfd.readouterr().err
    assert are_progress_bars_disabled() == before  # the caller's setting is back
