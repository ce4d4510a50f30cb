"""Agent parameters, the hand-stepping interface, probabilities and cloning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bbrl import _core, agents, distributions

BUILT_INS = [
    agents.Random(),
    agents.EGreedy(0.1),
    agents.SoftMax(0.5),
    agents.SoftMax(2.0, compat=True),
    agents.BEB(1.0),
]


@pytest.mark.parametrize(
    ("factory", "error", "match"),
    [
        (lambda: agents.EGreedy(-0.1), ValueError, "epsilon must be in"),
        (lambda: agents.EGreedy(1.5), ValueError, "epsilon must be in"),
        (lambda: agents.EGreedy(float("nan")), ValueError, "epsilon must be finite"),
        (lambda: agents.EGreedy("0.1"), TypeError, "epsilon must be a number"),
        (lambda: agents.SoftMax(0.0), ValueError, "tau must be > 0"),
        (lambda: agents.SoftMax(-1.0), ValueError, "tau must be > 0"),
        (lambda: agents.SoftMax(1.0, compat=1), TypeError, "compat"),
        (lambda: agents.BEB(-0.5), ValueError, "beta must be >= 0"),
        (lambda: agents.BEB(float("inf")), ValueError, "beta must be finite"),
        (lambda: agents.create("nope"), ValueError, "unknown agent 'nope'"),
        (lambda: agents.create("egreedy", {"eps": 0.1}), ValueError, "no parameter"),
        (lambda: agents.create("egreedy", {}), ValueError, "needs parameter"),
    ],
)
def test_bad_parameters(factory, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        factory()


def test_core_rejects_bad_parameters_too() -> None:
    with pytest.raises(ValueError, match="epsilon"):
        _core.Agent("egreedy", {"epsilon": 2.0})
    with pytest.raises(TypeError, match="must be a bool, int, float or str"):
        _core.Agent("egreedy", {"epsilon": [0.1]})


def test_labels_and_create() -> None:
    assert agents.create("e-greedy", {"epsilon": 0.1}) == agents.EGreedy(0.1)
    assert agents.BEB(2.5, compat=True).label == "BEB (beta=2.5, compat=True)"
    assert agents.Random().label == "Random"
    assert set(agents.kinds()) >= {"random", "egreedy", "softmax", "beb"}
    assert {k for k, _ in _core.agent_kinds()} >= set(agents.kinds())


def _trained(spec: agents.AgentSpec, name: str = "GC") -> _core.Agent:
    agent = spec._build()
    agent.learn_offline(distributions.get(name)._core, 0.95, 250, 0)
    return agent


@pytest.mark.parametrize("spec", BUILT_INS, ids=lambda s: s.label)
def test_probabilities_sum_to_one_and_clone_has_identical_future(spec: agents.AgentSpec) -> None:
    agent = _trained(spec)
    agent.reset(5)
    mdp = distributions.get("GC").sample(3)
    rng = np.random.default_rng(0)
    state = 0
    for _ in range(20):
        p = agent.action_probabilities(state)
        assert p.shape == (3,) and np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-12)
        action = agent.act(state)
        assert 0 <= action < 3 and p[action] > 0
        nxt = int(rng.choice(5, p=mdp[state, action]))
        agent.observe(state, action, 0.0, nxt)
        state = nxt
    twin = agent.copy()
    future = [agent.act(s) for s in range(5)]
    assert [twin.act(s) for s in range(5)] == future


@pytest.mark.parametrize("spec", BUILT_INS, ids=lambda s: s.label)
def test_deterministic_for_a_seed(spec: agents.AgentSpec) -> None:
    def actions() -> list[int]:
        agent = _trained(spec)
        agent.reset(9)
        return [agent.act(s % 5) for s in range(30)]

    assert actions() == actions()


def test_empirical_frequencies_match_probabilities() -> None:
    agent = _trained(agents.SoftMax(tau=5.0))
    agent.reset(0)
    agent.observe(0, 1, 0.0, 1)
    p = agent.action_probabilities(0)
    n = 20_000
    twin = agent.copy()
    counts = np.bincount([twin.act(0) for _ in range(n)], minlength=3)
    # 5 standard errors of each frequency.
    assert np.all(np.abs(counts / n - p) < 5 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_hand_stepping_errors() -> None:
    untrained = agents.Random()._build()
    with pytest.raises(ValueError, match="not learned offline"):
        untrained.act(0)
    agent = _trained(agents.EGreedy(0.1))
    agent.reset(0)
    with pytest.raises(ValueError, match="state 7 is out of range"):
        agent.act(7)
    with pytest.raises(ValueError, match="action 3 is out of range"):
        agent.observe(0, 3, 0.0, 1)


@given(epsilon=st.floats(0.0, 1.0), state=st.integers(0, 4))
def test_egreedy_probabilities(epsilon: float, state: int) -> None:
    agent = _trained(agents.EGreedy(epsilon))
    agent.reset(0)
    p = agent.action_probabilities(state)
    assert p.sum() == pytest.approx(1.0)
    assert p.min() >= epsilon / 3 - 1e-12
