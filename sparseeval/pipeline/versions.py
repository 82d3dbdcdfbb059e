"""The version store: write a decided version, promote it, or discard it.

Publishing is four steps so that a caller (the refresh flow) can put a quality gate
between them and roll back: `new_version` decides what the version says (its interval
widened there when the coverage check asks), `write_version` writes it (a new folder
appears whole, by rename, and nothing points at it yet; its report is rendered after,
outside the sealed payload), `set_latest` (atomic pointer swap) and, on failure,
`discard_version`. Version numbers are never reused. `set_latest` records the promotion
in `latest` (only promoted versions load); `clean_leftovers` removes what an interrupted
run left (temporary folders, candidates never promoted). `sign_version` (or
`write_version(signing_key=...)`) adds an Ed25519 `manifest.sig`. Layout and trust model:
`sparseeval.consume.sets.layout`: a version goes to its budget's set, `{benchmark}/k{K}/`;
`move_single_set` moves an old single set (`{benchmark}/v{N}`, `latest`) there once, before
the first version written after it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sparseeval.consume.hashing import file_sha256
from sparseeval.consume.sets.layout import (
    DEFAULT,
    LATEST,
    MANIFEST,
    REPORT_FILES,
    REPORT_INPUTS,
    SIGNATURE,
    TOMBSTONE,
    VERSION_DIR,
    AnchorSetError,
    default_budget,
    latest_version,
    list_budgets,
    list_versions,
    pointer_serial,
    read_manifest,
    read_pointer,
    seal,
    set_dir,
    verify,
)
from sparseeval.consume.sets.promotion import promoted_versions
from sparseeval.pipeline.manifest import NewVersion, jsonable, new_version
from sparseeval.pipeline.progress import PROGRESS

__all__ = [
    "NewVersion", "clean_leftovers", "discard_version", "jsonable", "move_single_set",
    "new_version", "point_default", "render_report_of", "set_latest", "sign_version",
    "write_version",
]  # fmt: skip


def write_version(
    root: str | Path,
    version: NewVersion,
    *,
    budget: int | None = None,
    flat: bool = False,
    signing_key=None,
) -> Path:
    """Write a decided version (`manifest.new_version`) as `{root}/{benchmark}/k{K}/v{N}/`
    and return that folder; it only writes (the interval was decided before).

    The folder is built under a temporary name in the same parent and renamed into
    place, so readers never see half of it; N is the next free version number (a
    concurrent writer that takes N first makes this one retry with N + 1). The report
    (`report.html`, `report.md`, `metrics.json`, `plots/`) is rendered after, from what the
    folder holds, outside its sealed payload (`consume.sets.layout.REPORT_FILES`); a report
    that fails to render is said, and the set stands without it. The `latest` pointer is
    NOT moved: call `set_latest` after your quality gate.

    budget: the set's budget K (default: the version's number of anchors); an old single
    set of the benchmark is moved into its budget's folder first (`move_single_set`).
    flat: the suite's set, which has no budget of its own: `{root}/{benchmark}/v{N}/`.
    signing_key: an Ed25519 private key (PEM bytes/str, a path to a PEM file, or an
    `Ed25519PrivateKey`): the folder then appears with `manifest.sig` (see `sign_version`).
    Folders and files are created with the process umask (0755/0644 under umask 022).
    """
    from sparseeval.consume.sets.signing import private_key

    key = private_key(signing_key) if signing_key is not None else None
    benchmark = version.benchmark
    if flat:
        folder = set_dir(root, benchmark)
    else:
        move_single_set(root, benchmark)
        folder = set_dir(root, benchmark, budget or version.n_anchors)
    target = _write_next(folder, version, key)
    render_report_of(target)
    return target


def _write_next(bench_dir: Path, version: NewVersion, key=None) -> Path:
    """Write a version folder under the next free number of a set's folder; that folder.

    A concurrent writer that takes the number first makes this one retry with the next.
    """
    bench_dir.mkdir(parents=True, exist_ok=True)
    while True:
        target = _write_folder(bench_dir, _next_version(bench_dir), version, key)
        if target is not None:
            return target


def _write_folder(bench_dir: Path, number: int, version: NewVersion, key=None) -> Path | None:
    """Build `v{number}` under a temporary name and rename it in; None if the number is taken."""
    from sparseeval.consume.scoring.inference import save_predictor

    tmp = bench_dir / f".tmp-v{number}-{uuid.uuid4().hex}"
    tmp.mkdir()  # honours the umask (mkdtemp would make it 0700: unreadable to others)
    try:
        for rel, predictor in version.predictors.items():
            save_predictor(predictor, tmp / rel)
        for rel, item_curves in version.curves.items():
            item_curves.save(tmp / rel)
        for name, text in version.files.items():
            (tmp / name).write_text(text)
        (tmp / REPORT_INPUTS).write_text(json.dumps(version.inputs, indent=1))
        manifest = version.manifest | {
            "version": number,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        manifest["files"] = {p.relative_to(tmp).as_posix(): file_sha256(p) for p in files}
        (tmp / MANIFEST).write_text(json.dumps(seal(manifest), indent=2, allow_nan=False))
        if key is not None:
            from sparseeval.consume.sets.signing import signature

            (tmp / SIGNATURE).write_bytes(signature(key, (tmp / MANIFEST).read_bytes()))
        _fsync_tree(tmp)
        target = bench_dir / f"v{number}"
        try:
            os.rename(tmp, target)
        except OSError:
            if target.exists():  # another writer took this number: try the next one
                shutil.rmtree(tmp, ignore_errors=True)
                return None
            raise
        return target
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def render_report_of(folder: str | Path) -> bool:
    """Render a written version's report into its folder, from its manifest and report
    inputs; whether it did. Rendered in a temporary folder beside it (a leftover that
    `clean_leftovers` removes) and moved in file by file, `report.html` last; a failure is
    said on the progress log (`sparseeval report` renders it again) and leaves the set whole.
    """
    from sparseeval.pipeline.reports.anchor_report import render_report

    folder = Path(folder)
    tmp = folder.parent / f".tmp-{folder.name}-report-{uuid.uuid4().hex}"
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        inputs_file = folder / REPORT_INPUTS
        inputs = json.loads(inputs_file.read_text()) if inputs_file.is_file() else {}
        render_report(tmp, manifest, inputs, folder)
        for rel in sorted(REPORT_FILES, key=lambda r: r == "report.html"):
            if (tmp / rel).exists():
                _replace_path(tmp / rel, folder / rel)
        return True
    except Exception as exc:  # the report is a view of the set: the set stands without it
        PROGRESS.warning(f"{folder}: written without its report ({type(exc).__name__}: "
                         f"{exc}); `sparseeval report` renders it")  # fmt: skip
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _replace_path(src: Path, dst: Path) -> None:
    """Move `src` (a file or folder) to `dst`, replacing what is there."""
    if dst.is_dir() and not dst.is_symlink():
        shutil.rmtree(dst)
    os.replace(src, dst)


def set_latest(
    root: str | Path, benchmark: str, version: int, budget: int | None = None, signing_key=None
) -> Path:
    """Promote `v{version}`: point its set's `latest` at it (verifies it first).

    budget: the set (default: the one set that holds `v{version}`, `_holding`).
    The pointer also records every version ever promoted with its manifest seal
    (`"promoted": {"1": sha, ...}`), in the same atomic replace: only those load. Its
    `serial` counts promotions, so a signed pointer put back is told from a newer one.
    signing_key (as `write_version`'s): the pointer carries its Ed25519 signature, so a
    consumer with the public key follows no rewritten pointer (`signing.verify_pointer`).
    Call it while holding the publishing lock (two concurrent promotions of one set can
    lose a record, as they would race for `latest` itself).
    """
    version = int(version)
    bench_dir = _holding(root, benchmark, version, budget)
    folder = bench_dir / f"v{version}"
    manifest = read_manifest(folder)
    verify(folder, manifest)
    promoted = _promotion_record(bench_dir)
    promoted[version] = manifest["manifest_sha256"]
    pointer = {
        "version": version,
        "path": f"v{version}",
        "manifest_sha256": manifest["manifest_sha256"],
        "serial": pointer_serial(read_pointer(bench_dir)) + 1,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        "promoted": {str(v): promoted[v] for v in sorted(promoted)},
    }
    if signing_key is not None:
        from sparseeval.consume.sets.signing import signed_pointer

        pointer = signed_pointer(pointer, signing_key)
    return _replace_json(bench_dir / LATEST, pointer)


def point_default(
    root: str | Path, benchmark: str, budget: int, replace: bool = True
) -> Path | None:
    """Point `{root}/{benchmark}/default` at the set the publisher maintains (budget
    `budget`), so readers load it (`layout.live_budget`). Nothing is written while that set
    has no live version, nor over an existing pointer unless `replace`."""
    if latest_version(root, benchmark, int(budget)) is None:
        return None
    if not replace and default_budget(root, benchmark) is not None:
        return None
    return _replace_json(set_dir(root, benchmark) / DEFAULT, {"budget": int(budget)})


def _holding(root: str | Path, benchmark: str, version: int, budget: int | None) -> Path:
    """The set folder of `v{version}`: the budget's, else the one set that holds it (the
    benchmark folder itself when none does, or for the suite and an old single set)."""
    if budget is not None:
        return set_dir(root, benchmark, budget)
    sets = [set_dir(root, benchmark)]
    sets += [set_dir(root, benchmark, b) for b in list_budgets(root, benchmark)]
    holding = [d for d in sets if (d / f"v{int(version)}").is_dir()]
    if len(holding) > 1:
        names = ", ".join(d.name for d in holding)
        raise AnchorSetError(f"{benchmark} v{version} is in several sets ({names}): name its"
                             " budget")  # fmt: skip
    return holding[0] if holding else sets[0]


def _replace_json(target: Path, data: dict) -> Path:
    """Write `data` as JSON to `target` in one atomic replace (fsynced first)."""
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return target


def _promotion_record(bench_dir: Path) -> dict[int, str | None]:
    """{version: seal} promoted so far; a legacy pointer's versions get their seals pinned now."""
    pointer = read_pointer(bench_dir)
    if pointer is None:
        return {}
    record = promoted_versions(bench_dir)
    if isinstance(pointer.get("promoted"), dict):
        return record
    on_disk = set(list_versions(bench_dir.parent, bench_dir.name))
    out: dict[int, str | None] = {}
    for v, sha in record.items():
        if v not in on_disk or (bench_dir / f".discarded-v{v}").exists():
            continue
        if sha is None:
            try:
                sha = read_manifest(bench_dir / f"v{v}")["manifest_sha256"]
            except AnchorSetError:
                sha = None
        out[v] = sha
    return out


