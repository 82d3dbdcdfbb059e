"""What every subcommand shares: the user-error type, exit codes and one-line messages."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import shutil
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from sparseeval.consume.errors import (
    SparseEvalError,
    environment_fault,
    first_line,
    is_user_error,
)

EXIT_PARTIAL = 1  # the command ran, but some inputs failed (the others landed); see the report
EXIT_USER_ERROR = 2  # nothing done: a usage, settings or data error, said in one line
EXIT_BUG = 3  # a bug in sparseeval: its traceback, and where to report it
BUG = ("this is a bug in sparseeval, not in your data or settings: please report it with the"
       " traceback above at the project's issue tracker")  # fmt: skip
PIPELINE_MODULES = {"prefect", "duckdb", "polars", "torch", "sklearn", "scipy", "matplotlib",
                    "huggingface_hub", "threadpoolctl", "pyarrow", "yaml"}  # fmt: skip


SEED_MAX = 2**32 - 1  # the largest seed NumPy's generators take (and none below 0)


class UserError(SparseEvalError):
    """A problem the user can fix; printed as one line, exit code 2."""


def report(command: str, exc: BaseException) -> int:
    """Say an error that stopped `command`; its exit code.

    A user error: one line (exit 2); a missing pipeline dependency: the install line (2);
    anything else: the traceback and a line saying it is a bug and where to report it (3).
    """
    if isinstance(exc, ModuleNotFoundError) and (hint := missing_extra(exc)):
        return fail(command, hint)
    if is_user_error(exc):  # a full disk or a down server: said with what to do
        return fail(command, environment_fault(exc) or first_line(exc))
    traceback.print_exception(exc, file=sys.stderr)
    print(f"sparseeval {command}: {BUG}", file=sys.stderr)
    return EXIT_BUG


def fail(command: str, message: str) -> int:
    """Print `sparseeval COMMAND: error: MESSAGE` on stderr; return the user-error exit code."""
    print(f"sparseeval {command}: error: {message}", file=sys.stderr)
    return EXIT_USER_ERROR


# Where state and settings come from, the same two flags on every command (their
# environment variables, set for the command's run: every settings read honours them).
HOME_HELP = "state folder (default: SPARSEEVAL_HOME, else .sparseeval)"
CONFIG_HELP = ("settings file (default: SPARSEEVAL_CONFIG, else the home's sparseeval.toml,"
               " else ./sparseeval.toml)")  # fmt: skip
SETTINGS_FLAGS = {"--home": "SPARSEEVAL_HOME", "--config": "SPARSEEVAL_CONFIG"}


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """`--home` and `--config` on `parser` and on every command below it."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subcommands:
        for child in dict.fromkeys(action.choices.values()):
            add_settings_flags(child)
    if not subcommands:
        parser.add_argument("--home", metavar="DIR", help=HOME_HELP)
        parser.add_argument("--config", metavar="FILE", help=CONFIG_HELP)


@contextlib.contextmanager
def settings_flags(args: argparse.Namespace):
    """Run a command with its `--home` / `--config` as SPARSEEVAL_HOME / SPARSEEVAL_CONFIG
    (restored after); a `--config` that is not a file is a UserError."""
    given = {env: getattr(args, flag[2:], None) for flag, env in SETTINGS_FLAGS.items()}
    given = {env: str(Path(value).expanduser()) for env, value in given.items() if value}
    config = given.get("SPARSEEVAL_CONFIG")
    if config and not Path(config).is_file():
        raise UserError(f"--config {quoted(config)}: no such settings file")
    before = {env: os.environ.get(env) for env in given}
    os.environ.update(given)
    try:
        yield
    finally:
        for env, value in before.items():
            if value is None:
                os.environ.pop(env, None)
            else:
                os.environ[env] = value


