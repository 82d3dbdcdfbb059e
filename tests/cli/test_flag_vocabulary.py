"""One flag vocabulary (issue [1/5], item 4): `--home DIR` and `--config FILE` on every
command, each the same as its environment variable (SPARSEEVAL_HOME, SPARSEEVAL_CONFIG) for
that command's run. Before, `refresh` and `config` took `--home`, `fit` a `--config` that
read ./sparseeval.toml only, and `ingest`, `matrix`, `quarantine`, `check` and `predict`
neither."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from sparseeval.cli import build_parser
from tests.helpers import cli, wide_csv


def _leaves(parser: argparse.ArgumentParser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, child in action.choices.items():
            yield from _leaves(child, (*path, name))


def test_every_command_takes_home_and_config():
    leaves = dict(_leaves(build_parser()))
    assert {("ingest",), ("refresh",), ("fit",), ("predict",), ("quarantine", "list")} <= set(
        leaves
    )
    for path, parser in leaves.items():
        options = {o for a in parser._actions for o in a.option_strings}
        assert {"--home", "--config"} <= options, " ".join(path)


def _sparseeval(*argv, cwd) -> subprocess.CompletedProcess:
    """`sparseeval ARGV` in its own process, as a user runs it."""
    code = "import sys; from sparseeval.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARSEEVAL_HOME", "SPARSEEVAL_CONFIG")}
    return subprocess.run([sys.executable, "-c", code, *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_ingest_and_matrix_use_the_home_named(tmp_path):
    home = tmp_path / "elsewhere"
    path, _ = wide_csv(tmp_path / "arc.csv", 30, 12)
    done = _sparseeval("ingest", f"wide:arc={path}", "--home", home, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (home / "store.duckdb").is_file() and not (tmp_path / ".sparseeval").exists()
    done = _sparseeval("matrix", "arc", "--home", home, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["shape"] == [30, 12]


def test_the_flags_hold_for_their_command_only(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPARSEEVAL_HOME", raising=False)
    rc, out, _ = cli(["config", "--home", tmp_path / "h", "--json"], capsys)
    assert rc == 0 and json.loads(out)["settings"]["home"]["value"] == str(tmp_path / "h")
    assert "SPARSEEVAL_HOME" not in os.environ


def test_config_names_the_file_the_settings_come_from(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / "night.toml"
    settings.write_text("[selection]\nn_anchors = 25\n")
    rc, out, _ = cli(["config", "--config", settings, "--json"], capsys)
    assert rc == 0
    said = json.loads(out)
    assert said["file"] == str(settings)
    assert said["settings"]["n_anchors"]["value"] == 25
    assert str(settings) in said["settings"]["n_anchors"]["from"]
    rc, _, err = cli(["config", "--config", tmp_path / "missing.toml"], capsys)
    assert rc == 2 and "no such settings file" in err