def discard_version(
    root: str | Path, benchmark: str, version: int, reason: str = "", budget: int | None = None
) -> None:
    """Remove `v{version}` (a transaction's rollback); refuses the version `latest` names.

    budget: the set (default: the one set that holds `v{version}`, `_holding`).
    The folder is first renamed away (so it disappears at once), then deleted; a
    tombstone `.discarded-v{N}` keeps the number from being reused.
    """
    version = int(version)
    bench_dir = _holding(root, benchmark, version, budget)
    if latest_version(bench_dir.parent, bench_dir.name) == version:
        raise AnchorSetError(
            f"{benchmark} v{version} is the live (latest) version; point latest elsewhere first"
        )
    folder = bench_dir / f"v{version}"
    tomb = {"version": version, "discarded": datetime.now(UTC).isoformat(), "reason": reason}
    (bench_dir / f".discarded-v{version}").write_text(json.dumps(tomb))
    _remove(folder, bench_dir, version)


def _remove(folder: Path, bench_dir: Path, version: int) -> None:
    if folder.exists() or folder.is_symlink():
        trash = bench_dir / f".trash-v{version}-{uuid.uuid4().hex}"
        os.rename(folder, trash)
        if trash.is_symlink():
            trash.unlink()
        else:
            shutil.rmtree(trash, ignore_errors=True)