def parse_budgets(text: str) -> list[int]:
    """`--anchors K[,K...]` as budgets; a `UserError` in one line when it is not that."""
    try:
        budgets = [int(k) for k in text.split(",") if k.strip()]
    except ValueError as e:
        raise UserError(f"--anchors takes comma-separated integers, got {text!r}") from e
    if not budgets or min(budgets) < 1:
        raise UserError(f"--anchors takes budgets of at least 1 anchor, got {text!r}")
    return budgets


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line install hint when a pipeline dependency is not installed, else None."""
    root = (exc.name or "").split(".")[0]
    if root not in PIPELINE_MODULES:
        return None
    return (
        f"this command needs the pipeline dependencies ({root} is not installed):"
        f" {install_hint('pipeline')}"
    )


def install_hint(extra: str) -> str:
    """The install command for an extra that works here: the checkout it was installed from
    (`.` when that is the working directory); the package is not on an index."""
    if _is_checkout(Path(".")):
        return f"pip install '.[{extra}]'"
    source = _installed_from()
    if source is None:
        return f"pip install 'CHECKOUT[{extra}]' (CHECKOUT: your clone of sparseeval)"
    return f"pip install '{source}[{extra}]'"


def _is_checkout(folder: Path) -> bool:
    here = folder / "pyproject.toml"
    return here.is_file() and 'name = "sparseeval"' in here.read_text(errors="replace")


def _installed_from() -> Path | None:
    """The checkout this package was installed from: the recorded source folder (PEP 610
    `direct_url.json`), or the folder above the package (an editable install)."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        url = json.loads(metadata.distribution("sparseeval").read_text("direct_url.json") or "{}")
        url = str(url.get("url", ""))
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        url = ""
    folders = [Path(unquote(urlparse(url).path))] if url.startswith("file://") else []
    folders.append(Path(__file__).resolve().parents[2])  # sparseeval/cli/common.py
    return next((f for f in folders if _is_checkout(f)), None)


def quoted(path: object) -> str:
    """A path (or word) for a `next:` command line a user pastes: quoted for the shell when
    it needs it (spaces, `$(...)`), as it is otherwise."""
    return shlex.quote(str(path))


def write_atomic(path: str | Path, write: Callable[[Path], object]) -> Path:
    """`write(tmp)` to a temporary file beside `path`, then `os.replace` it into place: a full
    disk or a crash leaves `path` as it was (no empty or half file); the temporary goes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """`path.write_text(text)` (LF newlines) by `write_atomic`."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, newline="\n"))


def write_folders_atomic(folder: str | Path, write: Callable[[Path], object]) -> list[Path]:
    """`write(staging)` into a fresh folder beside `folder`, then move each folder it made into
    `folder` by rename (replacing one of the same name): a full disk while writing leaves
    `folder` as it was. Returns the folders now in place."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        write(staging)
        placed = []
        for made in sorted(staging.iterdir()):
            target = folder / made.name
            old = folder / f".{made.name}.old{os.getpid()}"
            if target.exists():
                os.replace(target, old)
            os.replace(made, target)
            shutil.rmtree(old, ignore_errors=True)
            placed.append(target)
        return placed
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def whole(low: int, high: int | None = None) -> Callable:
    """An argparse type: a whole number in [low, high], a one-line usage error otherwise
    (`--seed -1`, `--synthetic -3 60`)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"at least {low:,}" + (f" and at most {high:,}" if high is not None else "")
            raise argparse.ArgumentTypeError(f"must be a whole number {bound}, got {text!r}")
        return value

    return parse


def number(low: float, high: float | None = None, *, low_open: bool = False) -> Callable:
    """An argparse type: a finite number in [low, high] (`(low, ...` when `low_open`), with a
    one-line usage error otherwise (`--max-width -3`)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        too_low = value <= low if low_open else value < low
        if not math.isfinite(value) or too_low or (high is not None and value > high):
            side = f"above {low:g}" if low_open else f"at least {low:g}"
            bound = side + (f" and at most {high:g}" if high is not None else "")
            raise argparse.ArgumentTypeError(f"must be a number {bound}, got {text!r}")
        return value

    return parse


__all__ = [
    "BUG",
    "CONFIG_HELP",
    "EXIT_BUG",
    "EXIT_PARTIAL",
    "EXIT_USER_ERROR",
    "HOME_HELP",
    "PIPELINE_MODULES",
    "SEED_MAX",
    "SETTINGS_FLAGS",
    "UserError",
    "add_settings_flags",
    "fail",
    "install_hint",
    "missing_extra",
    "number",
    "parse_budgets",
    "quoted",
    "report",
    "settings_flags",
    "whole",
    "write_atomic",
    "write_folders_atomic",
    "write_text_atomic",
]
