"""The `sparseeval` console script: one subcommand per thing a user wants to do.

The CLI is the library's face and the one place that runs Prefect flows. Subcommands
import what they need when they run, so `--help` and `predict` start fast and work with
the light install (NumPy only); a pipeline command without the `pipeline` extra says
in one line what to install.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys

from sparseeval._version import __version__
from sparseeval.cli.anchors import add_anchors_command
from sparseeval.cli.automations import add_automations_command
from sparseeval.cli.check import add_check_command
from sparseeval.cli.common import (
    EXIT_BUG,
    EXIT_USER_ERROR,
    UserError,
    add_settings_flags,
    report,
    settings_flags,
)
from sparseeval.cli.config import add_config_command
from sparseeval.cli.consumer import add_consumer_commands
from sparseeval.cli.export_inspect import add_export_inspect_command
from sparseeval.cli.fit import add_fit_command
from sparseeval.cli.quarantine import add_quarantine_command
from sparseeval.cli.refresh import add_refresh_command
from sparseeval.cli.store import add_store_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparseeval", description="Estimate full-benchmark accuracy from a few anchor items."
    )
    parser.add_argument("--version", action="version", version=f"sparseeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_fit_command(sub)
    add_store_commands(sub)
    add_refresh_command(sub)
    add_consumer_commands(sub)
    add_export_inspect_command(sub)
    add_anchors_command(sub)
    add_check_command(sub)
    add_automations_command(sub)
    add_config_command(sub)
    add_quarantine_command(sub)
    add_settings_flags(parser)  # --home and --config: one vocabulary on every command
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help()  # `sparseeval` alone: what it can do
        return 0
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    for handler in logging.getLogger().handlers:  # libraries' INFO lines propagate here too
        handler.setLevel(logging.WARNING)
    try:
        with settings_flags(args):
            code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:  # `sparseeval predict ... | head`: the reader had enough
        return _quiet_stdout()
    except Exception as e:  # a user error in one line; a bug with its traceback
        return report(args.command, e)


def _quiet_stdout() -> int:
    """Point stdout at /dev/null (so the exit flush is silent); exit code 1 (Python's advice)."""
    import os

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 1


__all__ = ["EXIT_BUG", "EXIT_USER_ERROR", "UserError", "build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
