"""sparseeval: estimate full-benchmark accuracy from a few anchor items (SparseEval)."""

from .matrix import MatrixError, ResponseMatrix
from .settings import Settings
from .splits import Split, split_models
from .synthetic import make_leaderboard, make_synthetic

__version__ = "0.1.0"

__all__ = [
    "MatrixError",
    "ResponseMatrix",
    "Settings",
    "Split",
    "__version__",
    "make_leaderboard",
    "make_synthetic",
    "split_models",
]
