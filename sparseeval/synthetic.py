"""A seeded multidimensional IRT leaderboard: realistic, clustered correctness matrices."""

from __future__ import annotations

import numpy as np

from .matrix import ResponseMatrix

# Open LLM Leaderboard v1 shapes (items per benchmark).
OLLM_V1_ITEMS = {
    "arc": 1172,
    "gsm8k": 1319,
    "hellaswag": 10042,
    "mmlu": 14042,
    "truthfulqa": 817,
    "winogrande": 1267,
}


def _abilities(n_models: int, n_skills: int, n_families: int, rng: np.random.Generator):
    """Model abilities: a general factor plus family-specific skill profiles."""
    family = rng.integers(0, n_families, n_models)
    family_profile = rng.normal(0.0, 0.8, (n_families, n_skills))
    general = rng.normal(0.0, 1.0, (n_models, 1))
    theta = general + family_profile[family] + rng.normal(0.0, 0.35, (n_models, n_skills))
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
) -> ResponseMatrix:
    """One benchmark: an `n_models` x `n_items` +-1 matrix; targets are row accuracies."""
    rng = np.random.default_rng(seed)
    theta, ids = _abilities(n_models, n_skills, n_families, rng)
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
