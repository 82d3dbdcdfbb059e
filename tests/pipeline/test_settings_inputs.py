"""Settings no run should take silently (issue 46): a mistyped SPARSEEVAL_* variable, a
settings file that is a folder, and absurd values (a night that never ends)."""

from __future__ import annotations

import pytest

from sparseeval.consume.errors import SettingsError
from sparseeval.pipeline.settings import MAXIMA, Settings


def test_a_mistyped_environment_variable_names_the_closest_setting(tmp_path):
    env = {"SPARSEEVAL_HOME": str(tmp_path), "SPARSEEVAL_N_ANCHOR": "50"}
    with pytest.raises(SettingsError) as caught:
        Settings.load(env=env)
    assert str(caught.value) == (
        "SPARSEEVAL_N_ANCHOR: unknown setting 'n_anchor' (did you mean SPARSEEVAL_N_ANCHORS?)"
    )


def test_variables_that_are_not_settings_are_left_alone(tmp_path):
    env = {"SPARSEEVAL_HOME": str(tmp_path), "SPARSEEVAL_CRON": "0 3 * * *",
           "SPARSEEVAL_CONSOLE_ONE_LINE": "1", "SPARSEEVAL_SOMETHING_ELSE": "x"}  # fmt: skip
    assert Settings.load(env=env).paths.home == tmp_path


def test_a_settings_file_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "sparseeval.toml").mkdir()
    with pytest.raises(SettingsError, match=r"sparseeval\.toml is not a file"):
        Settings.load(env={"SPARSEEVAL_HOME": str(tmp_path)})
    with pytest.raises(SettingsError, match="is not a file"):  # `fit --config DIR`
        Settings.load(tmp_path, env={})


@pytest.mark.parametrize(
    ("name", "value"), [("epochs", 1_000_000_000), ("workers", 100_000), ("n_anchors", "5,200000")]
)
def test_absurd_values_are_refused_naming_the_maximum(tmp_path, name, value):
    env = {"SPARSEEVAL_HOME": str(tmp_path), f"SPARSEEVAL_{name.upper()}": str(value)}
    with pytest.raises(SettingsError, match=f"{name} must be at most {MAXIMA[name]:,}"):
        Settings.load(env=env)


def test_a_negative_seed_is_refused_before_any_work(tmp_path):
    with pytest.raises(SettingsError, match="seed must be 0 or more, got -1"):
        Settings.load(env={"SPARSEEVAL_HOME": str(tmp_path), "SPARSEEVAL_SEED": "-1"})


def test_the_defaults_are_within_the_maxima(tmp_path):
    settings = Settings.load(env={"SPARSEEVAL_HOME": str(tmp_path)})
    for name, most in MAXIMA.items():
        value = settings.values()[name]
        assert max(value if isinstance(value, tuple) else (value,)) <= most, name
