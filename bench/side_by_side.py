"""One command timed on this tree and on an earlier commit, alternately, in one run.

The machines are shared and noisy, so a speed target is a ratio measured side by side: the
command runs in a worktree of `--baseline` (checked out under bench/out/, imported from
there through PYTHONPATH) and in this tree, in turn (baseline, ours, baseline, ours, ...),
`--repeats` times each; the table gives each wall time of the whole command, the medians,
the ratio ours / baseline and the load average around each run. The command's own output
goes to bench/out/side_by_side-NAME-*.log.

    python bench/side_by_side.py --name "one fit" --baseline 7c6fef8 -- \\
        python bench/speed.py --repeats 1 --recipes ours
    python bench/side_by_side.py --name "cold night, 1,000 models" --baseline 7c6fef8 -- \\
        python bench/refresh.py --models 1000
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _results import provenance, write_section

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
SECTION = "## Side by side with an earlier main (`python bench/side_by_side.py`)"


def worktree(rev: str) -> Path:
    """A checkout of `rev` under bench/out/ (made once, reused)."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, text=True,
                         capture_output=True, check=True).stdout.strip()  # fmt: skip
    path = OUT / f"baseline-{sha}"
    if not path.is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT,
                       check=True, capture_output=True)  # fmt: skip
    _importable(path)
    return path


def _importable(tree: Path) -> None:
    """Make `tree` import as the installed package does, from itself: the folders that
    pyproject maps into the package (flows, tasks, sql) linked under `sparseeval/`, and a
    `sitecustomize.py` that drops the editable install's finder (which maps them to this
    tree's folders)."""
    for name in ("flows", "tasks", "sql"):
        link = tree / "sparseeval" / name
        if not link.exists():
            link.symlink_to(Path("..") / name)
    (tree / "sitecustomize.py").write_text(
        "import sys\n\n"
        "sys.meta_path[:] = [f for f in sys.meta_path\n"
        "                    if '__editable__' not in (getattr(f, '__module__', '') or '')]\n"
    )


def timed(tree: Path, command: list[str], log: Path) -> float:
    """Wall seconds of `command` run in `tree` with `tree` first on the import path."""
    env = os.environ | {"PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run(command, cwd=tree, env=env, stdout=f, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(command)} failed in {tree} (exit {done.returncode});"
                         f" see {log}")  # fmt: skip
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--name", required=True, help="the row's name in the table")
    ap.add_argument("--baseline", required=True, help="the earlier commit to compare with")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default=None, help="RESULTS.md path ('-': print only)")
    ap.add_argument("--note", default="", help="a sentence added under the table (why)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise SystemExit("give the command after --")
    command = [sys.executable if command[0] == "python" else command[0], *command[1:]]
    OUT.mkdir(parents=True, exist_ok=True)
    trees = {"baseline": worktree(args.baseline), "ours": ROOT}
    measured = provenance()
    slug = re.sub(r"\W+", "-", args.name).strip("-")
    times: dict[str, list[float]] = {"baseline": [], "ours": []}
    loads = []
    for i in range(args.repeats):
        for side in ("baseline", "ours"):
            log = OUT / f"side_by_side-{slug}-{side}-{i}.log"
            times[side].append(timed(trees[side], command, log))
            loads.append(os.getloadavg()[0])
            print(f"{side} run {i + 1}: {times[side][-1]:.1f} s", flush=True)
    write_row(args, command, times, loads, measured)


def write_row(args, command, times, loads, measured) -> None:
    base, ours = (statistics.median(times[s]) for s in ("baseline", "ours"))
    each = lambda s: ", ".join(f"{t:.1f}" for t in times[s])  # noqa: E731
    shown = shlex.join(["python", *command[1:]])
    body = (
        f"`{shown}`, {args.repeats} runs each, alternating, baseline first: baseline"
        f" {args.baseline}, ours {measured}; {os.cpu_count()} CPU cores, load average"
        f" {min(loads):.2f}-{max(loads):.2f} after the runs.\n\n"
        "| tree | wall s (each) | median s |\n|---|---|---|\n"
        f"| baseline {args.baseline} | {each('baseline')} | {base:.1f} |\n"
        f"| ours | {each('ours')} | {ours:.1f} |\n\n"
        f"Ratio ours / baseline (medians): **{ours / base:.2f}**. {args.note}"
    )
    path = args.results or (ROOT / "bench" / "RESULTS.md")
    if str(path) != "-" and SECTION not in Path(path).read_text():
        write_section(SECTION, "Each subsection: `bench/side_by_side.py` and its command.", path)
    write_section(f"### {args.name}", body, path, under=SECTION)


if __name__ == "__main__":
    main()
