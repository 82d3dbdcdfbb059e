"""The predictors SparseEval can train, by name: one line each.

    name: PredictorSpec(trainer class, published kind, candidates it is built from)

The trainer class lives in `sparseeval.method` (torch allowed) and provides
`candidate(estimator, XA, y, parts)` (how `SparseEval` trains it on anchor columns; `parts`
are the fitted candidates named in `uses`), `state()` (config with `kind`, and arrays) and
`from_state(config, arrays)` (the trainer-side predictor back from its published state).
The published `kind` names the NumPy reader in `sparseeval.consume.scoring.inference.READERS`,
which scores and widens it without torch. To add a predictor: one file with its class,
one line below (and, only for a new published format, a `Reader` in `consume/scoring/inference.py`
with its line in `READERS`). Settings, the estimator's choices and the cache follow.

This module imports nothing heavy: `pipeline.settings` reads the names from it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import Any

from sparseeval.consume.sets.layout import AnchorSetError


@dataclass(frozen=True)
class PredictorSpec:
    """One predictor: where its trainer class is, the kind it publishes as, what it blends."""

    trainer: str  # "module:Class"
    kind: str  # its published format: a key of `consume.scoring.inference.READERS`
    uses: tuple[str, ...] = ()  # candidates it is built from (fitted before it)

    def trainer_class(self) -> Any:
        """The trainer class, imported on first use (so reading names never imports torch)."""
        return _load(self.trainer)


PREDICTORS: dict[str, PredictorSpec] = {
    "ridge": PredictorSpec("sparseeval.method.predictors:RidgePredictor", "ridge"),
    "nnridge": PredictorSpec("sparseeval.method.predictors:NonNegativeRidge", "nnridge"),
    "mlp": PredictorSpec("sparseeval.method.predictors:MLPPredictor", "mlp"),
    "blend": PredictorSpec("sparseeval.method.predictors:BlendPredictor", "blend",
                           uses=("mlp", "nnridge")),
}  # fmt: skip
AUTO = ("nnridge", "mlp", "blend")  # the candidates of predictor="auto"
PREDICTOR_CHOICES = ("auto", *PREDICTORS)  # what the `predictor` setting accepts


@cache
def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(import_module(module), name)


def needed(wanted: tuple[str, ...] | list[str]) -> set[str]:
    """The wanted predictors and, recursively, the candidates they are built from."""
    out: set[str] = set()
    todo = list(wanted)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo += PREDICTORS[name].uses
    return out


def fit_candidates(estimator, XA, y, wanted, side_by_side: bool = False) -> dict[str, Any]:
    """The wanted predictors fitted on anchor columns XA, in registry order, by name.

    A predictor built from others (a blend) reuses their fits. With `side_by_side`, those
    built from none (nnridge, the MLP ensemble) train at once in threads (NumPy, nnls and
    torch free the GIL): the same fits, sooner on several cores.
    """
    todo = needed(wanted)
    first = [name for name, spec in PREDICTORS.items() if name in todo and not spec.uses]

    def fit(name: str, parts: list) -> Any:
        return PREDICTORS[name].trainer_class().candidate(estimator, XA, y, parts)

    if side_by_side and len(first) > 1:
        with ThreadPoolExecutor(max_workers=len(first)) as pool:
            out = dict(zip(first, pool.map(fit, first, [[]] * len(first)), strict=True))
    else:
        out = {name: fit(name, []) for name in first}
    for name, spec in PREDICTORS.items():  # registry order: what a blend uses comes first
        if name in todo and spec.uses:
            out[name] = fit(name, [out[u] for u in spec.uses])
    return {name: out[name] for name in PREDICTORS if name in wanted}


def predictor_from_state(config: dict[str, Any], arrays: dict[str, Any]) -> Any:
    """The trainer-side predictor of a published (config, arrays), e.g. to reuse a saved fit.

    It predicts exactly as the predictor that was saved. ValueError for a kind no
    registered trainer publishes.
    """
    kind = config.get("kind")
    owners = [s for s in PREDICTORS.values() if s.kind == kind]
    if not owners:
        raise AnchorSetError(f"no registered predictor publishes kind {kind!r}")
    trainer = owners[0].trainer_class()
    if "members" in config:  # a blend: each member by its own kind, then the blend of them
        members = [
            predictor_from_state(c, {k[len(f"m{i}/") :]: v for k, v in arrays.items()
                                     if k.startswith(f"m{i}/")})
            for i, c in enumerate(config["members"])
        ]  # fmt: skip
        return trainer.from_members(members, config)
    return trainer.from_state(config, arrays)


__all__ = [
    "AUTO",
    "PREDICTORS",
    "PREDICTOR_CHOICES",
    "PredictorSpec",
    "fit_candidates",
    "needed",
    "predictor_from_state",
]
