"""One error root: a user error is one line (exit 2); a bug keeps its traceback (exit 3)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import sparseeval
from sparseeval.cli import EXIT_BUG, main
from sparseeval.cli.common import BUG
from sparseeval.consume.errors import SparseEvalError
from sparseeval.pipeline import settings


def broadcast_bug(*args, **kwargs):
    """A programming error deep in the library: NumPy's own ValueError."""
    return np.ones(2) + np.ones(3)


def run(capsys, *argv) -> tuple[int, str]:
    rc = main(list(argv))
    return rc, capsys.readouterr().err


@pytest.fixture(autouse=True)
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("SPARSEEVAL_CONFIG", "SPARSEEVAL_HOME"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("command", ["config", "refresh"])
def test_an_injected_bug_keeps_its_traceback_and_says_it_is_a_bug(monkeypatch, capsys, command):
    monkeypatch.setattr(settings, "config_path", broadcast_bug)
    rc, err = run(capsys, command)
    assert rc == EXIT_BUG == 3
    assert "Traceback (most recent call last)" in err and "broadcast_bug" in err
    assert "ValueError: operands could not be broadcast together" in err
    assert err.rstrip().splitlines()[-1] == f"sparseeval {command}: {BUG}"
    assert "please report it with the traceback above" in BUG


def test_a_type_error_is_a_bug_too(monkeypatch, capsys):
    def bad(*a, **k):
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr(settings.Settings, "explain", bad)
    rc, err = run(capsys, "config")
    assert rc == 3 and "TypeError: unsupported operand" in err and BUG in err


@pytest.mark.parametrize("command", ["config", "refresh"])
def test_a_user_error_stays_one_line_with_exit_2(monkeypatch, capsys, command):
    rc, err = run(capsys, command, "--set", "suite=ture")
    assert rc == 2
    assert err == (
        f"sparseeval {command}: error: suite must be true or false (or 1/0, yes/no, on/off),"
        " got 'ture'\n"
    )


def test_a_path_the_user_named_that_cannot_be_read_is_one_line(monkeypatch, capsys, tmp_path):
    toml = tmp_path / "sparseeval.toml"
    toml.write_text("seed = 1\n")

    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(settings, "read_toml", denied)
    rc, err = run(capsys, "config")
    assert rc == 2 and "Traceback" not in err
    assert err == "sparseeval config: error: [Errno 13] Permission denied: 'sparseeval.toml'\n"


def test_every_error_class_of_the_library_is_a_sparseeval_error():
    """Each domain error has the one root; those that were ValueErrors still are."""
    found = []
    for pkg in ("consume", "method", "pipeline", "cli"):
        package = importlib.import_module(f"sparseeval.{pkg}")
        for info in pkgutil.walk_packages(package.__path__, f"sparseeval.{pkg}."):
            module = importlib.import_module(info.name)
            found += [c for _, c in inspect.getmembers(module, inspect.isclass)
                      if issubclass(c, Exception) and c.__module__ == info.name]  # fmt: skip
    names = {c.__name__ for c in found}
    assert {"AnchorSetError", "StoreError", "SourceError", "SettingsError", "UserError"} <= names
    assert [c.__name__ for c in found if not issubclass(c, SparseEvalError)] == []
    assert not issubclass(SparseEvalError, ValueError)
    for cls in (sparseeval.AnchorSetError, sparseeval.ResponsesError, sparseeval.MatrixError):
        assert issubclass(cls, sparseeval.SparseEvalError) and issubclass(cls, ValueError)
