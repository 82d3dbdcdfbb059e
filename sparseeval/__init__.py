"""sparseeval: estimate full-benchmark accuracy from a few anchor items (SparseEval).

`import sparseeval` is light: names are imported on first use, so a consumer with only
NumPy installed can `sparseeval.load_anchor_set(...)`; the method (`SparseEval`,
`make_synthetic`, ...) needs the `pipeline` extra.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS = {
    "AnchorSet": "anchorset",
    "Estimate": "anchorset",
    "Difference": "anchorset",
    "load_anchor_set": "anchorset",
    "AnchorSetError": "layout",
    "ResponsesError": "responses",
    "MatrixError": "matrix",
    "ResponseMatrix": "matrix",
    "Settings": "settings",
    "SparseEval": "estimator",
    "SuiteAnchorSet": "suite_set",
    "SuiteSparseEval": "suite",
    "load_suite": "suite_set",
    "Split": "splits",
    "split_models": "splits",
    "make_leaderboard": "synthetic",
    "make_synthetic": "synthetic",
}

__all__ = [
    "AnchorSet",
    "AnchorSetError",
    "Difference",
    "Estimate",
    "MatrixError",
    "ResponseMatrix",
    "ResponsesError",
    "Settings",
    "SparseEval",
    "Split",
    "SuiteAnchorSet",
    "SuiteSparseEval",
    "__version__",
    "load_anchor_set",
    "load_suite",
    "make_leaderboard",
    "make_synthetic",
    "split_models",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sparseeval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from .anchorset import AnchorSet, Difference, Estimate, load_anchor_set
    from .estimator import SparseEval
    from .layout import AnchorSetError
    from .matrix import MatrixError, ResponseMatrix
    from .responses import ResponsesError
    from .settings import Settings
    from .splits import Split, split_models
    from .suite import SuiteSparseEval
    from .suite_set import SuiteAnchorSet, load_suite
    from .synthetic import make_leaderboard, make_synthetic
