"""Writing a bench script's table into `bench/RESULTS.md`: the script that measures a number
is the one that writes it there."""

from __future__ import annotations

import re
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


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, text=True, capture_output=True,
                          check=True).stdout.strip()  # fmt: skip


def write_section(heading: str, body: str, path: str | Path = RESULTS) -> None:
    """Replace the section whose heading line is `heading` (e.g. `### Now`) up to the next
    heading of its level or above, or append it at the end when there is none; `path` "-"
    prints only."""
    text = f"{heading}\n\n{body.strip()}\n"
    if str(path) == "-":
        print(text)
        return
    path = Path(path)
    old = path.read_text() if path.exists() else ""
    level = len(heading) - len(heading.lstrip("#"))
    start = old.find(f"\n{heading}\n")
    if start < 0:
        path.write_text(old.rstrip("\n") + "\n\n" + text)
        return
    rest = old[start + 1 + len(heading) :]
    nxt = re.search(rf"^#{{1,{level}}} ", rest, flags=re.MULTILINE)
    end = start + 1 + len(heading) + (nxt.start() if nxt else len(rest))
    tail = old[end:]
    path.write_text(old[: start + 1] + text + ("\n" + tail if tail else ""))
