"""Finite environments: the named test MDPs against exact values, stepping, and gymnasium."""

from __future__ import annotations

import numpy as np
import pytest

import bbrl
from bbrl import envs


def uniform(env: envs.FiniteEnv) -> np.ndarray:
    return np.full((env.n_states, env.n_actions), 1.0 / env.n_actions)


def test_six_arms_values() -> None:
    # Exact values (linear solve) of the uniform policy and the optimal values, at gamma 0.95.
    env = envs.six_arms(0.95)
    expected = [415.9021822, 516.0856585, 417.5317555, 450.6010624, 549.6109634, 719.9079931, 1579.3139337]
    assert np.allclose(env.policy_values(uniform(env)), expected, rtol=0, atol=1e-6)
    optimal = env.optimal_values()
    assert np.allclose(optimal[[0, 1, 5, 6]], [19159.66387, 18201.68067, 33200.0, 120000.0], atol=1e-4)
    assert env.reward_bounds == (0.0, 6000.0) and env.time_limit is None


def test_river_swim_values() -> None:
    osband = envs.river_swim("osband")
    assert (osband.discount, osband.time_limit) == (1.0, 20)
    v = osband.policy_values(uniform(osband))
    assert v[0] == pytest.approx(0.043789023137, abs=1e-12)
    assert osband.optimal_values()[0] == pytest.approx(3.397263959151, abs=1e-11)
    strehl = envs.river_swim("strehl", 0.95)
    expected = [51.1147189889, 51.5058484586, 71.0122173772, 167.4521375792, 579.8203143128, 2295.282686656]
    assert np.allclose(strehl.policy_values(uniform(strehl)), expected, atol=1e-8)
    assert np.allclose(strehl.optimal_values()[[0, 5]], [6137.93146, 16795.55903], atol=1e-4)


def test_stepping_follows_the_tables() -> None:
    env = envs.river_swim("strehl")
    starts = np.array([env.reset(seed=s) for s in range(4000)])
    # Start in 1 or 2 with probability 1/2 each: a Binomial(4000, 1/2) count, 5 standard deviations.
    assert set(starts) == {1, 2} and abs((starts == 1).sum() - 2000) < 5 * np.sqrt(1000)
    env.reset(seed=0)
    counts = np.zeros(6)
    for _ in range(20_000):
        env._core.reset(None, 0)  # keep the stream, restart the episode
        while env.state != 3:
            env.step(1)
        s2, r, terminal, truncated = env.step(1)
        counts[s2] += 1
        assert r == 0.0 and not terminal and not truncated
    p = env.transitions[3, 1]
    assert np.all(np.abs(counts / 20_000 - p) <= 5 * np.sqrt(p * (1 - p) / 20_000) + 1e-12)


def test_time_limit_truncates_and_seeds_reproduce() -> None:
    env = envs.river_swim("osband")
    env.reset(seed=3)
    flags = [env.step(1)[3] for _ in range(20)]
    assert flags == [False] * 19 + [True]
    a = [env.reset(seed=5)] + [env.step(1)[0] for _ in range(30)]
    b = [env.reset(seed=5)] + [env.step(1)[0] for _ in range(30)]
    assert a == b


