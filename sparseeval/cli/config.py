"""`sparseeval config`: the effective settings and where each value came from."""

from __future__ import annotations

import argparse
import json

EPILOG = """examples:
  sparseeval config                       # every setting by section, its value and its origin
  sparseeval config --set selection.n_anchors=50
  SPARSEEVAL_CONFIG=/etc/sparseeval.toml sparseeval config --json

Order: defaults < settings file < SPARSEEVAL_* environment < --set. The settings file is
SPARSEEVAL_CONFIG if set, else {SPARSEEVAL_HOME}/sparseeval.toml, else ./sparseeval.toml.
A setting is given flat (n_anchors = 50, SPARSEEVAL_N_ANCHORS=50) or in its section
([selection] n_anchors = 50, SPARSEEVAL_SELECTION__N_ANCHORS=50), not both.
"""


def add_config_command(subparsers: argparse._SubParsersAction) -> None:
    """Register `config`."""
    p = subparsers.add_parser(
        "config",
        help="show the effective settings and where each value came from",
        description="Print every setting with its value and origin (default, file, env).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a setting, as `refresh --set` does")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_config)


def run_config(args: argparse.Namespace) -> int:
    from sparseeval.cli.common import UserError
    from sparseeval.pipeline.settings import SECTION_OF, Settings

    overrides = {"home": args.home}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--set takes KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value
    _, rows, path = Settings.explain(**overrides)
    sections: dict[str, list[str]] = {}
    for name, _, _ in rows:
        sections.setdefault(SECTION_OF[name], []).append(name)
    if args.json:
        table = {name: {"value": value, "from": origin} for name, value, origin in rows}
        file = str(path) if path else None
        print(json.dumps({"file": file, "settings": table, "sections": sections}))
        return 0
    print(f"settings file: {path or 'none'}")
    width = max(len(n) for n, _, _ in rows)
    shown = {name: (value, origin) for name, value, origin in rows}
    for section, names in sections.items():
        print(f"[{section}]")
        for name in names:
            value, origin = shown[name]
            print(f"  {name:<{width}}  {json.dumps(value)}  ({origin})")
    return 0


__all__ = [
    "EPILOG",
    "add_config_command",
    "run_config",
]
