"""What the CLI writes and prints for a user to paste (issue 46): a full disk leaves no empty
or half file (`export-lm-eval --out/--tasks-dir`, `anchors --template`, `matrix --export`),
`next:` lines quote paths for the shell, and bounded numbers refuse absurd values in one line.
"""

from __future__ import annotations

import errno
import json
import shlex
from pathlib import Path

import polars as pl
import pytest

from sparseeval.cli import main
from tests.helpers import published, tiny_fit
from tests.lm_eval_cli import arc_doc

N_DOCS = 60
FULL = OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture(scope="module")
def arc(tmp_path_factory):
    """A published ARC set over doc ids 0..59 in a folder whose name a shell would expand,
    and a local dataset of those docs."""
    tmp = tmp_path_factory.mktemp("writes")
    fitted = tiny_fit(seed=2, n_test=60, n_valid=80, item_ids=[str(j) for j in range(N_DOCS)])
    root = published(tmp / "pub $(touch pwned) x", "arc", fitted)
    data = tmp / "arc_test.jsonl"
    data.write_text("".join(json.dumps(arc_doc(j)) + "\n" for j in range(N_DOCS)))
    return root, data


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return rc, out, err


def _full_midway(monkeypatch, cls, name: str) -> None:
    """`cls.name(self, first, ...)` writes half of what it was given, then the disk is full."""
    real = getattr(cls, name)

    def half(self, *args, **kwargs):
        if isinstance(self, Path) and args and isinstance(args[0], str):
            Path.write_bytes(self, args[0][: len(args[0]) // 2].encode())
        elif args and isinstance(args[0], str | Path):
            Path(args[0]).write_text("model,1,2\nm0,")
        raise FULL

    assert callable(real)
    monkeypatch.setattr(cls, name, half)


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_template_on_a_full_disk_leaves_no_half_file(arc, tmp_path, capsys, monkeypatch):
    root, _ = arc
    template = tmp_path / "answers.csv"
    _full_midway(monkeypatch, Path, "write_text")
    rc, _, err = cli(capsys, "anchors", "--anchor-set", root, "--benchmark", "arc",
                     "--template", template)  # fmt: skip
    assert rc == 2 and "No space left on device" in err and len(err.splitlines()) == 1
    assert _left(tmp_path) == []  # neither the template nor a temporary


def test_export_out_and_tasks_dir_on_a_full_disk_leave_nothing(arc, tmp_path, capsys, monkeypatch):
    root, data = arc
    tasks = tmp_path / "tasks"
    (tasks / "sparseeval_arc").mkdir(parents=True)
    (tasks / "sparseeval_arc" / "keep.txt").write_text("an older export")
    _full_midway(monkeypatch, Path, "write_text")
    rc, _, err = cli(capsys, "export-lm-eval", "--anchor-set", root, "--benchmark", "arc",
                     "--tasks-dir", tasks, "--dataset", data)  # fmt: skip
    assert rc == 2 and "No space left on device" in err, err
    assert _left(tasks) == ["sparseeval_arc"] and _left(tasks / "sparseeval_arc") == ["keep.txt"]
    assert _left(tmp_path) == ["tasks"]  # no staging folder left behind
    rc, _, err = cli(capsys, "export-lm-eval", "--anchor-set", root, "--benchmark", "arc",
                     "--out", tmp_path / "samples.json")  # fmt: skip
    assert rc == 2 and "No space left on device" in err
    assert _left(tmp_path) == ["tasks"]


def test_matrix_export_csv_on_a_full_disk_leaves_no_half_file(tmp_path, capsys, monkeypatch):
    data = tmp_path / "a.csv"
    data.write_text("model,benchmark,item,correct\n" + "".join(
        f"m{m},arc,{i},{(m + i) % 2}\n" for m in range(3) for i in range(4)))  # fmt: skip
    store = tmp_path / "s.duckdb"
    assert cli(capsys, "ingest", data, "--store", store)[0] == 0
    _full_midway(monkeypatch, pl.DataFrame, "write_csv")
    out = tmp_path / "out" / "arc.csv"
    rc, _, err = cli(capsys, "matrix", "arc", "--store", store, "--export", out)
    assert rc == 2 and "No space left on device" in err and len(err.splitlines()) == 1
    assert _left(out.parent) == []


def test_next_lines_quote_paths_for_the_shell(arc, tmp_path, capsys):
    root, data = arc
    template = tmp_path / "my answers $(id).csv"
    rc, _, err = cli(capsys, "anchors", "--anchor-set", root, "--benchmark", "arc",
                     "--template", template)  # fmt: skip
    assert rc == 0
    words = shlex.split(err.splitlines()[-1].split("then: ", 1)[1])
    assert words[words.index("--anchor-set") + 1] == str(root)
    assert words[words.index("--responses") + 1] == str(template)
    tasks = tmp_path / "tasks dir"
    rc, _, err = cli(capsys, "export-lm-eval", "--anchor-set", root, "--benchmark", "arc",
                     "--tasks-dir", tasks, "--dataset", data)  # fmt: skip
    assert rc == 0 and (tasks / "sparseeval_arc" / "utils.py").is_file()
    words = shlex.split(next(x for x in err.splitlines() if x.startswith("next:")))
    assert words[words.index("--include_path") + 1] == str(tasks)


@pytest.mark.parametrize(
    "argv",
    [
        ["predict", "--benchmark", "arc", "--responses", "a.csv", "--max-width", "-3"],
        ["matrix", "arc", "--max-missing", "1.5"],
        ["ingest", "a.csv", "--wait", "nan"],
    ],
)
def test_absurd_numbers_are_usage_errors(capsys, argv):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "must be a number" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "--synthetic", "300", "60", "--seed", "-1"],
        ["fit", "--synthetic", "-3", "60"],
        ["anchors", "--anchor-set", "x", "--benchmark", "arc", "--budget", "0"],
    ],
)
def test_absurd_whole_numbers_are_usage_errors(capsys, argv):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2 and "must be a whole number" in capsys.readouterr().err


def test_a_synthetic_demo_too_big_to_make_is_one_line(capsys):
    rc, _, err = cli(capsys, "fit", "--synthetic", "1000000", "1000")
    assert rc == 2 and "more than the demo makes" in err and len(err.splitlines()) == 1


def test_the_reports_commands_quote_the_published_folder(arc):
    from sparseeval.consume.sets.anchorset import load_anchor_set
    from sparseeval.pipeline.reports.anchor_report import _use_it

    root, _ = arc
    aset = load_anchor_set(root, "arc")
    lines = [x for x in _use_it(aset.manifest, aset.folder).splitlines() if x.startswith("sparse")]
    for line in lines:
        words = shlex.split(line.split("  #")[0])
        assert words[words.index("--anchor-set") + 1] == str(root.resolve())
