"""sparseeval: estimate full-benchmark accuracy from a few anchor items (SparseEval).

`import sparseeval` is light: names are imported on first use, so a consumer with only
NumPy installed can `sparseeval.load_anchor_set(...)`; the method (`SparseEval`,
`make_synthetic`, ...) needs the `pipeline` extra.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sparseeval._ast_guard import guard as _guard_ast_parse
from sparseeval._version import __version__

_guard_ast_parse()  # threads parse safely (NumPy headers, signatures): see _ast_guard

_EXPORTS = {
    "AnchorSet": "consume.sets.anchorset",
    "Estimate": "consume.scoring.estimate",
    "Difference": "consume.scoring.estimate",
    "load_anchor_set": "consume.sets.anchorset",
    "AnchorSetError": "consume.sets.layout",
    "ResponsesError": "consume.answers.responses",
    "MatrixError": "method.matrix",
    "ResponseMatrix": "method.matrix",
    "Settings": "pipeline.settings",
    "SparseEvalError": "consume.errors",
    "SparseEval": "method.estimator",
    "PaperSparseEval": "method.paper",
    "SuiteAnchorSet": "consume.sets.suite_set",
    "SuiteSparseEval": "method.suite",
    "load_suite": "consume.sets.suite_set",
    "Split": "method.splits",
    "split_models": "method.splits",
    "make_leaderboard": "method.synthetic",
    "make_synthetic": "method.synthetic",
}

__all__ = [
    "AnchorSet",
    "AnchorSetError",
    "Difference",
    "Estimate",
    "MatrixError",
    "PaperSparseEval",
    "ResponseMatrix",
    "ResponsesError",
    "Settings",
    "SparseEval",
    "SparseEvalError",
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
    from sparseeval.consume.answers.responses import ResponsesError
    from sparseeval.consume.errors import SparseEvalError
    from sparseeval.consume.scoring.estimate import Difference, Estimate
    from sparseeval.consume.sets.anchorset import AnchorSet, load_anchor_set
    from sparseeval.consume.sets.layout import AnchorSetError
    from sparseeval.consume.sets.suite_set import SuiteAnchorSet, load_suite
    from sparseeval.method.estimator import SparseEval
    from sparseeval.method.matrix import MatrixError, ResponseMatrix
    from sparseeval.method.paper import PaperSparseEval
    from sparseeval.method.splits import Split, split_models
    from sparseeval.method.suite import SuiteSparseEval
    from sparseeval.method.synthetic import make_leaderboard, make_synthetic
    from sparseeval.pipeline.settings import Settings