@pytest.mark.parametrize(
    ("factory", "error", "match"),
    [
        (lambda: envs.river_swim("nope"), ValueError, "variant must be 'osband' or 'strehl'"),
        (lambda: envs.six_arms(1.5), ValueError, r"option .discount. must be in \[0, 1\], got 1.5"),
        (lambda: envs.FiniteEnv(np.ones((1, 1, 1)), np.zeros((1, 1, 1)), [1.0], 1.0), ValueError, "needs a time limit"),
        (lambda: envs.FiniteEnv(np.ones((2, 1, 2)) / 2, np.zeros((2, 1, 2)), [0.3, 0.3], 0.9), ValueError, "start"),
        (lambda: envs.FiniteEnv(np.ones((2, 1, 2)), np.zeros((2, 1, 2)), [1, 0], 0.9), ValueError, "sums to 2"),
        (lambda: envs.six_arms().step(0), ValueError, r"reset\(\) must be called"),
        (lambda: envs.six_arms().reset(seed=-1), ValueError, "seed must be"),
    ],
)
def test_bad_input(factory, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        factory()


def test_a_start_state_given_for_the_start_law_is_named_as_such() -> None:
    # Before: "start must have shape (2,), got (1,)", which did not say that start is a law.
    P, R = np.full((2, 2, 2), 0.5), np.zeros((2, 2, 2))
    with pytest.raises(ValueError, match=r"^start is the start law, a probability vector over the 2 states") as raised:
        envs.FiniteEnv(P, R, 5, 0.95, 10)
    assert "got a single value 5" in str(raised.value) and "numpy.eye(2)[s]" in str(raised.value)
    with pytest.raises(ValueError, match=r"got shape \(3,\)"):
        envs.FiniteEnv(P, R, [1.0, 0.0, 0.0], 0.95, 10)
    assert envs.FiniteEnv(P, R, np.eye(2)[1], 0.95, 10).n_states == 2  # what the message advises works


def test_an_episode_on_a_test_mdp_is_the_protocols() -> None:
    """Test MDP i of an experiment, its environment stream and the agent's stream: stepping the
    stepper by hand gives the experiment's return bit for bit (the protocol runs on the seam)."""
    exp = bbrl.Experiment("GDL", n_mdps=3, gamma=0.95, horizon=60, seed=4)
    run = exp.run(bbrl.agents.BEB(1.0), prior="UGDL")
    for i in range(3):
        env = envs.from_distribution("GDL", seed=4, index=i)
        assert np.array_equal(env.transitions, exp.transitions(i))
        h = bbrl.Stepper(bbrl.agents.BEB(1.0), prior="UGDL", gamma=0.95, horizon=60, seed=4, index=i)
        s, total, discount = env.reset(seed=4, index=i), 0.0, 1.0
        for _ in range(60):
            a = h.act(s)
            s2, r, *_ = env.step(a)
            h.observe(s, a, r, s2)
            total, discount, s = total + discount * r, discount * 0.95, s2
        assert total == run.returns[i]


gymnasium = pytest.importorskip("gymnasium")


GYM_IDS = ["bbrl/GC-v0", "bbrl/GDL-v0", "bbrl/Grid-v0", "bbrl/SixArms-v0", "bbrl/RiverSwim-v0"]


@pytest.mark.parametrize("env_id", GYM_IDS)
def test_gymnasium_environments_pass_the_checker(env_id: str) -> None:
    from gymnasium.utils.env_checker import check_env

    import bbrl.gym  # noqa: F401 - registers the environments

    env = gymnasium.make(env_id)
    check_env(env.unwrapped)
    s, _ = env.reset(seed=1)
    assert env.observation_space.contains(s)


def test_gymnasium_distribution_envs_draw_mdps_and_fix_one() -> None:
    import bbrl.gym

    env = gymnasium.make("bbrl/GC-v0").unwrapped
    env.reset(seed=1)
    first = env.env.transitions
    env.reset(seed=2)
    assert not np.array_equal(first, env.env.transitions)
    _, info = env.reset(options={"mdp_index": 2})
    assert info == {"mdp_index": 2}
    exp = bbrl.Experiment("GC", n_mdps=3, seed=0)
    assert np.array_equal(env.env.transitions, exp.transitions(2))
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"mdp": 1})
    strehl = gymnasium.make("bbrl/RiverSwim-v0", variant="strehl").unwrapped
    assert strehl.env.name == "RiverSwim-Strehl"


@pytest.mark.parametrize(
    ("action", "error", "match"),
    [
        (-1, ValueError, r"^action -1 is out of range: allowed 0 to 5$"),
        (6, ValueError, r"^action 6 is out of range: allowed 0 to 5$"),
        (1.5, TypeError, r"^action must be an int from 0 to 5, got 1\.5 \(float\)$"),
        (True, TypeError, r"^action must be an int from 0 to 5, got True \(bool\)$"),
        (np.float64(2.0), TypeError, r"action must be an int from 0 to 5, got"),
        (np.bool_(True), TypeError, r"action must be an int from 0 to 5, got"),
        ("1", TypeError, r"action must be an int from 0 to 5, got '1' \(str\)"),
    ],
)
def test_a_bad_action_is_named_with_the_allowed_range(action, error, match) -> None:  # type: ignore[no-untyped-def]
    """One line naming the action and the range, from bbrl.envs and from gymnasium: not an
    OverflowError for -1, and never a silent int() of 1.5 or True."""
    import bbrl.gym  # noqa: F401 - registers the environments

    env = envs.six_arms()
    env.reset(seed=0)
    with pytest.raises(error, match=match):
        env.step(action)
    assert env.state == 0 and env.step(np.int64(1))[0] in (0, 2)  # refused steps change nothing
    gym_env = gymnasium.make("bbrl/SixArms-v0").unwrapped
    gym_env.reset(seed=0)
    with pytest.raises(error, match=match):
        gym_env.step(action)
    assert gym_env.step(np.array(3))[0] in (0, 4)  # a 0-d integer array is an action


def test_rewards_of_another_shape_than_the_transitions_are_named() -> None:
    P = np.full((3, 2, 3), 1 / 3)
    with pytest.raises(
        ValueError, match=r"^rewards must have shape \(S, A, S\) = \(3, 2, 3\), as the transitions; got \(3, 2\)$"
    ):
        envs.FiniteEnv(P, np.zeros((3, 2)), [1, 0, 0], 0.9)
