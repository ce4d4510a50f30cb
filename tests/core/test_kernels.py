"""Kernels against independent oracles (linear algebra, Dirichlet moments)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bbrl import kernels


def _random_mdp(seed: int, S: int, A: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    P[rng.random((S, A, S)) < 0.3] = 0.0
    P[:, :, 0] += 1e-3
    P /= P.sum(axis=-1, keepdims=True)
    R = rng.uniform(-1, 2, size=(S, A, S))
    return P, R


def _optimal_by_enumeration(P: np.ndarray, R: np.ndarray, gamma: float) -> np.ndarray:
    S, A, _ = P.shape
    r = (P * R).sum(axis=-1)
    best = np.full(S, -np.inf)
    for policy in itertools.product(range(A), repeat=S):
        Pp = P[np.arange(S), policy]
        v = np.linalg.solve(np.eye(S) - gamma * Pp, r[np.arange(S), policy])
        best = np.maximum(best, v)
    return best


@given(seed=st.integers(0, 10_000), S=st.integers(1, 4), A=st.integers(1, 3), gamma=st.floats(0.0, 0.95))
def test_value_iteration_matches_the_linear_solve(seed: int, S: int, A: int, gamma: float) -> None:
    P, R = _random_mdp(seed, S, A)
    exact = _optimal_by_enumeration(P, R, gamma)
    V, policy = kernels.value_iteration(P, R, gamma, epsilon=1e-10)
    # Stopping at ||V' - V|| <= eps bounds the error by eps * gamma / (1 - gamma).
    np.testing.assert_allclose(V, exact, atol=1e-10 * gamma / (1 - gamma) + 1e-9)
    assert policy.shape == (S,) and policy.min() >= 0 and policy.max() < A


@given(seed=st.integers(0, 10_000), S=st.integers(1, 4), A=st.integers(1, 3))
def test_q_iteration_matches_the_linear_solve(seed: int, S: int, A: int) -> None:
    P, R = _random_mdp(seed, S, A)
    gamma = 0.9
    Q = kernels.q_iteration(P, R, gamma, max_sweeps=100_000, accuracy=1e-11)
    np.testing.assert_allclose(Q.max(axis=1), _optimal_by_enumeration(P, R, gamma), atol=1e-11 * 10 + 1e-9)


def test_q_iteration_cap_follows_the_original() -> None:
    P, R = _random_mdp(0, 3, 2)
    one_sweep = kernels.q_iteration(P, R, 0.9, max_sweeps=0, accuracy=0.0)
    np.testing.assert_allclose(one_sweep, (P * R).sum(axis=-1), rtol=1e-12)


def test_evaluate_policy_against_the_closed_form() -> None:
    P, R = _random_mdp(1, 4, 2)
    policy = np.full((4, 2), 0.5)
    gamma, T = 0.9, 40
    Pp = (policy[:, :, None] * P).sum(axis=1)
    rp = (policy * (P * R).sum(axis=-1)).sum(axis=1)
    # v_T = sum_{t<T} (gamma Pp)^t rp
    expected = sum(np.linalg.matrix_power(gamma * Pp, t) @ rp for t in range(T))
    np.testing.assert_allclose(kernels.evaluate_policy(P, R, policy, gamma, T), expected, rtol=1e-12)


def test_dirichlet_moments_and_zeros() -> None:
    alpha = np.array([0.0, 1.0, 2.0, 0.0, 3.0])
    draws = np.stack([kernels.sample_dirichlet(alpha, seed) for seed in range(20_000)])
    assert np.all(draws[:, [0, 3]] == 0.0)
    a0 = alpha.sum()
    mean = alpha / a0
    var = alpha * (a0 - alpha) / (a0**2 * (a0 + 1))
    se = np.sqrt(var / len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 5 * se + 1e-15)
    with pytest.raises(ValueError, match="alpha"):
        kernels.sample_dirichlet(np.zeros(3))


def test_posterior_mean_is_prior_plus_counts_normalised() -> None:
    prior = np.ones((2, 1, 2))
    counts = np.array([[[3.0, 0.0]], [[0.0, 1.0]]])
    np.testing.assert_allclose(kernels.posterior_mean(prior + counts)[0, 0], [0.8, 0.2])
    with pytest.raises(ValueError, match="positive total"):
        kernels.posterior_mean(np.zeros((2, 1, 2)))


def test_kernels_reject_bad_tables() -> None:
    P, R = _random_mdp(0, 3, 2)
    with pytest.raises(ValueError, match="sums to"):
        kernels.value_iteration(P * 0.5, R, 0.9)
    with pytest.raises(ValueError, match="gamma"):
        kernels.value_iteration(P, R, 1.0)
    with pytest.raises(ValueError, match="shape"):
        kernels.q_iteration(P[:, :, :2], R, 0.9, 10)
