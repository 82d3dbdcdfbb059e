"""What every subcommand shares: the user-error type, exit codes and one-line messages."""

from __future__ import annotations

import sys
from pathlib import Path

EXIT_PARTIAL = 1  # the command ran, but some inputs failed (the others landed); see the report
EXIT_USER_ERROR = 2  # nothing done: a usage, settings or data error, said in one line
PIPELINE_MODULES = {"prefect", "duckdb", "polars", "torch", "sklearn", "scipy", "matplotlib",
                    "huggingface_hub", "threadpoolctl", "pyarrow", "yaml"}  # fmt: skip


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (or its type), at most 500 characters."""
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]


def fail(command: str, message: str) -> int:
    """Print `sparseeval COMMAND: error: MESSAGE` on stderr; return the user-error exit code."""
    print(f"sparseeval {command}: error: {message}", file=sys.stderr)
    return EXIT_USER_ERROR


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
    """The install command for an extra that works here: from a checkout, the checkout."""
    here = Path("pyproject.toml")
    if here.is_file() and 'name = "sparseeval"' in here.read_text(errors="replace"):
        return f"pip install '.[{extra}]'"
    return f"pip install 'sparseeval[{extra}]'"
