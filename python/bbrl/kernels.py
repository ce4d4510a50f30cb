"""The core's numerical kernels on NumPy arrays: the same code the built-in agents run.

Useful to write an agent in Python, to check a result by hand, or to test against an oracle.
Every table has shape (S, A, S) (``P[s, a, s']``, ``R[s, a, s']``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from .checks import index

__all__ = [
    "Posterior",
    "evaluate_policy",
    "posterior_mean",
    "q_iteration",
    "sample_dirichlet",
    "sample_transitions",
    "value_iteration",
]


def _table(value: Any, name: str) -> np.ndarray:
    array = np.ascontiguousarray(value, dtype=np.float64)
    if array.ndim != 3 or array.shape[0] != array.shape[2]:
        raise ValueError(f"{name} must have shape (S, A, S), got {array.shape}")
    return array


def sample_dirichlet(alpha: Any, seed: int = 0) -> np.ndarray:
    """One draw from Dirichlet(alpha); entries with alpha = 0 are exactly 0."""
    return _core.sample_dirichlet(np.ascontiguousarray(alpha, dtype=np.float64).ravel(), seed)


def _seed_from(seed: int | np.random.Generator) -> int:
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64) or a numpy Generator, got {seed!r}")
    return int(seed)


def sample_transitions(counts: Any, seed: int | np.random.Generator = 0) -> np.ndarray:
    """One transition table with every row ``P[s, a, :] ~ Dirichlet(counts[s, a, :])``, shape (S, A, S);
    zero counts give exactly zero probability (the core's sampler, the one the built-in agents use).

    ``seed`` is an int, or a NumPy Generator from which one 64-bit seed is drawn (so an agent's
    ``rng`` makes the draw reproducible)."""
    return _core.sample_transitions(_table(counts, "counts"), _seed_from(seed))


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


class Posterior:
    """Dirichlet posterior over the transitions of an MDP: counts = prior theta + observed transitions.

    The helper a Python agent keeps per trajectory (see :class:`bbrl.agents.Agent`)::

        posterior = Posterior(prior)                 # an FDM (or a theta array and the rewards)
        posterior.observe(state, action, next_state)
        P_mean = posterior.mean()                    # the mean MDP, (S, A, S)
        P_draw = posterior.sample(rng)               # a posterior draw, (S, A, S)
        V, policy = value_iteration(P_draw, posterior.rewards, gamma)

    Attributes:
        counts: float64 array (S, A, S), prior concentrations plus observations (writable).
        rewards: float64 array (S, A, S), the known rewards.
    """

    def __init__(self, prior: Any, rewards: Any = None) -> None:
        theta = getattr(prior, "theta", prior)
        if rewards is None:
            rewards = getattr(prior, "rewards", None)
            if rewards is None:
                raise ValueError("Posterior needs rewards: pass an FDM, or theta and rewards arrays")
        self.counts = np.array(_table(theta, "theta"), dtype=np.float64, copy=True)
        self.rewards = _table(rewards, "rewards")
        if self.rewards.shape != self.counts.shape:
            raise ValueError(f"rewards shape {self.rewards.shape} differs from theta shape {self.counts.shape}")

    @property
    def n_states(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.counts.shape[1])

    def observe(self, state: int, action: int, next_state: int) -> None:
        """Adds one observed transition (the reward is known, so it is not needed).

        Raises:
            TypeError: an index that is not an int (NumPy integers are fine).
            ValueError: an index out of range, e.g. ``state 7 is out of range: allowed 0 to 4``
                (a negative one too: it would count another state's transition).
        """
        n_states, n_actions = self.counts.shape[0], self.counts.shape[1]
        s = index(state, "state", n_states)
        a = index(action, "action", n_actions)
        self.counts[s, a, index(next_state, "next_state", n_states)] += 1.0

    def mean(self) -> np.ndarray:
        """The posterior-mean transition table ``counts / counts.sum(-1)``, (S, A, S)."""
        return posterior_mean(self.counts)

    def sample(self, rng: int | np.random.Generator = 0) -> np.ndarray:
        """A transition table drawn from the posterior, (S, A, S): see :func:`sample_transitions`."""
        return sample_transitions(self.counts, rng)

    def __repr__(self) -> str:
        return f"Posterior(S={self.n_states}, A={self.n_actions}, observed={self.counts.sum():g} total counts)"
