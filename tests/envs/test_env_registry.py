"""The environment registry: every named environment reached by one name everywhere, and Chain
(Strens 2000), added through the registry alone, against its exact values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bbrl import envs
from bbrl import value_error as ve
from bbrl.envs import registry


def test_every_finite_name_builds_and_continuous_ones_go_to_value_error():
    assert registry.names("finite") == envs.NAMES
    assert set(registry.names("finite")) | set(registry.names("box2")) == set(registry.names())
    for name in envs.NAMES:
        env = envs.make(name)
        assert env.name == name
        assert env.discount == registry.entry(name)["default_discount"]
    for name in registry.names("box2"):
        with pytest.raises(ValueError, match="continuous"):
            envs.make(name)
        # Its state box and default policy are its entry's.
        env, policy = ve.paper_setup(name.lower())
        assert env.name == name and policy.params["kind"] == registry.entry(name)["default_policy"]["kind"]
        (low_x, high_x, _), (low_y, high_y, _) = registry.entry(name)["state_box"]
        assert ve.box_of(env) == ((low_x, low_y), (high_x, high_y))


def test_names_are_spelled_freely_and_unknown_ones_are_named():
    assert registry.canonical("river_swim-osband") == registry.canonical("RIVERSWIM_OSBAND") == "RiverSwim-Osband"
    with pytest.raises(ValueError, match=r"unknown environment 'Chian'.*Chain"):
        envs.make("Chian")
    with pytest.raises(ValueError, match=r"environment .Chain. has no option .noise.; its options: discount"):
        registry.make_core("Chain", noise=0.1)


def _chain_tables(slip: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Strens's Chain written out from the paper's description, independently of the core."""
    n = 5
    P = np.zeros((n, 2, n))
    R = np.zeros((n, 2, n))
    for s in range(n):
        forward = min(s + 1, n - 1)
        forward_reward = 10.0 if s == n - 1 else 0.0
        for a, p_forward in ((0, 1 - slip), (1, slip)):
            P[s, a, forward] += p_forward
            P[s, a, 0] += 1 - p_forward
            R[s, a, forward] = forward_reward
            R[s, a, 0] = 2.0
    return P, R


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99])
def test_chain_has_strens_tables_and_exact_values(gamma):
    env = envs.chain(gamma)
    P, R = _chain_tables()
    np.testing.assert_allclose(env.transitions, P, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(env.rewards, R)
    assert env.start_law.tolist() == [1.0, 0, 0, 0, 0]
    # Exact values of both stationary deterministic policies by a linear solve, (I - gamma P) v = r.
    r = (P * R).sum(axis=2)
    exact = {}
    for a in (0, 1):
        exact[a] = np.linalg.solve(np.eye(5) - gamma * P[:, a, :], r[:, a])
        policy = np.zeros((5, 2))
        policy[:, a] = 1.0
        np.testing.assert_allclose(env.policy_values(policy), exact[a], rtol=1e-12)
    # The optimal values are the best of the 2^5 deterministic stationary policies, each solved
    # exactly; value iteration must reach them.
    best = np.full(5, -np.inf)
    for actions in itertools.product((0, 1), repeat=5):
        rows = np.arange(5), np.array(actions)
        best = np.maximum(best, np.linalg.solve(np.eye(5) - gamma * P[rows], r[rows]))
    np.testing.assert_allclose(env.optimal_values(), best, rtol=1e-8)
    # Walking the chain is optimal from every state at gamma 0.99; at 0.5 going back for the sure 2
    # is better from the start.
    if gamma == 0.99:
        assert np.all(exact[0] > exact[1])
    if gamma == 0.5:
        assert exact[1][0] > exact[0][0]
