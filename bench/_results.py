"""Writing a bench script's table into `bench/RESULTS.md`: the script that measures a number
is the one that writes it there."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def provenance() -> str:
    """`commit C` (with `+ uncommitted changes` when the tree is dirty) of the code measured."""
    root = Path(__file__).parent
    try:
        sha = _git(root, "rev-parse", "--short", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--", "sparseeval")
    except (OSError, subprocess.CalledProcessError):
        return "code outside git"
    return f"commit {sha}" + (" + uncommitted changes to sparseeval/" if dirty else "")


def command_line(script: str, argv: list[str]) -> str:
    """`python bench/SCRIPT ARGS` as typed, without the flags that only say where the table
    goes (`--section`, `--results`)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--section", "--results"):
            skip = True
        elif not arg.startswith(("--section=", "--results=")):
            kept.append(arg)
    return shlex.join(["python", f"bench/{script}", *kept])


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, text=True, capture_output=True,
                          check=True).stdout.strip()  # fmt: skip


def write_section(heading: str, body: str, path: str | Path = RESULTS, under: str = "") -> None:
    """Replace the section whose heading line is `heading` (e.g. `### Now`) up to the next
    heading of its level or above; when there is none, add it at the end of the section
    `under` (or of the file). `path` "-" prints only."""
    text = f"{heading}\n\n{body.strip()}\n"
    if str(path) == "-":
        print(text)
        return
    path = Path(path)
    old = path.read_text() if path.exists() else ""
    span = _span(old, heading)
    if span is None:
        at = _span(old, under)[1] if under and _span(old, under) else len(old)
        head, tail = old[:at].rstrip("\n"), old[at:]
        path.write_text(head + "\n\n" + text + ("\n" + tail if tail else ""))
        return
    start, end = span
    tail = old[end:]
    path.write_text(old[:start] + text + ("\n" + tail if tail else ""))


def _span(text: str, heading: str) -> tuple[int, int] | None:
    """Where the section `heading` starts and ends in `text` (its subsections in it)."""
    found = text.find(f"\n{heading}\n")
    if found < 0:
        return None
    start = found + 1
    level = len(heading) - len(heading.lstrip("#"))
    rest = text[start + len(heading) :]
    nxt = re.search(rf"^#{{1,{level}}} ", rest, flags=re.MULTILINE)
    return start, start + len(heading) + (nxt.start() if nxt else len(rest))
