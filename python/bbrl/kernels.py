"""The core's numerical kernels on NumPy arrays: the same code the built-in agents run.

Useful to write an agent in Python, to check a result by hand, or to test against an oracle.
Every table has shape (S, A, S) (``P[s, a, s']``, ``R[s, a, s']``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core

__all__ = ["evaluate_policy", "posterior_mean", "q_iteration", "sample_dirichlet", "value_iteration"]


def _table(value: Any, name: str) -> np.ndarray:
    array = np.ascontiguousarray(value, dtype=np.float64)
    if array.ndim != 3 or array.shape[0] != array.shape[2]:
        raise ValueError(f"{name} must have shape (S, A, S), got {array.shape}")
    return array


def sample_dirichlet(alpha: Any, seed: int = 0) -> np.ndarray:
    """One draw from Dirichlet(alpha); entries with alpha = 0 are exactly 0."""
    return _core.sample_dirichlet(np.ascontiguousarray(alpha, dtype=np.float64).ravel(), seed)


def posterior_mean(counts: Any) -> np.ndarray:
    """The mean transition model of Dirichlet counts (prior + observed): ``counts / counts.sum(-1)``."""
    counts = _table(counts, "counts")
    totals = counts.sum(axis=-1, keepdims=True)
    if np.any(totals <= 0):
        raise ValueError("every (s, a) row of counts needs a positive total")
    return counts / totals


def q_iteration(transitions: Any, rewards: Any, gamma: float, max_sweeps: int, accuracy: float = 1e-2) -> np.ndarray:
    """BBRL Q-iteration (SPEC 2.1): Jacobi sweeps from Q = 0 until no entry moves by more than
    ``accuracy``, at most ``max_sweeps + 1`` sweeps. Returns Q with shape (S, A)."""
    return _core.q_iteration(
        _table(transitions, "transitions"), _table(rewards, "rewards"), gamma, max_sweeps, accuracy
    )


def value_iteration(
    transitions: Any, rewards: Any, gamma: float, epsilon: float = 1e-4
) -> tuple[np.ndarray, np.ndarray]:
    """Guez value iteration (SPEC 2.2): sweeps from V = 0 until ``||V' - V||_2 <= epsilon``.
    Returns (V with shape (S,), greedy policy with shape (S,), ties to the lowest action)."""
    return _core.value_iteration(_table(transitions, "transitions"), _table(rewards, "rewards"), gamma, epsilon)


def evaluate_policy(transitions: Any, rewards: Any, policy: Any, gamma: float, horizon: int) -> np.ndarray:
    """Exact expected discounted return over ``horizon`` steps of a stochastic policy (S, A), from
    every state: what a benchmark of that policy estimates by Monte Carlo."""
    pi = np.ascontiguousarray(policy, dtype=np.float64)
    return _core.evaluate_policy(_table(transitions, "transitions"), _table(rewards, "rewards"), pi, gamma, horizon)
