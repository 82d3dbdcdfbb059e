"""The files of a published version folder, for `anchorset.load_anchor_set`: where it is
(a local folder or a Hub download), its verified manifest, its predictor and item curves.
NumPy only."""

from __future__ import annotations

import math
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from sparseeval.consume.answers.ids import is_canonical
from sparseeval.consume.answers.responses import printable
from sparseeval.consume.scoring.next_items import KEY as CURVES_KEY
from sparseeval.consume.scoring.next_items import CurvesError, ItemCurves, positions
from sparseeval.consume.sets.fields import Manifest
from sparseeval.consume.sets.layout import (
    LATEST,
    AnchorSetError,
    read_manifest,
    read_pointer,
    resolve_version_dir,
    verify,
)
from sparseeval.consume.sets.promotion import check_promoted, set_of
from sparseeval.consume.sets.shape import check_arrays, check_manifest, reader_folder

# The most a published set's .npz (predictor weights, item curves) may inflate to, in bytes.
# Real ones are far smaller (a predictor of 1,000 anchors: a few MB); a set this big is no
# anchor set but a bomb (3 MB on disk, 3.2 GB loaded), refused before any array is read.
MAX_NPZ_BYTES = 256 * 2**20
_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}

_REPO_ID = re.compile(r"^(?:hf://(?:datasets/)?)?([A-Za-z0-9][\w.-]*/[\w.-]+)$")


def fetch(
    path_or_repo: str | Path,
    benchmark: str,
    version: int | str,
    hub_client,
    revision: str | None,
    budget: int | None,
    public_key=None,
) -> tuple[Path, str, bool]:
    """(version folder, where it came from, from the Hub?): a local folder, or a download."""
    p = Path(path_or_repo)
    hub = not p.exists() and _REPO_ID.match(str(path_or_repo))
    if hub:
        from sparseeval.consume.sets.hub import download_version

        folder = download_version(hub.group(1), benchmark, version, hub_client, revision, budget,
                                  public_key)  # fmt: skip
        return folder, f"hf://datasets/{hub.group(1)}", True
    if not p.exists():
        raise AnchorSetError(
            f"{printable(path_or_repo)}: no such folder (nor a Hub repo id owner/name); run"
            " `sparseeval refresh` to publish anchor sets there, or pass the folder that holds"
            " them (--anchor-set DIR)"
        )
    folder = resolve_version_dir(p, benchmark, version, budget)
    return folder, str(folder), False


def checked_manifest(folder: Path, benchmark: str, hub: bool, public_key) -> Manifest:
    """The folder's manifest, typed, once it names `benchmark`, is promoted (locally) and
    every file, the seal, every field and (with `public_key`) the signature verify."""
    manifest = read_manifest(folder)
    if manifest.get("benchmark") != benchmark:
        raise AnchorSetError(
            f"{printable(folder)} holds benchmark {printable(repr(manifest.get('benchmark')))}, "
            f"not {benchmark!r}"
        )
    if not hub:  # a Hub commit moves `latest` with the version; pin it with `revision`
        check_promoted(folder, manifest)
    verify(folder, manifest, follow_file_links=hub)  # the Hub cache links to blobs
    if public_key is not None:
        _check_signed(folder, manifest, public_key, hub)
    _check_items(folder, manifest.get("items"))
    check_manifest(folder, manifest)
    return Manifest.read(folder, manifest, checked=True)


def _check_signed(folder: Path, manifest: dict, public_key, hub: bool) -> None:
    """The manifest's signature, and locally its set's `latest` pointer's (`set_of`), verify
    with `public_key` (a Hub download's pointer is checked as it is read: `download_version`)."""
    from sparseeval.consume.sets.signing import verify_pointer, verify_signature

    verify_signature(folder, manifest, public_key)
    set_folder = None if hub else set_of(folder, manifest)
    if set_folder is not None and (pointer := read_pointer(set_folder)) is not None:
        verify_pointer(set_folder / LATEST, pointer, public_key, str(set_folder.resolve()))