LEFTOVER_REASON = "left over by an interrupted run"
_LEFTOVER = re.compile(r"^\.(tmp-v|trash-v|latest\..*\.tmp$|sig-.*\.tmp$)")


def clean_leftovers(
    root: str | Path, benchmark: str, budget: int | None = None, *, all_unpromoted: bool = False
) -> list[str]:
    """Remove what interrupted runs left in a benchmark's sets; the paths removed.

    Removes `.tmp-v*` and `.trash-v*` folders (and stray pointer/signature temp files),
    folders of versions that already have a tombstone, and turns never-promoted version
    folders into tombstones (reason "left over by an interrupted run"). Never-promoted
    versions older than the live one are leftovers for sure; newer ones may be a candidate
    a caller still means to gate, so they go only with `all_unpromoted=True` (the pipeline
    at the start of a run, when no candidate of its own exists yet). Call it holding the
    publishing lock (the pipeline's run lock): a writer in progress would lose its
    `.tmp-v*` folder. budget: one budget's set; None: the benchmark's set and every budget
    set under it.
    """
    if budget is not None:
        folders = [set_dir(root, benchmark, budget)]
    else:
        budgets = list_budgets(root, benchmark)
        folders = [set_dir(root, benchmark)] + [set_dir(root, benchmark, b) for b in budgets]
    removed: list[str] = []
    for bench_dir in folders:
        if not bench_dir.is_dir():
            continue
        for p in sorted(bench_dir.iterdir()):
            if _LEFTOVER.match(p.name):
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
                removed.append(str(p))
        live = latest_version(bench_dir.parent, bench_dir.name)
        promoted = promoted_versions(bench_dir)
        for v in list_versions(bench_dir.parent, bench_dir.name):
            folder = bench_dir / f"v{v}"
            if (bench_dir / f".discarded-v{v}").exists():
                _remove(folder, bench_dir, v)  # a discard that was cut short
            elif v in promoted or not (all_unpromoted or (live is not None and v < live)):
                continue
            else:
                tomb = {"version": v, "discarded": datetime.now(UTC).isoformat(),
                        "reason": LEFTOVER_REASON}  # fmt: skip
                (bench_dir / f".discarded-v{v}").write_text(json.dumps(tomb))
                _remove(folder, bench_dir, v)
            removed.append(str(folder))
    return removed


