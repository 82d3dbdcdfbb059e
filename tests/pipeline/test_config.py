"""Where settings come from (`pipeline.config`, `Settings.explain`, `sparseeval config`)."""

from __future__ import annotations

import json
import re

import pytest

from sparseeval.cli import main
from sparseeval.pipeline.config import config_path
from sparseeval.pipeline.settings import Settings, SettingsError


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


def test_a_section_table_and_a_sectioned_variable_set_what_the_flat_names_set(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text('[selection]\nn_anchors = 50\n[predictor]\npredictor = "ridge"\n'
                    '[sources]\nsources = ["inbox:/in"]\n')  # fmt: skip
    env = {"SPARSEEVAL_DRIFT__SUITE": "off", "SPARSEEVAL_SEED": "3"}
    s, rows, _ = Settings.explain(toml, env=env, **{"splits.n_test": "70"})
    assert (s.n_anchors, s.predictor, s.sources) == (50, "ridge", ("inbox:/in",))
    assert (s.suite, s.seed, s.n_test) == (False, 3, 70.0)
    origin = {name: o for name, _, o in rows}
    assert (
        origin["n_anchors"] == f"file {toml}" and origin["suite"] == "env SPARSEEVAL_DRIFT__SUITE"
    )
    assert s.section("matrix").to_dict() == {"max_missing_model_frac": 0.0, "target": "auto"}
    assert s.section("selection").n_anchors == 50


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[selection]\ngate = 'strict'\n", "gate belongs in [drift], not [selection]"),
        ("[selection]\nn_anchor = 5\n", "unknown setting 'n_anchor' in [selection] (did you mean"),
        ("[nope]\nseed = 1\n", "unknown settings section [nope]"),
        ("seed = 1\n[splits]\nseed = 2\n", "seed is set both flat and in its section"),
        ("store_path = true\n", "store_path must be a path, got true"),
        ("[runner]\nworkers = 1e9\n", "workers must be a whole number, got 1000000000.0"),
        ("suite = 'ture'\n", "suite must be true or false"),
        ("epochs = true\n", "epochs must be a whole number, got true"),
    ],
)
def test_a_bad_file_setting_is_one_line_naming_it_and_the_file(tmp_path, text, message):
    toml = tmp_path / "s.toml"
    toml.write_text(text)
    with pytest.raises(SettingsError, match=re.escape(message)) as info:
        Settings.load(toml, env={})
    assert str(info.value).startswith(f"{toml}: ") and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SPARSEEVAL_SUITE": "ture"}, "SPARSEEVAL_SUITE: suite must be true or false"),
        ({"SPARSEEVAL_WORKERS": "1e9"}, "SPARSEEVAL_WORKERS: workers must be a whole number"),
        ({"SPARSEEVAL_DRIFT__N_ANCHORS": "5"}, "n_anchors belongs in [selection], not [drift]"),
        ({"SPARSEEVAL_FOO__SEED": "5"}, "SPARSEEVAL_FOO__SEED: unknown settings section [foo]"),
        ({"SPARSEEVAL_SEED": "1", "SPARSEEVAL_SPLITS__SEED": "2"},
         "SPARSEEVAL_SEED and SPARSEEVAL_SPLITS__SEED both set seed"),
    ],
)  # fmt: skip
def test_a_bad_variable_is_one_line_naming_it(env, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        Settings.load(None, env=env)


@pytest.mark.parametrize("word", ["1", "TRUE", "yes", "On", "0", "false", "NO", "off"])
def test_booleans_accept_the_usual_words_in_any_case(word):
    expected = word.lower() in {"1", "true", "yes", "on"}
    assert Settings.load(None, env={"SPARSEEVAL_SUITE": word}).suite is expected


@pytest.mark.parametrize(
    ("file", "env", "expected"),
    [("", {}, "auto"), ("refit = false\n", {}, False), ("refit = 'auto'\n", {}, "auto"),
     ("", {"SPARSEEVAL_REFIT": "Yes"}, True),
     ("", {"SPARSEEVAL_PREDICTOR__REFIT": "AUTO"}, "auto")],
)  # fmt: skip
def test_refit_is_true_false_or_auto(tmp_path, file, env, expected):
    toml = tmp_path / "s.toml"
    toml.write_text(file)
    assert Settings.load(toml, env=env).refit == expected
    with pytest.raises(SettingsError, match=re.escape('refit must be true, false or "auto"')):
        Settings.load(None, env={"SPARSEEVAL_REFIT": "sometimes"})


def test_sparseeval_config_groups_by_section_and_refuses_a_bad_boolean(folders, capsys):
    assert main(["config", "--set", "selection.init=random"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("[selection]")
    assert out[1] == "[paths]" and any(line.startswith("  init ") for line in out[at : at + 3])
    assert "(override)" in next(line for line in out if line.startswith("  init "))
    assert main(["config", "--set", "suite=ture"]) == 2
    assert capsys.readouterr().err == (
        "sparseeval config: error: suite must be true or false (or 1/0, yes/no, on/off),"
        " got 'ture'\n"
    )


def test_the_matrix_key_depends_on_the_matrix_section_alone_and_is_unchanged(tmp_path):
    from sparseeval.consume.hashing import fingerprint
    from sparseeval.pipeline.artifacts import MATRIX_FIELDS, code_version, matrix_key

    s = Settings(home=tmp_path)
    key = matrix_key("arc", "state", s.section("matrix"), s.artifacts_dir)
    flat = {n: s.to_dict()[n] for n in MATRIX_FIELDS}  # the key's input when it took Settings
    old = fingerprint(
        "matrix", "arc", "state", flat, str(s.artifacts_dir.resolve()), code_version()
    )
    assert key == old
    other = s.replace(drift_mae_points=9.0, seed=5, workers=7).section("matrix")
    assert matrix_key("arc", "state", other, s.artifacts_dir) == key
    items = s.replace(target="items").section("matrix")
    assert matrix_key("arc", "state", items, s.artifacts_dir) != key


def test_a_task_handed_some_sections_reads_those_and_is_refused_the_rest(tmp_path):
    import pickle

    from sparseeval.pipeline.artifacts import TRAINING_FIELDS, fit_key, settings_subset
    from sparseeval.pipeline.settings import FIT

    s = Settings(home=tmp_path, n_anchors=(20, 40), alert_webhook="https://hooks.example/t0ken")
    fit = s.sections(*FIT)
    assert (fit.seed, fit.budgets, fit.interval_level, fit.artifacts_dir) == (
        0, (20, 40), 0.9, s.artifacts_dir)  # fmt: skip
    assert fit.calibration_args() == s.calibration_args()
    with pytest.raises(AttributeError, match="'hub_repo' is not a setting of the sections "
                       r"handed here \(paths, selection.*\): it is in 'sources'"):  # fmt: skip
        _ = fit.hub_repo
    one = fit.replace(n_anchors=20)
    # the fit's cache key is the one it had when it took the whole Settings
    assert fit_key("arc", "f", one) == fit_key("arc", "f", s.replace(n_anchors=20))
    assert settings_subset(one, TRAINING_FIELDS) == settings_subset(s.replace(n_anchors=20),
                                                                    TRAINING_FIELDS)  # fmt: skip
    # what a manifest records is still every setting, the webhook only as set
    assert one.recorded == s.replace(n_anchors=20).to_dict()
    assert one.recorded["alert_webhook"] == "(set)"
    assert pickle.loads(pickle.dumps(one)) == one  # a Dask worker unpickles it
    with pytest.raises(SettingsError, match="not in the sections handed here: hub_repo"):
        fit.replace(hub_repo="me/sets")


def test_no_task_takes_the_whole_settings():
    import inspect

    from sparseeval import tasks

    takes = {name: [p for p, v in inspect.signature(getattr(tasks, name).fn).parameters.items()
                    if "Settings" in str(v.annotation)]
             for name in tasks.__all__ if hasattr(getattr(tasks, name), "fn")}  # fmt: skip
    assert takes and not {n: p for n, p in takes.items() if p}, takes
