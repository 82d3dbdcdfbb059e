"""Where settings come from (`pipeline.config`, `Settings.explain`, `sparseeval config`)."""

from __future__ import annotations

import json

import pytest

from sparseeval.cli import main
from sparseeval.pipeline.config import config_path
from sparseeval.pipeline.settings import Settings


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """A working directory with its own sparseeval.toml, and a home with another."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "sparseeval.toml").write_text("n_anchors = 30\n")
    (home / "sparseeval.toml").write_text("n_anchors = 50\nseed = 4\n")
    monkeypatch.chdir(work)
    for name in ("SPARSEEVAL_CONFIG", "SPARSEEVAL_HOME", "SPARSEEVAL_SEED", "SPARSEEVAL_N_ANCHORS"):
        monkeypatch.delenv(name, raising=False)
    return work, home


def test_the_file_is_sparseeval_config_then_the_homes_then_the_working_directorys(folders):
    work, home = folders
    other = home / "other.toml"
    other.write_text("n_anchors = 70\n")
    assert config_path({}).resolve() == (work / "sparseeval.toml").resolve()
    assert config_path({"SPARSEEVAL_HOME": str(home)}) == home / "sparseeval.toml"
    assert config_path({"SPARSEEVAL_CONFIG": str(other), "SPARSEEVAL_HOME": str(home)}) == other
    assert Settings.load(env={"SPARSEEVAL_HOME": str(home)}).n_anchors == 50
    assert Settings.load(env={}, home=str(home)).n_anchors == 50  # a flow's `home` parameter
    assert Settings.load(env={"SPARSEEVAL_CONFIG": str(other)}).n_anchors == 70
    with pytest.raises(
        ValueError, match=r"SPARSEEVAL_CONFIG names .*nope\.toml, which is not a file"
    ):
        Settings.load(env={"SPARSEEVAL_CONFIG": str(home / "nope.toml")})


def test_an_empty_variable_is_unset_as_a_deployment_passes_one(folders):
    s = Settings.load(env={"SPARSEEVAL_HOME": "", "SPARSEEVAL_CONFIG": "", "SPARSEEVAL_SEED": " "})
    assert str(s.home) == ".sparseeval" and s.n_anchors == 30 and s.seed == 0


def test_explain_says_where_each_value_came_from(folders):
    _, home = folders
    env = {"SPARSEEVAL_HOME": str(home), "SPARSEEVAL_SEED": "9"}
    settings, rows, file = Settings.explain(env=env, lr=0.01)
    origin = {name: o for name, _, o in rows}
    assert file == home / "sparseeval.toml" and settings.seed == 9
    assert origin["n_anchors"] == f"file {home / 'sparseeval.toml'}"
    assert origin["seed"] == "env SPARSEEVAL_SEED"  # the environment beats the file
    assert origin["lr"] == "override" and origin["epochs"] == "default"
    assert [n for n, _, _ in rows] == list(settings.to_dict())


def test_sparseeval_config_prints_the_table(folders, monkeypatch, capsys):
    _, home = folders
    monkeypatch.setenv("SPARSEEVAL_HOME", str(home))
    assert main(["config", "--json", "--set", "epochs=7"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["file"] == str(home / "sparseeval.toml")
    assert out["settings"]["n_anchors"] == {"value": 50, "from": f"file {home / 'sparseeval.toml'}"}
    assert out["settings"]["epochs"] == {"value": 7, "from": "override"}
    assert main(["config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"settings file: {home / 'sparseeval.toml'}"
    toml = home / "sparseeval.toml"
    assert f"  seed{' ' * 21}4  (file {toml})" in lines
