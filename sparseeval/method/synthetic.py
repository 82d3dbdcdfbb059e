"""A seeded multidimensional IRT leaderboard: realistic, clustered correctness matrices."""

from __future__ import annotations

import numpy as np

from sparseeval.consume.benchmarks import records
from sparseeval.method.matrix import ResponseMatrix

# Open LLM Leaderboard v1 shapes (items per benchmark).
OLLM_V1_ITEMS = {b.name: b.v1.items for b in records() if b.v1}


def _abilities(
    n_models: int, n_skills: int, n_families: int, rng: np.random.Generator, scale: float = 1.0
):
    """Model abilities: a general factor plus family-specific skill profiles, times `scale`."""
    family = rng.integers(0, n_families, n_models)
    family_profile = rng.normal(0.0, 0.8, (n_families, n_skills))
    general = rng.normal(0.0, 1.0, (n_models, 1))
    theta = general + family_profile[family] + rng.normal(0.0, 0.35, (n_models, n_skills))
    theta *= scale
    ids = np.array([f"family-{f:02d}/model-{i:05d}" for i, f in enumerate(family)], dtype=object)
    return theta, ids


def _item_probabilities(theta: np.ndarray, n_items: int, rng: np.random.Generator) -> np.ndarray:
    """P(correct) of each model on each item under a 3PL model with skill clusters."""
    n_skills = theta.shape[1]
    skill = rng.integers(0, n_skills, n_items)
    loading = np.full((n_items, n_skills), 0.15) + rng.normal(0, 0.05, (n_items, n_skills))
    loading[np.arange(n_items), skill] = 1.0
    loading /= np.linalg.norm(loading, axis=1, keepdims=True)
    a = rng.lognormal(0.2, 0.45, n_items)
    b = rng.normal(0.3, 1.1, n_items)
    c = np.where(rng.random(n_items) < 0.6, rng.uniform(0.1, 0.3, n_items), 0.0)
    logits = a * (theta @ loading.T - b)
    return c + (1.0 - c) / (1.0 + np.exp(-logits))


def make_synthetic(
    n_models: int = 1000,
    n_items: int = 500,
    n_skills: int = 6,
    n_families: int = 40,
    seed: int = 0,
    ability_scale: float = 1.0,
) -> ResponseMatrix:
    """One benchmark: an `n_models` x `n_items` +-1 matrix; targets are row accuracies.

    `ability_scale` shrinks (< 1) or widens the spread of abilities: 1.0 gives accuracies
    with a standard deviation of about 0.23 at 1,319 items, 0.45 about 0.135 (0.4-0.5:
    0.12-0.15, the spread of real leaderboards on many benchmarks).
    """
    rng = np.random.default_rng(seed)
    theta, ids = _abilities(n_models, n_skills, n_families, rng, ability_scale)
    return _sample(theta, ids, n_items, rng)


def make_leaderboard(
    n_models: int = 1000,
    items: dict[str, int] | None = None,
    n_skills: int = 6,
    n_families: int = 40,
    seed: int = 0,
) -> dict[str, ResponseMatrix]:
    """Several benchmarks answered by the same models (default: OLLM v1 item counts)."""
    rng = np.random.default_rng(seed)
    theta, ids = _abilities(n_models, n_skills, n_families, rng)
    return {name: _sample(theta, ids, n, rng) for name, n in (items or OLLM_V1_ITEMS).items()}


def _sample(theta, ids, n_items: int, rng: np.random.Generator) -> ResponseMatrix:
    p = _item_probabilities(theta, n_items, rng)
    correct = rng.random(p.shape, dtype=np.float32) < p
    values = np.where(correct, 1, -1).astype(np.int8)
    items = np.array([f"item-{j:05d}" for j in range(n_items)], dtype=object)
    return ResponseMatrix(values, ids.copy(), items)


def make_arrivals(
    n_models: int = 1000,
    items: dict[str, int] | None = None,
    drift: float = 1.5,
    n_skills: int = 6,
    n_families: int = 40,
    seed: int = 0,
) -> dict[str, ResponseMatrix]:
    """A leaderboard whose models arrive over time; rows are in arrival order.

    Model i arrives at time t = i / n_models. A quarter of the families exist at t = 0,
    the others are released at uniform random times; a model belongs to a family released
    by then, recent ones more often. Its general ability has mean `drift * t`, so the
    last models are `drift` standard deviations stronger than the first on average.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n_models) / max(n_models, 1)
    release = np.sort(rng.uniform(0.0, 1.0, n_families))
    release[: max(1, n_families // 4)] = 0.0
    profile = rng.normal(0.0, 0.8, (n_families, n_skills))
    family = np.empty(n_models, dtype=np.int64)
    for i, ti in enumerate(t):
        out = np.flatnonzero(release <= ti)
        w = np.exp(-4.0 * (ti - release[out]))
        family[i] = rng.choice(out, p=w / w.sum())
    general = rng.normal(drift * t, 1.0)[:, None]
    theta = general + profile[family] + rng.normal(0.0, 0.35, (n_models, n_skills))
    ids = np.array([f"family-{f:02d}/model-{i:05d}" for i, f in enumerate(family)], dtype=object)
    return {name: _sample(theta, ids, n, rng) for name, n in (items or OLLM_V1_ITEMS).items()}


__all__ = [
    "OLLM_V1_ITEMS",
    "make_arrivals",
    "make_leaderboard",
    "make_synthetic",
]