def _check_items(folder: Path, items: object) -> None:
    """A published set's item ids are a list of distinct canonical ids (`consume.answers.ids`)."""
    if not isinstance(items, list) or not items:
        raise AnchorSetError(f"{printable(folder)}: manifest has no list of items")
    bad = next((i for i in items if not is_canonical(i)), None)
    if bad is not None:
        raise AnchorSetError(
            f"{printable(folder)}: manifest item id {printable(repr(bad))[:80]} is not canonical"
            " (trimmed, NFC, no control or format characters)"
        )
    if len(set(items)) != len(items):
        raise AnchorSetError(f"{printable(folder)}: manifest lists an item id twice")


def load_predictor(folder: Path, manifest: dict[str, Any]):
    """The NumPy predictor of a verified version folder."""
    from sparseeval.consume.scoring.inference import WEIGHTS_FILE
    from sparseeval.consume.scoring.inference import load_predictor as load_reader

    reader = folder / reader_folder(folder, manifest["predictor"])
    check_npz_size(folder, reader / WEIGHTS_FILE)
    try:
        predictor = load_reader(folder / reader_folder(folder, manifest["predictor"]))
    except AnchorSetError:
        raise
    except Exception as e:
        raise AnchorSetError(
            f"{printable(folder)}: cannot load predictor weights ({printable(e)})"
        ) from e
    check_arrays(folder, predictor.state()[1])
    return predictor


def load_curves(folder: Path, manifest: dict[str, Any]) -> ItemCurves | None:
    """The set's item list and curves (`scoring.next_items`), or None for sets without them."""
    entry = manifest.get(CURVES_KEY)
    if entry is None:
        return None
    from sparseeval.consume.scoring.next_items import CURVES_FILE

    check_npz_size(folder, folder / reader_folder(folder, entry, "item curves") / CURVES_FILE)
    try:
        curves = ItemCurves.load(folder / reader_folder(folder, entry, "item curves"))
        positions(curves, manifest["items"])
    except CurvesError as e:
        raise AnchorSetError(f"{printable(folder)}: {e}") from None
    if len(curves.items) != entry.get("n_items"):
        raise AnchorSetError(f"{printable(folder)}: item curves list a different number of items")
    return curves


def check_npz_size(folder: Path, path: Path, limit: int = MAX_NPZ_BYTES) -> None:
    """Refuse an .npz of a set whose arrays would inflate beyond `limit` bytes, from what its
    zip directory and each member's .npy header declare, before any array is read."""
    total = 0
    try:
        with zipfile.ZipFile(path) as npz:
            for info in npz.infolist():
                total += max(info.file_size, _declared_bytes(npz, info))
                if total > limit:
                    raise AnchorSetError(
                        f"{printable(folder)}: {path.name} declares more than {limit:,} bytes"
                        f" of arrays ({printable(info.filename)} and before): refused before"
                        " loading, a published set is never that big"
                    )
    except (OSError, zipfile.BadZipFile, ValueError) as e:
        if isinstance(e, AnchorSetError):
            raise
        raise AnchorSetError(
            f"{printable(folder)}: cannot read {path.name} ({printable(e)})"
        ) from e


def _declared_bytes(npz: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """The bytes one .npy member's header says its array holds (shape x item size)."""
    with npz.open(info) as f:
        version = np.lib.format.read_magic(f)
        read = _HEADERS.get(version)
        if read is None:
            raise ValueError(f"{info.filename}: .npy format {version} is not read here")
        shape, _, dtype = read(f)
    if dtype.hasobject:
        raise ValueError(f"{info.filename}: holds Python objects")
    return math.prod(shape) * dtype.itemsize


__all__ = [
    "MAX_NPZ_BYTES",
    "check_npz_size",
    "checked_manifest",
    "fetch",
    "load_curves",
    "load_predictor",
]