MOVING = ".moving.json"  # the plan of a move in progress: {"moves": {N: K}, "live": N}


def move_single_set(root: str | Path, benchmark: str) -> str:
    """Move an old single set (`{benchmark}/v{N}`, `{benchmark}/latest`) into the one layout,
    `{benchmark}/k{K}/` with K each version's number of anchors; the line said, or "".

    The plan is written first (`.moving.json`); then the version folders move one by one
    (`os.rename`, within the benchmark folder), each budget's `latest` is written with its
    versions' promotions (and the old tombstones, so no number is reused), `default` names
    the live version's budget, and the old `latest` goes last. A crash on the way loses
    nothing and the next call finishes it. A version whose budget already has its number,
    or whose manifest does not read, stays where it is (with the old `latest` if it is the
    live one). Moving keeps every version valid: its seal and signature cover the manifest,
    which names its number, not its folder. Call it holding the publishing lock.
    """
    old = set_dir(root, benchmark)
    plan = _move_plan(old)
    if plan is None:
        return ""
    moves = {int(v): int(k) for v, k in plan["moves"].items()}
    for v, k in moves.items():
        target = set_dir(root, benchmark, k)
        target.mkdir(exist_ok=True)
        if (old / f"v{v}").is_dir() and not (target / f"v{v}").exists():
            os.rename(old / f"v{v}", target / f"v{v}")
    promoted, live = {int(v): s for v, s in plan["promoted"].items()}, plan["live"]
    for k in sorted(set(moves.values())):
        _take_over(set_dir(root, benchmark, k), old, [v for v in moves if moves[v] == k],
                   promoted, live)  # fmt: skip
    if live in moves and (default_budget(root, benchmark) or (None,))[0] is None:
        _replace_json(old / DEFAULT, {"budget": moves[live]})
    if live is None or live in moves:
        (old / LATEST).unlink(missing_ok=True)
        for tomb in old.glob(".discarded-v*"):
            tomb.unlink()
    (old / MOVING).unlink(missing_ok=True)
    if not moves:
        return ""
    groups = {k: [v for v in moves if moves[v] == k] for k in sorted(set(moves.values()))}
    where = "; ".join(f"{', '.join(f'v{v}' for v in vs)} -> {benchmark}/k{k}/"
                      for k, vs in groups.items())  # fmt: skip
    line = f"moved the single {benchmark!r} set at {old} into the one layout: {where}"
    PROGRESS.warning(line)
    return line


