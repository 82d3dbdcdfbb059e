"""The published folder layout, shared by writers and readers (NumPy-free, standard library).

One layout whatever the number of budgets: each budget's set is a folder of its own.

    {root}/{benchmark}/k{K}/v{N}/manifest.json    what this is, how good it is, sha256 of files
    {root}/{benchmark}/k{K}/v{N}/manifest.sig     optional Ed25519 signature of manifest.json
    {root}/{benchmark}/k{K}/v{N}/predictor/       predictor.json + weights.npz (no pickle)
    {root}/{benchmark}/k{K}/v{N}/report.md|.html  evaluation report (plots under plots/)
    {root}/{benchmark}/k{K}/latest                {"version": N, "serial": S, "promoted": {...}}
                                                  (replaced atomically)
    {root}/{benchmark}/default                    {"budget": K}: the set the publisher maintains

K is the set's number of anchors (a run with several budgets: the budget asked for). Readers
load the `default` set unless asked for a budget; without the pointer, the largest budget
with a live version. The suite (`{root}/suite/v{N}`, `latest` beside them) has no budget of
its own (its anchors are its members') and keeps one set.

Older roots held a single budget's set one level up, `{root}/{benchmark}/v{N}` and
`{root}/{benchmark}/latest`; readers still load such a root as it is (read-only copies need
no write access), and the publisher moves it into `k{K}/` once, before it next writes a
version there (`versions.move_single_set`). A discarded version leaves a tombstone
`.discarded-v{N}` (with its reason) so its number is never reused.

Promotion. A written version is a candidate until `set_latest` promotes it. `latest`
records every version ever promoted with its manifest seal (`"promoted": {"3": sha}`),
in the same atomic replace that moves the pointer, and only those versions load (by
number or as latest): a candidate refused by the quality gate, or one left by a crashed
run, is refused by `load_anchor_set`. A `latest` written before this record existed
promotes every version up to its own. `versions.clean_leftovers` tombstones never-promoted
folders and removes `.tmp-v*` / `.trash-v*` leftovers. Not checked: Hub downloads (pin a
`revision`) and a version folder you copied out of its set.

Trust model. Verification (the manifest's seal, the sha256 of every file, no file in the
version folder left unlisted, no listed path or predictor folder leading outside it, no
symlinks) detects damage: truncation, flipped bytes, half copies, added or swapped files.
It does not authenticate: whoever can write the folder can rewrite the manifest with new
hashes and a new seal. So load from a local folder you (your pipeline) wrote, or from a
Hub revision pinned by commit sha (`revision=`; a branch follows whoever can push). Locally
`latest` also pins each promoted version's seal, so a rewritten manifest needs `latest`
rewritten too. For sets that pass through hands you do not trust, sign them
(`write_version(signing_key=...)` or `versions.sign_version`, Ed25519, over the exact bytes
of manifest.json, which pins every file's hash) and pass the publisher's public key:
`load_anchor_set(..., public_key=...)` then refuses a set whose `manifest.sig` is missing
or does not verify; a set's `latest` promoted with the key (`set_latest(signing_key=...)`)
carries its signature, and with a public key only a verifying pointer is followed (a
pointer rewritten to an older signed version is refused; an older signed pointer put back
whole is refused where this machine followed a newer one, by its signed `serial`:
`signing.pointer_memory`). Signatures need the `cryptography` package, imported only then.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

from sparseeval.consume.answers.ids import did_you_mean
from sparseeval.consume.answers.jsontext import JsonTextError, loads
from sparseeval.consume.answers.responses import printable
from sparseeval.consume.errors import SparseEvalError
from sparseeval.consume.hashing import file_sha256

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"
POINTER_SIGNATURE = "signature"  # a signed `latest` holds its Ed25519 signature under this key
LATEST = "latest"
HOME_SETS = "published"  # where a home (`SPARSEEVAL_HOME`) keeps its published sets
DEFAULT = "default"  # {root}/{benchmark}/default: {"budget": K or null}, the maintained set
PREDICTOR_DIR = "predictor"
REPORT_INPUTS = "report_inputs.json"  # what the report is made from: sealed with the set
# The report, a view of the set rendered after it is written, outside its sealed payload:
# these names (and PNGs directly under plots/) may sit in a version folder unlisted.
REPORT_FILES = ("plots", "metrics.json", "report.md", "report.html")
KIND = "sparseeval.anchor_set"
VERSION_DIR = re.compile(r"^v(\d+)$")
BUDGET_DIR = re.compile(r"^k(\d+)$")
TOMBSTONE = re.compile(r"^\.discarded-v(\d+)$")
MAX_MANIFEST_BYTES = 64 * 2**20  # a manifest lists items and hashes: megabytes at most
MAX_POINTER_BYTES = 2**20


class AnchorSetError(SparseEvalError, ValueError):
    """A published anchor set is missing, damaged, or cannot be read by this version."""


def set_dir(root: str | Path, benchmark: str, budget: int | None = None) -> Path:
    """The folder of one anchor set's versions: `{root}/{benchmark}/k{budget}` (without a
    budget: `{root}/{benchmark}`, the suite's set or an old single set)."""
    folder = Path(root) / benchmark
    return folder if budget is None else folder / f"k{int(budget)}"


