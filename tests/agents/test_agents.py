"""Agent parameters, the stepping handle, probabilities, snapshots and the training setting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bbrl
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
    assert {e["kind"] for e in _core.agent_kinds()} == set(agents.kinds())


def _trained(spec: agents.AgentSpec, name: str = "GC", seed: int = 0) -> bbrl.Stepper:
    return bbrl.Stepper(spec, prior=name, gamma=0.95, horizon=250, seed=seed)


@pytest.mark.parametrize("spec", BUILT_INS, ids=lambda s: s.label)
def test_probabilities_sum_to_one_and_snapshot_has_identical_future(spec: agents.AgentSpec) -> None:
    agent = _trained(spec, seed=5)
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
    snapshot = agent.snapshot()
    future = [agent.act(s) for s in range(5)]
    agent.restore(snapshot)
    assert [agent.act(s) for s in range(5)] == future
    twin = agent.fork(seed=5)
    twin.restore(snapshot)
    assert [twin.act(s) for s in range(5)] == future


@pytest.mark.parametrize("spec", BUILT_INS, ids=lambda s: s.label)
def test_deterministic_for_a_seed(spec: agents.AgentSpec) -> None:
    n = 200

    def actions(seed: int) -> list[int]:
        agent = _trained(spec, seed=seed)
        return [agent.act(s % 5) for s in range(n)]

    assert actions(9) == actions(9)
    # Another seed draws independently from the same probabilities (nothing is observed, so they do
    # not move): the two sequences disagree at step t with probability 1 - sum_a p(a | s_t)^2, never
    # for a deterministic policy, 2/3 of the time for a uniform one over 3 actions.
    agent = _trained(spec, seed=9)
    disagree = np.array([1.0 - np.sum(agent.action_probabilities(s % 5) ** 2) for s in range(n)])
    mismatches = sum(a != b for a, b in zip(actions(9), actions(10), strict=True))
    expected, sd = disagree.sum(), np.sqrt(np.sum(disagree * (1.0 - disagree)))
    assert abs(mismatches - expected) <= 4 * sd + 1e-9, (mismatches, expected, sd)
    assert (mismatches > 0) == (expected > 0.5)  # a stochastic policy: another seed, another sequence


def test_empirical_frequencies_match_probabilities() -> None:
    agent = _trained(agents.SoftMax(tau=5.0))
    agent.observe(0, 1, 0.0, 1)
    p = agent.action_probabilities(0)
    n = 20_000
    counts = np.bincount([agent.act(0) for _ in range(n)], minlength=3)
    # 5 standard errors of each frequency (a Binomial(n, p) count).
    assert np.all(np.abs(counts / n - p) < 5 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_stepper_errors() -> None:
    agent = _trained(agents.EGreedy(0.1))
    with pytest.raises(ValueError, match="state 7 is out of range"):
        agent.act(7)
    with pytest.raises(ValueError, match="action 3 is out of range"):
        agent.observe(0, 3, 0.0, 1)
    with pytest.raises(ValueError, match="reward NaN is not finite"):
        agent.observe(0, 1, float("nan"), 1)
    with pytest.raises(TypeError, match="state must be an int"):
        agent.act(1.0)
    with pytest.raises(ValueError, match="must be trained: pass the prior"):
        bbrl.Stepper(agents.Random())
    with pytest.raises(TypeError, match="restore needs a Snapshot"):
        agent.restore("snapshot")


def test_start_task_forgets_and_start_episode_keeps() -> None:
    """e-Greedy's probabilities depend only on its counts: a new task gives the fresh ones back,
    a new episode keeps what was learned."""
    agent = _trained(agents.EGreedy(0.0))
    fresh = agent.action_probabilities(0)
    for _ in range(30):
        agent.observe(0, int(np.argmax(fresh)), 0.0, 4)  # the greedy action leads nowhere good
    learned = agent.action_probabilities(0)
    assert not np.array_equal(fresh, learned)
    agent.start_episode(0)
    assert np.array_equal(agent.action_probabilities(0), learned)
    agent.start_task()
    assert np.array_equal(agent.action_probabilities(0), fresh)


def test_trained_agents_carry_their_setting_and_pickle() -> None:
    import pickle

    trained = agents.EGreedy(0.1).train("UGC", gamma=0.9, horizon=40, seed=3)
    assert trained.training == {"prior": "UGC", "gamma": 0.9, "horizon": 40, "seed": 3}
    exp = bbrl.Experiment("GC", n_mdps=4, gamma=0.95, horizon=40, seed=0)
    with pytest.raises(ValueError, match=r"trained with gamma = 0.9, but this run uses gamma = 0.95"):
        exp.run(trained)
    run = exp.run(trained, allow_transfer=True)
    assert run.training == trained.training
    back = pickle.loads(pickle.dumps(trained))
    assert back.training == trained.training and back.label == trained.label
    again = bbrl.Experiment("GC", n_mdps=4, gamma=0.9, horizon=40, seed=3)
    assert np.array_equal(again.run(back).returns, again.run(trained).returns)
    with pytest.raises(ValueError, match="trained with horizon = 40"):
        bbrl.Stepper(trained, horizon=50)


@given(epsilon=st.floats(0.0, 1.0), state=st.integers(0, 4))
def test_egreedy_probabilities(epsilon: float, state: int) -> None:
    agent = _trained(agents.EGreedy(epsilon))
    p = agent.action_probabilities(state)
    assert p.sum() == pytest.approx(1.0)
    assert p.min() >= epsilon / 3 - 1e-12


def test_missing_parameters_are_only_the_required_ones() -> None:
    """OPPS-DS has defaults for c and compat: only formula_set and n_draws are missing."""
    assert [p["name"] for p in agents.spec("oppsds")["params"] if not p["required"]] == ["c", "compat"]
    with pytest.raises(ValueError, match=r"^agent 'oppsds' needs parameter\(s\) formula_set, n_draws \(no default\)$"):
        agents.create("oppsds", {})
    with pytest.raises(ValueError, match=r"^agent 'oppsds' needs parameter\(s\) n_draws \(no default\)$"):
        agents.create("OPPS-DS", {"formula_set": 2, "c": 1.0})
