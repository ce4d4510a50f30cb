"""Environments, policies, Algorithm 1's references, CMAPVE against them, and the learners."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bbrl import envs
from bbrl import value_error as ve


def random_mdp(seed: int, S: int = 5, A: int = 2):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(S, 0.5), size=(S, A))
    R = rng.uniform(0.0, 1.0, size=(S, A, S))
    pi = rng.dirichlet(np.ones(A), size=S)
    return P, R, pi


def exact_discounted(P, R, pi, gamma):
    """v = (I - gamma P_pi)^-1 r_pi by a linear solve."""
    P_pi = np.einsum("sa,sat->st", pi, P)
    r_pi = np.einsum("sa,sat,sat->s", pi, P, R)
    return np.linalg.solve(np.eye(len(r_pi)) - gamma * P_pi, r_pi)


def exact_horizon(P, R, pi, horizon):
    """Undiscounted value over `horizon` steps by backward recursion."""
    P_pi = np.einsum("sa,sat->st", pi, P)
    r_pi = np.einsum("sa,sat,sat->s", pi, P, R)
    v = np.zeros(len(r_pi))
    for _ in range(horizon):
        v = r_pi + P_pi @ v
    return v


def test_references_match_exact_values_on_a_discounted_mdp():
    P, R, pi = random_mdp(0)
    gamma, tau = 0.9, 1.0
    env = ve.finite_mdp(P, R, np.full(5, 0.2), gamma)
    refs = ve.reference_values(env, ve.tabular_policy(pi), np.arange(5), epsilon=0.2, delta=0.1, tau=tau, c=1.0)
    exact = exact_discounted(P, R, pi, gamma)
    eps_bar = refs.params["eps_bar"]
    assert refs.certified and refs.m == 5
    # Truncation (Lemma 5) and sampling (EBGStop) each cost eps_bar relative to |v| + tau (the
    # second relative to the truncated value, at most (1 + eps_bar) times larger): with
    # probability >= 1 - delta every state is within eps_bar (2 + eps_bar)(|v| + tau).
    assert np.all(np.abs(refs.values - exact) <= eps_bar * (2 + eps_bar) * (np.abs(exact) + tau))
    # ... and so well within the target epsilon.
    assert np.all(np.abs(refs.values - exact) <= 0.2 * (np.abs(exact) + tau))


def test_references_match_exact_values_over_a_horizon_undiscounted():
    P, R, pi = random_mdp(1, S=4, A=3)
    env = ve.finite_mdp(P, R, np.full(4, 0.25), discount=1.0, time_limit=10)
    refs = ve.reference_values(env, ve.tabular_policy(pi), np.arange(4), epsilon=0.3, delta=0.1, tau=1.0, c=1.0)
    exact = exact_horizon(P, R, pi, 10)
    assert refs.params["rollout_length"] == 10
    eps_bar = refs.params["eps_bar"]
    assert np.all(np.abs(refs.values - exact) <= eps_bar * (np.abs(exact) + 1.0))  # no truncation error here


def test_uniform_policy_on_a_finite_mdp_and_the_state_count_of_algorithm_one():
    P, R, _ = random_mdp(2, S=3, A=2)
    env = ve.finite_mdp(P, R, np.array([1.0, 0.0, 0.0]), 0.8)
    refs = ve.reference_values(env, ve.uniform_policy(2), None, epsilon=0.5, delta=0.2, tau=1.0, c=0.5, k=3)
    assert refs.m == ve.sample_size(0.5, 0.2, 0.5, 3)
    exact = exact_discounted(P, R, np.full((3, 2), 0.5), 0.8)
    eps_bar = refs.params["eps_bar"]
    err = np.abs(refs.values - exact[refs.states])
    assert np.all(err <= eps_bar * (2 + eps_bar) * (np.abs(exact[refs.states]) + 1.0))


def test_references_are_identical_whatever_the_thread_count(tmp_path):
    script = (
        "from bbrl import value_error as ve\n"
        "env, pol = ve.paper_setup('mountain-car')\n"
        "r = ve.reference_values(env, pol, 6, epsilon=0.3, delta=0.1, seed=4)\n"
        "print(repr(r.values.tolist()), repr(r.n_samples.tolist()))\n"
    )
    outputs = []
    for threads in ("1", "2", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]


def test_parquet_round_trip_keeps_every_parameter(tmp_path):
    env, pol = ve.paper_setup("mountain-car")
    refs = ve.reference_values(env, pol, 4, epsilon=0.3, delta=0.1, c=2.0, k=7, seed=3, bets="anytime")
    path = refs.save(tmp_path / "refs.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["refs.parquet"]  # no temporary file left
    back = ve.References.load(path)
    np.testing.assert_array_equal(back.states, refs.states)
    np.testing.assert_array_equal(back.values, refs.values)
    assert back.reasons == refs.reasons
    keys = ["epsilon", "delta", "tau", "c", "k", "split", "bets", "variant", "beta", "p", "max_samples", "seed"]
    keys += ["eps_bar", "rollout_length", "value_range", "guaranteed_error", "env_kind", "policy_random_share"]
    for key in keys:
        assert back.params[key] == refs.params[key], key
    assert back.params["bets"] == "anytime"
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(Exception):  # noqa: B017 - polars' own error type for a corrupt file
        ve.References.load(tmp_path / "bad.parquet")


def test_cmapve_against_references_and_its_bound():
    P, R, pi = random_mdp(0)
    env = ve.finite_mdp(P, R, np.full(5, 0.2), 0.9)
    refs = ve.reference_values(env, ve.tabular_policy(pi), np.arange(5), epsilon=0.2, delta=0.1, c=1.0, k=10)
    assert ve.cmapve(refs.values, refs).estimate == 0.0
    off = ve.cmapve(refs.values * 1.1, refs)
    expected = np.mean(np.minimum(1.0, 0.1 * np.abs(refs.values) / (np.abs(refs.values) + 1.0)))
    assert off.estimate == pytest.approx(expected, rel=1e-12)
    eb = refs.params["eps_bar"]
    bound = math.sqrt(math.log(4 * 10 / 0.1) / (2 * 5)) + eb * (2 + eb) + (1 - (1 + eb) ** -2)
    assert off.bound == pytest.approx(bound, rel=1e-12)
    assert ve.cmapve(lambda s: refs.values[s] * 1.1, refs).estimate == off.estimate  # a callable v_hat
    with pytest.raises(ValueError, match="5 reference states"):
        ve.cmapve(np.zeros(3), refs)


def test_a_capped_reference_voids_the_bound():
    env, pol = ve.paper_setup("mountain-car")
    refs = ve.reference_values(env, pol, 3, epsilon=0.1, delta=0.1, max_samples=5)
    assert not refs.certified and set(refs.reasons) == {"cap"}
    assert ve.cmapve(refs.values, refs).bound == math.inf


def test_bad_pairings_and_inputs_are_clear_errors():
    mc, pump = ve.paper_setup("mountain-car")
    pw, uni4 = ve.paper_setup("puddle-world")
    with pytest.raises(ValueError, match="does not apply"):
        ve.reference_values(pw, pump, 2)
    with pytest.raises(ValueError, match="actions"):
        ve.reference_values(mc, uni4, 2)
    with pytest.raises(ValueError, match=r"\(m, 2\)"):
        ve.reference_values(mc, pump, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="tau = 0"):
        ve.reference_values(mc, pump, 2, tau=0.0)
    P, R, pi = random_mdp(0)
    env = ve.finite_mdp(P, R, np.full(5, 0.2), 0.9)
    with pytest.raises(ValueError, match="covers 2 states"):
        ve.reference_values(env, ve.tabular_policy(pi[:2]), np.arange(2))
    with pytest.raises(ValueError, match="out of range"):
        ve.reference_values(env, ve.tabular_policy(pi), np.array([7]))
    with pytest.raises(ValueError, match="sum to 1"):
        ve.tabular_policy(np.full((5, 2), 0.3))
    with pytest.raises(ValueError, match="discount"):
        ve.mountain_car(discount=1.5)
    with pytest.raises(ValueError, match=r"max_rollout_steps \(500\) caps rollouts that run to termination"):
        ve.reference_values(mc, pump, 2, max_rollout_steps=500)
    with pytest.raises(ValueError, match="max_rollout_steps must be an int >= 1"):
        ve.reference_values(ve.mountain_car(1.0), pump, 2, max_rollout_steps=0)
    with pytest.raises(ValueError, match="accept_truncated applies to rollouts that run to termination"):
        ve.reference_values(mc, pump, 2, accept_truncated=True)
    with pytest.raises(TypeError, match="accept_truncated must be a bool"):
        ve.reference_values(ve.mountain_car(1.0), pump, 2, accept_truncated="yes")
    with pytest.raises(ValueError, match="action must be an int >= 0"):
        ve.constant_policy(-1, 3)
    with pytest.raises(ValueError, match="allowed 0 to 2"):
        ve.constant_policy(3, 3)
    with pytest.raises(ValueError, match="random_share"):
        ve.energy_pumping(1.5)
    with pytest.raises(ValueError, match="split"):
        ve.reference_values(mc, pump, 2, split="half")


# --- the continuous domains against independent Monte-Carlo estimates ---------------------------


@pytest.mark.parametrize(
    ("state", "value", "sd"),
    [((-0.5, 0.0), -93.048, 0.010), ((0.3, 0.03), -7.7589, 0.0015), ((-1.0, 0.0), -76.273, 0.023)],
)
def test_mountain_car_values_agree_with_published_estimates(state, value, sd):
    # Independent estimates (1e5 rollouts each) for the 60%-random energy-pumping policy at gamma 0.99;
    # ours from 20000 returns truncated at 1000 steps (tail weight 0.99^1000 * 100 < 0.005): the
    # two must agree within 4 combined standard errors.
    env, pol = ve.paper_setup("mountain-car")
    returns, _ = ve.sample_returns(env, pol, state, 20_000, 1000, seed=1)
    se = returns.std() / math.sqrt(len(returns))
    assert abs(returns.mean() - value) <= 4 * math.hypot(se, sd) + 0.005


@pytest.mark.parametrize(("state", "value", "sd"), [((0.5, 0.5), -724.6, 2.2), ((0.9, 0.9), -166.4, 1.2)])
def test_puddle_world_values_agree_with_published_estimates(state, value, sd):
    env, pol = ve.paper_setup("puddle-world")
    returns, _ = ve.sample_returns(env, pol, state, 4000, 1194, seed=1)
    se = returns.std() / math.sqrt(len(returns))
    assert abs(returns.mean() - value) <= 4 * math.hypot(se, sd)


def test_sample_counts_are_in_the_papers_orders_of_magnitude():
    # Sajed et al. (fig. 1), tau = 1, delta = 0.1: at epsilon = 0.05 Mountain Car needs about 10^3
    # returns per state, Puddle World about 10^5 (median over states); we accept a factor 10 either
    # way of those orders, on 8 uniform states (a cheap check; docs/value-error.md has 100 states).
    mc, pump = ve.paper_setup("mountain-car")
    out = ve.state_values(mc, pump, mc.uniform_states(8, 0), epsilon=0.05, delta=0.1)
    assert 1e2 <= np.median(out.n_samples) <= 1e4
    pw, uni = ve.paper_setup("puddle-world")
    out = ve.state_values(pw, uni, pw.uniform_states(4, 0), epsilon=0.1, delta=0.1)
    # epsilon = 0.1 here to keep the test short: about a quarter of the samples at 0.05.
    assert 1e3 <= np.median(out.n_samples) <= 1e5


# --- learners ------------------------------------------------------------------------------------


def test_tabular_td_converges_to_exact_values():
    P, R, pi = random_mdp(5, S=4, A=2)
    env = ve.finite_mdp(P, R, np.full(4, 0.25), 0.8)
    curve = ve.td_lambda(
        env, ve.tabular_policy(pi), ve.one_hot(4), np.arange(4), alpha=0.005, lambda_=0.5, n_steps=400_000,
        eval_every=2000,
    )  # fmt: skip
    exact = exact_discounted(P, R, pi, 0.8)
    # Averaging the second half removes most of the constant-step-size fluctuation; rewards in
    # [0, 1] and gamma 0.8 keep it small (values near 2.5), so 3% is a safe margin.
    late = curve.predictions[len(curve.steps) // 2 :].mean(axis=0)
    np.testing.assert_allclose(late, exact, rtol=0.03)
    assert curve.predictions.shape == (201, 4) and curve.steps[-1] == 400_000


def test_linear_td_on_mountain_car_lowers_cmapve():
    env, pol = ve.paper_setup("mountain-car")
    refs = ve.reference_values(env, pol, 20, epsilon=0.3, delta=0.1, seed=2)
    lo, hi = ve.box_of(env)
    curve = ve.td_lambda(
        env, pol, ve.tile_coding(lo, hi, 8, 8), refs.states, alpha=0.1, lambda_=0.9, n_steps=200_000,
        eval_every=50_000,
    )  # fmt: skip
    errors = [r.estimate for r in curve.cmapve(refs)]
    # Before learning v_hat = 0, so each state's loss is |v| / (|v| + tau), below c = 1.
    assert errors[0] == pytest.approx(np.mean(np.abs(refs.values) / (np.abs(refs.values) + 1.0)), rel=1e-12)
    assert errors[-1] < 0.5 * errors[0]
    with pytest.raises(ValueError, match="features"):
        ve.td_lambda(env, pol, ve.one_hot(3), refs.states)


def test_bbrl_finite_envs_are_accepted_and_match_their_exact_values():
    river = envs.river_swim("osband")  # 20 undiscounted steps: values are over that horizon
    pi = np.full((6, 2), 0.5)
    refs = ve.reference_values(river, ve.tabular_policy(pi), np.arange(6), epsilon=0.3, delta=0.1, tau=1.0)
    exact = river.policy_values(pi)
    # Published: the uniform policy's value from state 0 is 0.043789023137.
    assert exact[0] == pytest.approx(0.043789023137, rel=1e-9)
    assert refs.params["rollout_length"] == 20
    assert np.all(np.abs(refs.values - exact) <= refs.params["eps_bar"] * (np.abs(exact) + 1.0))
    curve = ve.td_lambda(river, ve.uniform_policy(2), ve.one_hot(6), np.arange(6), n_steps=1000, eval_every=500)
    assert curve.predictions.shape == (3, 6)
    with pytest.raises(TypeError, match="FiniteEnv"):
        ve.reference_values("six-arms", ve.uniform_policy(6), np.arange(2))


def test_finite_mdp_and_a_finite_env_of_the_same_tables_give_the_same_references():
    P, R, pi = random_mdp(3, S=4, A=2)
    start = np.full(4, 0.25)
    args = dict(epsilon=0.3, delta=0.1, tau=1.0, seed=5)
    from_tables = ve.reference_values(ve.finite_mdp(P, R, start, 0.9), ve.tabular_policy(pi), np.arange(4), **args)
    env = envs.FiniteEnv(P, R, start, 0.9, name="finite")
    from_env = ve.reference_values(env, ve.tabular_policy(pi), np.arange(4), **args)
    assert np.array_equal(from_tables.values, from_env.values)
    env_params = ("env_kind", "env_name", "env_discount", "env_time_limit")
    assert [from_tables.params[k] for k in env_params] == [from_env.params[k] for k in env_params]


@pytest.mark.parametrize(
    ("P", "R", "start", "named"),
    [
        (np.ones((2, 2)), np.zeros((2, 1, 2)), [1.0, 0.0], "transitions must have shape (S, A, S)"),
        (np.full((2, 1, 2), 0.5), np.zeros((2, 2, 2)), [1.0, 0.0], "rewards must have shape (S, A, S) = (2, 1, 2)"),
        (
            np.full((2, 1, 2), 0.5),
            np.zeros((2, 1, 2)),
            [1.0, 0.0, 0.0],
            "start is the start law, a probability vector over the 2 states (shape (2,)), got shape (3,)",
        ),
    ],
)
def test_finite_mdp_names_a_table_of_the_wrong_shape(P, R, start, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        ve.finite_mdp(P, R, start, 0.9)


def test_references_do_not_depend_on_the_thread_count():
    env, policy = ve.paper_setup("MountainCar")
    runs = [
        ve.reference_values(env, policy, states=6, epsilon=0.3, delta=0.2, tau=1.0, c=1.0, seed=4, threads=t)
        for t in (1, 2, None)
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.values, runs[0].values)
        np.testing.assert_array_equal(other.n_samples, runs[0].n_samples)
    with pytest.raises(ValueError, match="threads"):
        ve.reference_values(env, policy, states=2, epsilon=0.3, delta=0.2, threads=0)


@pytest.mark.parametrize(
    ("name", "state", "match"),
    [
        ("mountain-car", [0.7, 0.0], r"allowed position from -1\.2 to 0\.5, velocity from -0\.07 to 0\.07"),
        ("mountain-car", [-0.5, 0.2], r"state \[-0\.5, 0\.2\] is outside MountainCar's state box"),
        ("mountain-car", [-1.3, 0.0], r"position from -1\.2 to 0\.5"),
        ("puddle-world", [0.5, 1.5], r"outside PuddleWorld's state box: allowed x from 0 to 1, y from 0 to 1"),
    ],
)
def test_states_outside_the_box_are_refused_naming_the_bounds(name, state, match):
    env, policy = ve.paper_setup(name)
    with pytest.raises(ValueError, match=match):
        ve.reference_values(env, policy, np.array([[-0.5, 0.0], state]), max_samples=5)
    corners = np.array([[-1.2, -0.07], [0.5, 0.07]]) if name == "mountain-car" else np.array([[0.0, 0.0], [0.9, 1.0]])
    assert ve.reference_values(env, policy, corners, max_samples=5).m == 2  # the bounds themselves are in


def test_finite_mdp_with_s_a_rewards_names_the_expected_shape():
    P, R, _ = random_mdp(0)
    with pytest.raises(
        ValueError, match=r"^rewards must have shape \(S, A, S\) = \(5, 2, 5\), as the transitions; got \(5, 2\)$"
    ):
        ve.finite_mdp(P, R[:, :, 0], np.full(5, 0.2), 0.9)


def test_references_are_not_saved_as_parquet_under_another_suffix(tmp_path):
    env, policy = ve.paper_setup("mountain-car")
    refs = ve.reference_values(env, policy, 2, max_samples=5)
    with pytest.raises(
        ValueError, match=r"x\.csv: a references file is written as Parquet; give a \.parquet file name"
    ):
        refs.save(tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
    assert ve.References.load(refs.save(tmp_path / "refs.parquet")).m == 2


def test_undiscounted_mountain_car_runs_to_termination_and_reports_cut_rollouts():
    # gamma = 1 with a time limit as a cap: from (0.3, 0.03) episodes end within a few dozen steps,
    # so no rollout reaches a cap of 2000 and the value is the undiscounted return to termination
    # (-8.0427 +- 0.0016 by 10^5 rollouts).
    env, pump = ve.mountain_car(1.0, time_limit=2000), ve.energy_pumping(0.6)
    out = ve.state_values(env, pump, np.array([[0.3, 0.03]]), epsilon=0.05, delta=0.1)
    assert out.rollout_length == 2000 and out.n_cut[0] == 0
    assert abs(out.values[0] + 8.0427) <= 0.05 * (8.0427 + 1.0)
    # A cap of 5 steps from the valley floor cuts every rollout, and says so.
    short = ve.state_values(ve.mountain_car(1.0, time_limit=5), pump, np.array([[-0.5, 0.0]]), epsilon=0.1, delta=0.1)
    assert short.n_cut[0] == short.n_samples[0] and abs(short.values[0] + 5.0) <= 0.1 * (5.0 + 1.0)


# --- undiscounted episodic tasks: rollouts to termination -------------------------------------


def test_undiscounted_references_run_to_termination_and_match_long_monte_carlo_returns(tmp_path):
    # gamma = 1 and no time limit: each rollout runs until the car reaches the goal (at most 5000
    # steps), and the range is that of any return up to the cap.
    env, pump = ve.mountain_car(1.0), ve.energy_pumping(0.6)
    states = np.array([[0.3, 0.03], [-0.2, -0.05], [-0.5, 0.0]])
    refs = ve.reference_values(env, pump, states, epsilon=0.3, delta=0.1, tau=1.0, max_rollout_steps=5000, seed=4)
    p = refs.params
    assert p["to_termination"] and p["rollout_length"] == 5000 and p["max_rollout_steps"] == 5000
    assert (p["value_low"], p["value_range"]) == (-5000.0, 4999.0)
    assert refs.certified and refs.truncated_rollouts == 0
    eps_bar = p["eps_bar"]
    # Long Monte Carlo returns to termination (uncapped in practice: 10^6 steps), 20 000 per
    # state: the certified value is within eps_bar (|v| + tau) of the mean, up to 4 standard errors
    # of the latter (no truncation error here: every return is complete).
    for state, value in zip(states, refs.values, strict=True):
        returns, steps = ve.sample_returns(env, pump, state, 20_000, 1_000_000, seed=5)
        assert steps < 20_000 * 2000  # every return ended long before the cap
        mc, se = returns.mean(), returns.std() / math.sqrt(len(returns))
        assert abs(value - mc) <= eps_bar * (abs(mc) + 1.0) + 4 * se, (state, value, mc, se)
    # ... and agree with independent estimates (10^5 rollouts each) of the same returns.
    published = np.array([-8.0427, -85.74, -278.37])
    assert np.all(np.abs(refs.values - published) <= eps_bar * (np.abs(published) + 1.0) + 0.6)
    back = ve.References.load(refs.save(tmp_path / "refs.parquet"))
    assert back.params["to_termination"] and back.params["accept_truncated"] is False


def test_a_rollout_that_can_not_terminate_is_a_clear_error_naming_the_cap_and_the_count():
    # Without a push the car never leaves the valley floor (from (0.3, 0.03) it still coasts to
    # the goal): the default refuses, naming the cap and how many states had a capped rollout.
    env, still = ve.mountain_car(1.0), ve.constant_policy(1, 3)
    states = np.array([[-0.5, 0.0], [0.3, 0.03], [-0.9, 0.0]])
    with pytest.raises(ValueError, match=r"from 2 of 3 states reached max_rollout_steps = 1000 steps") as info:
        ve.reference_values(env, still, states, epsilon=0.3, max_rollout_steps=1000)
    assert "accept_truncated" in str(info.value) and "states[0] = [-0.5, 0.0]" in str(info.value)
    # Accepted, the certificate is for the return truncated at the cap, and the cut rollouts are counted.
    refs = ve.reference_values(env, still, states[:1], epsilon=0.3, max_rollout_steps=1000, accept_truncated=True)
    assert refs.certified and refs.truncated_rollouts == int(refs.n_samples[0]) > 0
    assert abs(refs.values[0] + 1000.0) <= refs.params["eps_bar"] * 1001.0
    # The same environment with a time limit is the finite-horizon task: no cap to refuse.
    limited = ve.reference_values(ve.mountain_car(1.0, time_limit=200), still, states[:1], epsilon=0.3)
    assert not limited.params["to_termination"] and abs(limited.values[0] + 200.0) <= 0.0375 * 201.0
