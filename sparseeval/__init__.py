"""sparseeval: estimate full-benchmark accuracy from a few anchor items (SparseEval)."""

from .estimator import SparseEval
from .matrix import MatrixError, ResponseMatrix
from .publish import AnchorSet, load_anchor_set
from .settings import Settings
from .splits import Split, split_models
from .synthetic import make_leaderboard, make_synthetic

__version__ = "0.1.0"

__all__ = [
    "AnchorSet",
    "MatrixError",
    "ResponseMatrix",
    "Settings",
    "SparseEval",
    "Split",
    "__version__",
    "load_anchor_set",
    "make_leaderboard",
    "make_synthetic",
    "split_models",
]
