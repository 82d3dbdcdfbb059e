"""Where settings come from (`Settings.explain`, `sparseeval config`)."""

from __future__ import annotations

import json
import re

import pytest

from sparseeval.cli import main
from sparseeval.pipeline.settings import Settings, SettingsError, config_path


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
    assert Settings.load(env={"SPARSEEVAL_HOME": str(home)}).selection.n_anchors == 50
    assert (
        Settings.load(env={}, home=str(home)).selection.n_anchors == 50
    )  # a flow's `home` parameter
    assert Settings.load(env={"SPARSEEVAL_CONFIG": str(other)}).selection.n_anchors == 70
    with pytest.raises(
        ValueError, match=r"SPARSEEVAL_CONFIG names .*nope\.toml, which is not a file"
    ):
        Settings.load(env={"SPARSEEVAL_CONFIG": str(home / "nope.toml")})


def test_an_empty_variable_is_unset_as_a_deployment_passes_one(folders):
    s = Settings.load(env={"SPARSEEVAL_HOME": "", "SPARSEEVAL_CONFIG": "", "SPARSEEVAL_SEED": " "})
    assert str(s.paths.home) == ".sparseeval" and s.selection.n_anchors == 30 and s.splits.seed == 0


def test_explain_says_where_each_value_came_from(folders):
    _, home = folders
    env = {"SPARSEEVAL_HOME": str(home), "SPARSEEVAL_SEED": "9"}
    settings, rows, file = Settings.explain(env=env, lr=0.01)
    origin = {name: o for name, _, o in rows}
    assert file == home / "sparseeval.toml" and settings.splits.seed == 9
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
    assert (s.selection.n_anchors, s.predictor.predictor, s.sources.sources) == (
        50,
        "ridge",
        ("inbox:/in",),
    )
    assert (s.drift.suite, s.splits.seed, s.splits.n_test) == (False, 3, 70.0)
    origin = {name: o for name, _, o in rows}
    assert (
        origin["n_anchors"] == f"file {toml}" and origin["suite"] == "env SPARSEEVAL_DRIFT__SUITE"
    )
    assert s.matrix.to_dict() == {"max_missing_model_frac": 0.0, "target": "auto"}
    assert s.selection.n_anchors == 50


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
    assert Settings.load(None, env={"SPARSEEVAL_SUITE": word}).drift.suite is expected


@pytest.mark.parametrize(
    ("file", "env", "expected"),
    [("", {}, "auto"), ("refit = false\n", {}, False), ("refit = 'auto'\n", {}, "auto"),
     ("", {"SPARSEEVAL_REFIT": "Yes"}, True),
     ("", {"SPARSEEVAL_PREDICTOR__REFIT": "AUTO"}, "auto")],
)  # fmt: skip
def test_refit_is_true_false_or_auto(tmp_path, file, env, expected):
    toml = tmp_path / "s.toml"
    toml.write_text(file)
    assert Settings.load(toml, env=env).predictor.refit == expected
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

    s = Settings.of(home=tmp_path)
    key = matrix_key("arc", "state", s.matrix, s.paths.artifacts_dir)
    flat = {n: s.to_dict()[n] for n in MATRIX_FIELDS}  # the key's input when it took Settings
    old = fingerprint(
        "matrix", "arc", "state", flat, str(s.paths.artifacts_dir.resolve()), code_version()
    )
    assert key == old
    other = s.replace(drift_mae_points=9.0, seed=5, workers=7).matrix
    assert matrix_key("arc", "state", other, s.paths.artifacts_dir) == key
    items = s.replace(target="items").matrix
    assert matrix_key("arc", "state", items, s.paths.artifacts_dir) != key


def test_sections_are_real_types_and_the_fit_key_is_unchanged(tmp_path):
    import pickle

    from sparseeval.pipeline.artifacts import TRAINING_FIELDS, fit_key, settings_subset
    from sparseeval.pipeline.settings import SelectionSection, SplitsSection

    s = Settings.of(home=tmp_path, n_anchors=(20, 40), alert_webhook="https://hooks.example/t0ken")
    assert isinstance(s.selection, SelectionSection) and isinstance(s.splits, SplitsSection)
    assert (s.splits.seed, s.selection.budgets, s.drift.interval_level) == (0, (20, 40), 0.9)
    assert s.paths.artifacts_dir == tmp_path / "artifacts"
    assert s.splits.calibration_args() == {"n_calib": 200, "calibration": "split", "seed": 0,
                                           "stable": True}  # fmt: skip
    one = s.replace(n_anchors=20)
    assert one.selection.n_anchors == 20 and one.paths == s.paths  # the rest unchanged
    # the fit's cache key reads the training sections by name, as when settings were flat
    flat = {n: one.to_dict()[n] for n in TRAINING_FIELDS}
    assert settings_subset(one, TRAINING_FIELDS) == flat
    assert fit_key("arc", "f", one) != fit_key("arc", "f", s.replace(n_anchors=30))
    assert fit_key("arc", "f", one) == fit_key("arc", "f", one.replace(workers=7, gate="strict"))
    # what a manifest records is every setting by name, the webhook only as set
    assert one.to_dict()["alert_webhook"] == "(set)" and one.to_dict()["n_anchors"] == 20
    assert pickle.loads(pickle.dumps(one)) == one  # a Dask worker unpickles it
    with pytest.raises(SettingsError, match="unknown setting 'hub_rep'"):
        one.replace(hub_rep="me/sets")


def test_a_task_takes_the_one_section_it_reads_and_settings_only_where_it_reads_several():
    import inspect

    from sparseeval import tasks
    from sparseeval.pipeline import settings

    kinds = {*settings.SECTION_TYPES.values(), settings.Settings}
    takes = {name: {p: v.annotation for p, v in inspect.signature(getattr(tasks, name).fn)
                    .parameters.items() if v.annotation in {k.__name__ for k in kinds}}
             for name in tasks.__all__ if hasattr(getattr(tasks, name), "fn")}  # fmt: skip
    whole = {name for name, params in takes.items() if "Settings" in params.values()}
    assert whole == {"fit_benchmark", "assess", "write_candidate", "write_suite_candidate",
                     "suite_status"}, takes  # fmt: skip
    assert takes["build_matrix"] == {"paths": "PathsSection", "matrix": "MatrixSection"}
    assert takes["ingest"] == {"paths": "PathsSection", "sources": "SourcesSection"}


def test_the_pool_section_reaches_the_split_and_the_published_pool_check(tmp_path):
    """`[pool]`: when a benchmark trains, its held-out share, and the check's flag rate,
    widening and top edge, as a refresh's fit writes them."""
    from sparseeval.method.synthetic import make_synthetic
    from sparseeval.pipeline.recipe import NotEnoughModels, fit_matrix, split_step
    from tests.helpers import TINY

    matrix = make_synthetic(80, 20, seed=3)
    with pytest.raises(NotEnoughModels, match="80 models, needs at least 100 to train"):
        split_step(matrix, Settings.of(), "arc")
    s = Settings.of(home=tmp_path, **TINY, min_models=50, heldout_fraction=0.1, flag_rate=0.05,
                    widen=2, edge_ramp=0)  # fmt: skip
    assert split_step(matrix, s, "arc").sizes()["test"] == 8  # 10% of 80, not 20%
    pool = fit_matrix(make_synthetic(300, 20, seed=3), s, "arc", lambda line: None).pool
    assert (pool.rate, pool.widen) == (0.05, 2.0)
    assert pool.top is not None and pool.top.full is None  # a ramp of 0: a step, no ramp
