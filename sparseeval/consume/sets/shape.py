"""Shape checks of what a published set's files say, before anything reads them as numbers.

A seal or a checksum says a file is the one published; it does not say the file is usable.
These checks turn a damaged or hand-edited manifest, `latest` pointer or predictor into one
`AnchorSetError` line: a missing or non-object `interval`, a NaN or negative half-width, a
version that is not a positive integer (`1e999`, `"1"`, `true`), a reader folder that is
absolute or leads outside the version folder, and weights that are not finite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from sparseeval.consume.answers.responses import printable
from sparseeval.consume.scoring.conformal import ConformalInterval
from sparseeval.consume.sets.fields import MEMBER_READER, check_fields
from sparseeval.consume.sets.layout import AnchorSetError, positive_int, unsafe_path


def interval_from(where: object, d: object) -> ConformalInterval:
    """The set's conformal interval from its manifest entry; one line if it is not usable."""
    if not isinstance(d, Mapping):
        raise AnchorSetError(f"{printable(where)}: manifest has no interval (got {_kind(d)})")
    level, n = d.get("level"), d.get("n_calibration", 0)
    if not (_number(level) and 0 < level < 1):
        raise AnchorSetError(f"{printable(where)}: interval level must be in (0, 1)")
    for name in ("halfwidth", "diff_halfwidth"):
        v = d.get(name)  # None (JSON null) is an unbounded interval
        if v is not None and not (_number(v) and v >= 0):
            raise AnchorSetError(
                f"{printable(where)}: interval {name} must be a number >= 0 or null, "
                f"got {printable(repr(v))[:40]}"
            )
    if type(n) is not int or n < 0:
        raise AnchorSetError(f"{printable(where)}: interval n_calibration must be an integer")
    try:
        conf = ConformalInterval.from_dict(dict(d))
    except (KeyError, TypeError, ValueError) as e:
        raise AnchorSetError(
            f"{printable(where)}: interval adaptive widths are damaged ({e})"
        ) from None
    if conf.spread is not None and not _usable_bands(conf):
        raise AnchorSetError(
            f"{printable(where)}: interval adaptive widths are damaged (one finite quantile "
            ">= 0 per band and finite cut points are needed)"
        )
    return conf


def _usable_bands(conf: ConformalInterval) -> bool:
    numbers = (*conf.edges, *conf.quantiles, *conf.spread.coef, conf.spread.floor)
    return (
        len(conf.quantiles) == len(conf.edges) + 1
        and all(math.isfinite(v) for v in numbers)
        and min(conf.quantiles) >= 0
    )


def reader_folder(where: object, reader: object, label: str = "predictor") -> str:
    """The reader's folder, a plain relative path inside the version folder."""
    folder = reader.get("folder") if isinstance(reader, Mapping) else None
    problem = unsafe_path(folder)
    if problem:
        raise AnchorSetError(
            f"{printable(where)}: {label} folder {printable(repr(folder))[:80]} is {problem}; "
            "refusing it"
        )
    return folder


def check_manifest(where: object, manifest: Mapping) -> None:
    """The manifest's version, interval and predictor entries can be used as they are, and
    every field passes its shape check (`consume.sets.fields`)."""
    if not positive_int(manifest.get("version")):
        raise AnchorSetError(f"{printable(where)}: manifest version is not a positive integer")
    interval_from(where, manifest.get("interval"))
    reader_folder(where, manifest.get("predictor"))
    check_fields(where, manifest)


def check_reader(where: object, benchmark: str, reader: object, items: object) -> None:
    """A suite member reader: a safe folder, a usable interval, a list of item ids."""
    label = f"{printable(benchmark)} reader"
    reader_folder(where, reader, label)
    interval_from(f"{printable(where)} ({label})", reader.get("interval"))
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise AnchorSetError(f"{printable(where)}: {label} has no list of items")
    check_fields(f"{printable(where)} ({label})", {**reader, "items": items}, MEMBER_READER)


def check_arrays(folder: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Every weight array is numeric and finite (a NaN weight makes every estimate NaN)."""
    for name, a in arrays.items():
        if not np.issubdtype(a.dtype, np.number) or not np.all(np.isfinite(a)):
            raise AnchorSetError(
                f"{printable(folder)}: predictor weights {printable(name)} are not finite "
                "numbers (damaged); refusing them"
            )


def check_estimate(where: object, *values: float) -> None:
    """An estimate and its interval are finite numbers (never printed as `nan%`)."""
    if not all(isinstance(v, float | int) and math.isfinite(v) for v in values):
        raise AnchorSetError(
            f"{printable(where)}: the predictor returned a value that is not a finite number; "
            "the set is damaged"
        )


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _kind(v: object) -> str:
    return "nothing" if v is None else type(v).__name__


__all__ = [
    "check_arrays",
    "check_estimate",
    "check_manifest",
    "check_reader",
    "interval_from",
    "reader_folder",
]