def budget_of(version_folder: str | Path) -> int | None:
    """The budget K of the set a version folder is in (`.../k{K}/v{N}`); None for the
    suite's set or an old single set."""
    m = BUDGET_DIR.match(Path(version_folder).parent.name)
    return int(m.group(1)) if m else None


def published_benchmarks(root: str | Path) -> list[str]:
    """The benchmarks with published sets under a root, sorted (folders holding no set, e.g.
    a home's `artifacts/` and `reports/`, are none)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and _holds_sets(p))  # fmt: skip


def _holds_sets(folder: Path) -> bool:
    """A benchmark folder: a `latest` pointer or version folders, in it or in a budget's."""
    if (folder / LATEST).is_file():
        return True
    inside = [p for p in folder.iterdir() if p.is_dir()]
    return any(VERSION_DIR.match(p.name) for p in inside) or any(
        BUDGET_DIR.match(p.name) and _holds_sets(p) for p in inside
    )


def list_budgets(root: str | Path, benchmark: str) -> list[int]:
    """The budgets published as sets of their own under `{root}/{benchmark}/k*`, ascending."""
    folder = Path(root) / benchmark
    if not folder.is_dir():
        return []
    found = (BUDGET_DIR.match(p.name) for p in folder.iterdir() if p.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


def latest_version(root: str | Path, benchmark: str, budget: int | None = None) -> int | None:
    """The version `latest` points to, or None when nothing is published yet."""
    pointer = read_pointer(set_dir(root, benchmark, budget))
    return None if pointer is None else int(pointer["version"])


def list_versions(root: str | Path, benchmark: str, budget: int | None = None) -> list[int]:
    """Published version numbers present on disk, ascending."""
    folder = set_dir(root, benchmark, budget)
    if not folder.is_dir():
        return []
    found = (VERSION_DIR.match(p.name) for p in folder.iterdir() if p.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


def parse_version(version: int | str) -> int:
    """3, "3" or "v3" -> 3."""
    s = str(version).strip().lower().removeprefix("v")
    if not s.isdigit():
        raise AnchorSetError(f"version must be 'latest', N or vN, got {printable(repr(version))}")
    return int(s)


def resolve_version_dir(
    root: str | Path, benchmark: str, version: int | str = LATEST, budget: int | None = None
) -> Path:
    """The local folder of a version ("latest", 3, "v3"); also accepts a version folder itself.

    budget: which budget's set (default: `live_budget`, the one the publisher maintains).
    """
    root = Path(root)
    if (root / MANIFEST).is_file():
        return root
    if (root / HOME_SETS).is_dir() and not published_benchmarks(root):
        root = root / HOME_SETS  # a home was given: its published sets
    if not (root / benchmark).is_dir():
        if any(f(root.parent, root.name) for f in (latest_version, list_versions, list_budgets)):
            root, benchmark = root.parent, root.name  # a benchmark folder was given
        else:
            there = published_benchmarks(root)
            raise AnchorSetError(
                f"no published {benchmark!r} anchor sets at {printable(root)}"
                f" (published there: {', '.join(there) or 'none'}){did_you_mean(benchmark, there)}"
            )
    budget = _pick_budget(root, benchmark, budget)
    folder = set_dir(root, benchmark, budget)
    where = f"{benchmark}" + (f" k{budget}" if budget is not None else "")
    if version in (None, LATEST):
        n = latest_version(root, benchmark, budget)
        if n is None:
            have = list_versions(root, benchmark, budget)
            hint = f" (versions on disk: {', '.join(f'v{v}' for v in have)})" if have else ""
            raise AnchorSetError(f"no latest {where!r} anchor set under {printable(root)}{hint}")
    else:
        n = parse_version(version)
    if not (folder / f"v{n}").is_dir():
        have = ", ".join(f"v{v}" for v in list_versions(root, benchmark, budget)) or "none"
        raise AnchorSetError(f"{where} v{n} not found under {printable(root)} (versions: {have})")
    return folder / f"v{n}"


def _pick_budget(root: Path, benchmark: str, budget: int | None) -> int | None:
    """The budget asked for (it must be published), else `live_budget`."""
    if budget is None:
        return live_budget(root, benchmark)
    budgets = list_budgets(root, benchmark)
    if int(budget) not in budgets:
        have = ", ".join(f"k{b}" for b in budgets) or _single_set(root, benchmark)
        raise AnchorSetError(f"no {benchmark!r} set with {budget} anchors (budgets: {have})")
    return int(budget)


def live_budget(root: str | Path, benchmark: str) -> int | None:
    """The budget of the set readers load when none is asked for: the one `default` names,
    else the largest with a live version; None for an old single set (`{benchmark}/latest`)
    or when nothing is published."""
    pointed = default_budget(root, benchmark)
    if pointed is not None and (set_dir(root, benchmark, pointed[0]) / LATEST).is_file():
        return pointed[0]
    budgets = list_budgets(root, benchmark)
    live = [b for b in budgets if (set_dir(root, benchmark, b) / LATEST).is_file()]
    if live:
        return max(live)
    if not budgets or (set_dir(root, benchmark) / LATEST).is_file():
        return None
    return max(budgets)


def default_budget(root: str | Path, benchmark: str) -> tuple[int | None] | None:
    """`(K,)` as `{root}/{benchmark}/default` names the set the publisher maintains (`(None,)`:
    an old single set, as pointers before the one layout said); None without a pointer."""
    path = Path(root) / benchmark / DEFAULT
    if not path.is_file():
        return None
    data = _bounded_json(path, MAX_POINTER_BYTES, "unreadable default pointer")
    budget = data.get("budget", False) if isinstance(data, dict) else False
    if budget is not None and not positive_int(budget):
        raise AnchorSetError(
            f"{printable(path)}: unreadable default pointer (budget must be a positive integer"
            " or null)"
        )
    return (budget,)


def _single_set(root: Path, benchmark: str) -> str:
    """What a benchmark without budget sets has: `one set of 100 anchors`, or `none`."""
    n = latest_version(root, benchmark)
    if n is None:
        return "none"
    try:
        k = read_manifest(set_dir(root, benchmark) / f"v{n}").get("n_anchors")
    except AnchorSetError:
        return "none readable"
    return f"one set of {k} anchors, read it without --budget"


def manifest_digest(manifest: dict) -> str:
    """sha256 of the manifest without its own seal."""
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def seal(manifest: dict) -> dict:
    """The manifest with its `manifest_sha256` seal."""
    return {k: v for k, v in manifest.items() if k != "manifest_sha256"} | {
        "manifest_sha256": manifest_digest(manifest)
    }


def read_manifest(folder: str | Path) -> dict:
    """The sealed manifest of a version folder; refuses damaged or newer-schema manifests."""
    from sparseeval._version import __version__

    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise AnchorSetError(
            f"{printable(folder)}: no {MANIFEST} (not an anchor set, or incomplete)"
        )
    manifest = _bounded_json(path, MAX_MANIFEST_BYTES, "damaged or truncated manifest")
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise AnchorSetError(f"{printable(path)}: not a sparseeval anchor-set manifest")
    schema = manifest.get("schema_version")
    if not isinstance(schema, int):
        raise AnchorSetError(f"{printable(path)}: manifest has no schema_version")
    if schema > SCHEMA_VERSION:
        raise AnchorSetError(
            f"{printable(path)}: schema version {schema} is newer than this sparseeval "
            f"({__version__}) reads (up to {SCHEMA_VERSION}); upgrade sparseeval"
        )
    if manifest.get("manifest_sha256") != manifest_digest(manifest):
        raise AnchorSetError(
            f"{printable(path)}: manifest was modified after publishing (seal mismatch)"
        )
    return manifest


def verify(folder: str | Path, manifest: dict, *, follow_file_links: bool = False) -> None:
    """The version folder holds exactly the files its manifest lists, each with its sha256.

    Refuses: an empty or missing `files` list; a listed file missing or changed; a file in
    the folder that is not listed (`manifest.json`, `manifest.sig` and the report's files,
    `REPORT_FILES`, excepted); a listed
    path or the predictor folder that is absolute or leads outside the folder; a folder
    whose name (vN) is not the manifest's version; and symlinks: the version folder, its
    set and benchmark folders, and anything inside. `follow_file_links` lets files inside
    be symlinks to regular files (the Hub cache links each file to a blob; hashes still
    hold the content).
    """
    folder = Path(folder)
    _refuse_linked_folders(folder, manifest)
    m = VERSION_DIR.match(folder.name)
    if m and manifest.get("version") != int(m.group(1)):
        raise AnchorSetError(
            f"{printable(folder)}: folder v{m.group(1)} holds a manifest of version "
            f"{printable(repr(manifest.get('version')))}; refusing it"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise AnchorSetError(
            f"{printable(folder)}: manifest lists no files, so nothing could be verified; "
            "refusing it"
        )
    bad: dict[str, str] = {}
    for rel, digest in files.items():
        problem = unsafe_path(rel) or _linked_part(folder, rel, follow_file_links)
        if not problem and not (folder / rel).is_file():
            problem = "missing"
        elif not problem and (not isinstance(digest, str) or file_sha256(folder / rel) != digest):
            problem = "checksum mismatch"
        if problem:
            bad.setdefault(str(rel), problem)
    pred = (manifest.get("predictor") or {}).get("folder", PREDICTOR_DIR)
    problem = unsafe_path(pred) or _linked_part(folder, pred, False)
    if problem:
        bad.setdefault(f"predictor folder {pred}", problem)
    for rel, problem in _unlisted(folder, files, follow_file_links):
        bad.setdefault(rel, problem)
    if bad:
        listed = ", ".join(f"{printable(rel)} ({why})" for rel, why in bad.items())
        raise AnchorSetError(
            f"{printable(folder)}: anchor set failed verification, refusing to use it: {listed}"
        )


def unsafe_path(rel: object) -> str | None:
    """Why a path from the manifest is not a plain relative path inside the folder, or None."""
    if not isinstance(rel, str) or not rel:
        return "not a relative path"
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
        return "absolute path"
    parts = re.split(r"[/\\]", rel)
    if ".." in parts:
        return "outside the version folder"
    if any(part in ("", ".") for part in parts):
        return "not a plain relative path"
    return None


def _linked_part(folder: Path, rel: str, follow_file_links: bool) -> str | None:
    """ "symlink" when a component of `folder/rel` is one (a last one may be, if followed)."""
    parts = rel.split("/")
    p = folder
    for n, part in enumerate(parts, 1):
        p = p / part
        try:
            st = os.lstat(p)
        except OSError:
            return None  # missing: reported as such
        if stat.S_ISLNK(st.st_mode):
            if follow_file_links and n == len(parts) and p.is_file():
                return None
            return "symlink"
    return None


def _unlisted(folder: Path, files: dict, follow_file_links: bool):
    """(path, problem) for each entry of the folder that is not a listed regular file."""
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames) + sorted(filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(folder).as_posix()
            mode = os.lstat(p).st_mode
            if stat.S_ISLNK(mode):
                if not (follow_file_links and name in filenames and p.is_file()):
                    yield rel, "symlink"
                    continue
            elif stat.S_ISDIR(mode):
                continue
            elif not stat.S_ISREG(mode):
                yield rel, "not a regular file"
                continue
            if rel not in files and rel not in (MANIFEST, SIGNATURE) and not _report_file(rel):
                yield rel, "not listed in the manifest"


def report_files(folder: str | Path) -> list[str]:
    """The report's files in a version folder (`REPORT_FILES`), as relative paths."""
    folder = Path(folder)
    found = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return sorted(rel for rel in found if _report_file(rel))


def _report_file(rel: str) -> bool:
    """A file of the report rendered after the set was written (`REPORT_FILES`)."""
    plots, *named = REPORT_FILES
    return rel in named or re.fullmatch(rf"{plots}/[A-Za-z0-9_.-]+\.png", rel) is not None


def _refuse_linked_folders(folder: Path, manifest: dict) -> None:
    """A symlinked version folder, set folder (kN) or benchmark folder is refused."""
    chain = [folder]
    parent = folder.parent
    if BUDGET_DIR.match(parent.name):
        chain += [parent, parent.parent]
    elif parent.name == manifest.get("benchmark"):
        chain.append(parent)
    for p in chain:
        if p.is_symlink():
            raise AnchorSetError(
                f"{printable(p)} is a symlink; a published anchor set is read only from real "
                "folders (copy it instead)"
            )


# --------------------------------------------------------------------------- promotion


def read_pointer(set_folder: str | Path) -> dict | None:
    """The `latest` pointer of a set folder as a dict, or None when nothing is promoted."""
    pointer = Path(set_folder) / LATEST
    if not pointer.is_file():
        return None
    data = _bounded_json(pointer, MAX_POINTER_BYTES, "unreadable latest pointer")
    problem = _pointer_problem(data)
    if problem:
        raise AnchorSetError(f"{printable(pointer)}: unreadable latest pointer ({problem})")
    return data


def _pointer_problem(data: object) -> str | None:
    """Why a parsed `latest` is not a pointer: its version and promoted record are checked."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if not positive_int(data.get("version")):
        got = printable(repr(data.get("version")))[:40]
        return f"version must be a positive integer, got {got}"
    if "serial" in data and not positive_int(data["serial"]):
        return f"serial must be a positive integer, got {printable(repr(data['serial']))[:40]}"
    record = data.get("promoted")
    if record is not None and not (
        isinstance(record, dict) and all(k.isdigit() and k.isascii() for k in record)
    ):
        return "its promoted record is not {version: seal}"
    return None


def pointer_serial(pointer: dict | None) -> int:
    """How many promotions a `latest` pointer follows (its `serial`; 0 for none): each
    `set_latest` writes one more. Pointers written before serials count their record."""
    if pointer is None:
        return 0
    if "serial" in pointer:
        return int(pointer["serial"])
    return len(pointer.get("promoted") or {}) or int(pointer["version"])


def positive_int(value: object) -> bool:
    """A JSON integer >= 1 (not a bool, a float or a string)."""
    return type(value) is int and value >= 1


def _bounded_json(path: Path, limit: int, what: str) -> object:
    """The JSON of `path` (at most `limit` bytes); AnchorSetError `{path}: {what} ({why})`."""
    try:
        return loads(_bounded_text(path, limit))
    except (JsonTextError, UnicodeDecodeError) as e:
        raise AnchorSetError(f"{printable(path)}: {what} ({printable(e)})") from None


def _bounded_text(path: Path, limit: int) -> str:
    """The file's text when it is at most `limit` bytes; a JsonTextError if larger."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise JsonTextError(f"larger than {limit:,} bytes")
    return data.decode("utf-8")


__all__ = [
    "BUDGET_DIR",
    "DEFAULT",
    "HOME_SETS",
    "KIND",
    "LATEST",
    "MANIFEST",
    "MAX_MANIFEST_BYTES",
    "MAX_POINTER_BYTES",
    "POINTER_SIGNATURE",
    "PREDICTOR_DIR",
    "REPORT_FILES",
    "REPORT_INPUTS",
    "SCHEMA_VERSION",
    "SIGNATURE",
    "TOMBSTONE",
    "VERSION_DIR",
    "AnchorSetError",
    "budget_of",
    "default_budget",
    "latest_version",
    "list_budgets",
    "list_versions",
    "live_budget",
    "manifest_digest",
    "parse_version",
    "pointer_serial",
    "positive_int",
    "published_benchmarks",
    "read_manifest",
    "read_pointer",
    "report_files",
    "resolve_version_dir",
    "seal",
    "set_dir",
    "unsafe_path",
    "verify",
]