def _move_plan(old: Path) -> dict | None:
    """The move's plan (written once, atomically, then read back on a rerun), or None when
    there is nothing to move."""
    if (old / MOVING).is_file():
        return json.loads((old / MOVING).read_text())
    here = list_versions(old.parent, old.name) if old.is_dir() else []
    pointer = read_pointer(old) if old.is_dir() else None
    if not here:
        return None
    moves = {}
    for v in here:
        k = _anchors_of(old / f"v{v}")
        if k is not None and not (old / f"k{k}" / f"v{v}").exists():
            moves[v] = k
    if not moves:
        return None
    plan = {"moves": moves, "live": pointer and int(pointer["version"]),
            "promoted": _promotion_record(old)}  # fmt: skip
    _replace_json(old / MOVING, plan)
    return json.loads((old / MOVING).read_text())


def _anchors_of(folder: Path) -> int | None:
    """A version folder's number of anchors, from its sealed manifest (None: unreadable)."""
    try:
        k = read_manifest(folder).get("n_anchors")
    except AnchorSetError:
        return None
    return k if isinstance(k, int) and k >= 1 else None


def _take_over(
    bench_dir: Path, old: Path, moved: list[int], promoted: dict[int, str | None], live: int | None
) -> None:  # fmt: skip
    """A budget's set after the move: the old tombstones (numbers are never reused) and a
    `latest` with the moved versions' promotions (its own live version kept, if it had one)."""
    for tomb in old.glob(".discarded-v*"):
        there = bench_dir / tomb.name
        if not there.exists() and not (bench_dir / tomb.name.replace(".discarded-", "")).exists():
            shutil.copyfile(tomb, there)
    record = _promotion_record(bench_dir) | {v: promoted[v] for v in moved if v in promoted}
    if not record:
        return
    pointer = read_pointer(bench_dir)
    version = int(pointer["version"]) if pointer else (live if live in moved else max(record))
    seal_of = record.get(version) or read_manifest(bench_dir / f"v{version}")["manifest_sha256"]
    _replace_json(bench_dir / LATEST, {
        "version": version, "path": f"v{version}", "manifest_sha256": seal_of,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        "promoted": {str(v): record[v] for v in sorted(record)},
    })  # fmt: skip


def _next_version(bench_dir: Path) -> int:
    used = [0]
    for p in bench_dir.iterdir():
        m = VERSION_DIR.match(p.name) or TOMBSTONE.match(p.name)
        if m:
            used.append(int(m.group(1)))
    return max(used) + 1


def _fsync_tree(folder: Path) -> None:
    for p in folder.rglob("*"):
        if p.is_file():
            with open(p, "rb") as f:
                os.fsync(f.fileno())


def sign_version(folder: str | Path, private_key_pem) -> Path:
    """Write `manifest.sig` into a version folder (see `consume.sets.signing.sign_version`)."""
    from sparseeval.consume.sets.signing import sign_version as sign

    return sign(folder, private_key_pem)
