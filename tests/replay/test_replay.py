"""Replay evaluators from Python: the log's validation, the evaluators' exact properties, the
runs' reproducibility and the tail-accurate binomial weight (against scipy)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import bbrl
from bbrl import agents, replay

UNIFORM_SIX_ARMS = np.full((7, 6), 1 / 6)


@pytest.fixture(scope="module")
def six_arms_log() -> replay.Dataset:
    return replay.Dataset.collect("SixArms", UNIFORM_SIX_ARMS, 300, seed=3)


@pytest.fixture(scope="module")
def prior(six_arms_log: replay.Dataset):
    return six_arms_log.uniform_prior()


def small_frame(**changes) -> pl.DataFrame:
    """Two episodes of a 2-state, 2-action log: 0 -> 1 -> 0, then 0 -> 0."""
    columns = {
        "episode": [0, 0, 1],
        "t": [0, 1, 0],
        "state": [0, 1, 0],
        "action": [0, 1, 1],
        "reward": [0.0, 1.0, 0.5],
        "next_state": [1, 0, 0],
    }
    columns.update(changes)
    return pl.DataFrame(columns)


def test_binomial_survival_matches_scipy_far_in_the_tail():
    # The documented case: 1 - cdf gives 0 there, the survival function 6.503e-18.
    value = replay.binomial_survival(1000, 2.0**-20, 5)[0]
    assert value == pytest.approx(6.503e-18, rel=1e-3)
    assert value == pytest.approx(stats.binom.sf(4, 1000, 2.0**-20), rel=1e-9)
    for n, p in [(1, 0.5), (30, 0.3), (1000, 2.0**-20), (1000, 0.01), (5000, 0.5), (200, 0.99), (10**5, 1e-3)]:
        t = np.unique(np.linspace(0, n + 1, 60).astype(np.int64))
        expected = stats.binom.sf(t - 1, n, p)
        got = replay.binomial_survival(n, p, t)
        mask = expected > 1e-300
        np.testing.assert_allclose(got[mask], expected[mask], rtol=1e-9, atol=0)
        assert np.all(got[~mask] < 1e-290)


def test_a_log_is_validated_with_clear_errors():
    table = np.full((2, 2), 0.5)
    replay.Dataset(small_frame(), 2, 2, logging_policy=table)
    with pytest.raises(ValueError, match="lacks columns"):
        replay.Dataset(small_frame().drop("t"), 2, 2)
    with pytest.raises(ValueError, match="action 2 is out of range"):
        replay.Dataset(small_frame(action=[0, 2, 1]), 2, 2)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        replay.Dataset(small_frame(), 2, 2, logging_policy=[[1.5, -0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match="sum to"):
        replay.Dataset(small_frame(), 2, 2, logging_policy=[[0.5, 0.6], [0.5, 0.5]])
    with pytest.raises(ValueError, match="probability 0"):
        replay.Dataset(small_frame(), 2, 2, logging_policy=[[1.0, 0.0], [0.5, 0.5]])
    per_row = small_frame(p_0=[0.5, 0.5, 0.3], p_1=[0.5, 0.5, 0.7])
    with pytest.raises(ValueError, match="different logging probabilities"):
        replay.Dataset(per_row, 2, 2)
    assert replay.Dataset(per_row, 2, 2, stationary=False)._core.logging_kind == "per_row"
    with pytest.raises(ValueError, match=r"columns p_0 to p_1; missing"):
        replay.Dataset(small_frame(p_0=[0.5, 0.5, 0.5]), 2, 2)
    with pytest.raises(ValueError, match="starts in state 1"):
        replay.Dataset(small_frame(state=[1, 1, 0]), 2, 2)
    with pytest.raises(FileNotFoundError):
        replay.Dataset("nowhere.parquet", 2, 2)
    with pytest.raises(TypeError, match="integers"):
        replay.Dataset(small_frame(state=[0.0, 1.0, 0.0]), 2, 2)


def test_files_round_trip_and_a_trailing_partial_episode_is_dropped(tmp_path, six_arms_log, prior):
    path = six_arms_log.write_parquet(tmp_path / "log.parquet")
    back = replay.Dataset(path, 7, 6)
    assert back.n_rows == six_arms_log.n_rows
    # Read from p_* columns, the table is known in visited states only (NaN rows elsewhere).
    visited = np.unique(back.to_polars()["state"].to_numpy())
    np.testing.assert_array_equal(back.logging_policy[visited], UNIFORM_SIX_ARMS[visited])
    assert np.isnan(np.delete(back.logging_policy, visited, axis=0)).all()
    csv = tmp_path / "log.csv"
    six_arms_log.to_polars().head(5).write_csv(csv)
    # Five rows cut the log inside an episode (SixArms episodes under uniform logging are short,
    # but the fifth row's episode may not have returned yet): whatever is left over is dropped.
    partial = replay.Dataset(csv, 7, 6, logging_policy=UNIFORM_SIX_ARMS)
    complete, dropped, _ = partial._core.complete_episodes("start", 0)
    agent = agents.Random().train(prior)
    if dropped:
        with pytest.warns(UserWarning, match="incomplete"):
            replay.evaluate(agent, partial, "psrs")
    else:
        replay.evaluate(agent, partial, "psrs")
    assert complete >= 1


@given(seed=st.integers(0, 2**32 - 1))
def test_psrs_with_the_logging_policy_emits_every_complete_episode(seed):
    data = replay.Dataset.collect("SixArms", UNIFORM_SIX_ARMS, 60, seed=seed % 7)
    agent = agents.Random().train(data.uniform_prior())
    result = replay.evaluate(agent, data, "psrs", seed=seed)
    assert result.n_episodes == 60
    assert result.accepted == result.proposals
    assert result.stop_reason == "empty_stream"


def test_pers_with_the_logging_policy_accepts_every_episode(six_arms_log, prior):
    agent = agents.Random().train(prior)
    result = replay.evaluate(agent, six_arms_log, "pers", seed=1, max_length=50)
    assert result.n_episodes == six_arms_log.n_episodes == result.proposals
    assert np.all(result.m_values == 1.0)
    assert result.stop_reason == "data_exhausted"


def test_k_sample_psrl_under_pers_keeps_its_models_within_an_episode():
    # RiverSwim, 3-step episodes: the episodic PSRL's policy is fixed within an episode, so the
    # exact bound from the policy applies (a learner whose policy moved would be refused: Rust test
    # fixed_m_acceptances_are_binomial). A fixed M works for every learner.
    data = replay.Dataset.collect("RiverSwim-Osband", np.full((6, 2), 0.5), 400, seed=2, episode_end=3, discount=1.0)
    prior = data.uniform_prior()
    psrl = agents.PSRL(k=10).train(prior, gamma=0.95)
    result = replay.evaluate(psrl, data, "pers", seed=0, episode_end=3, gamma=1.0)
    assert 0 < result.n_episodes <= 400
    assert np.all((result.m_values >= 1.0) & (result.m_values <= 8.0))
    greedy = agents.EGreedy(epsilon=0.1).train(prior)
    fixed = replay.evaluate(greedy, data, "pers", seed=0, episode_end=3, m="logging", weighted=True, gamma=1.0)
    assert np.all(fixed.m_values == 8.0)
    assert len(fixed.weighted_returns) == 400
    assert np.all(fixed.weighted_returns[fixed.n_episodes :] == 0.0)


def test_runs_are_bit_identical_whatever_the_thread_count(six_arms_log, prior):
    agent = agents.PSRL(k=2).train(prior, gamma=0.95)
    one = replay.evaluate(agent, six_arms_log, "psrs", seed=4, runs=4, threads=1)
    two = replay.evaluate(agent, six_arms_log, "psrs", seed=4, runs=4, threads=2)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a.returns, b.returns)
        assert a.tuples_used == b.tuples_used
    single = replay.evaluate(agent, six_arms_log, "psrs", seed=4)
    np.testing.assert_array_equal(single.returns, one[0].returns)
    frame = one.to_polars()
    assert frame.columns == ["run", "episode", "return", "length", "reach"]
    assert frame.height == int(one.n_episodes.sum())
    curve = one.curve()
    assert curve["runs"][0] == int(np.sum(one.n_episodes > 0))
    # The share of runs reaching each episode, in every table of repeated runs.
    np.testing.assert_array_equal(one.reach, curve["share"].to_numpy())
    reach = frame.group_by("episode").agg(pl.col("reach").first()).sort("episode")["reach"].to_numpy()
    np.testing.assert_array_equal(reach, one.reach)


def test_support_violations_and_bad_arguments_are_clear_errors(prior):
    skewed = np.full((7, 6), 0.2)
    skewed[:, 5] = 0.0  # the logging policy never takes action 5; the uniform candidate does
    data = replay.Dataset.collect("SixArms", skewed, 50, seed=0)
    agent = agents.Random().train(prior)
    with pytest.raises(ValueError, match="support violation"):
        replay.evaluate(agent, data, "psrs")
    assert replay.evaluate(agent, data, "queue").stop_reason == "empty_queue"
    with pytest.raises(TypeError, match="not trained"):
        replay.evaluate(agents.Random(), data, "queue")
    with pytest.raises(ValueError, match="method must be"):
        replay.evaluate(agent, data, "nope")
    with pytest.raises(ValueError, match="options of method 'pers'"):
        replay.evaluate(agent, data, "psrs", weighted=True)
    with pytest.raises(ValueError, match="needs a fixed M"):
        replay.evaluate(agent, data, "pers", m="policy", weighted=True, max_length=1000)
    with pytest.raises(ValueError, match="max_episodes must be an int >= 1"):
        replay.evaluate(agent, data, "queue", max_episodes=-1)
    with pytest.raises(ValueError, match="seed must be"):
        replay.evaluate(agent, data, "queue", seed=-1)
    with pytest.raises(ValueError, match="episode_end"):
        replay.evaluate(agent, data, "queue", episode_end="sometimes")
    unknown = replay.Dataset(data.to_polars(), 7, 6)
    with pytest.raises(ValueError, match="only 'queue'"):
        replay.evaluate(agent, unknown, "psrs")


def test_learning_curve_against_the_online_truth(tmp_path, prior):
    # PSRS with the logging policy as candidate: every run emits the log's episodes; the
    # replayed mean return per episode is compared with online runs in a figure.
    data = replay.Dataset.collect("SixArms", UNIFORM_SIX_ARMS, 100, seed=5)
    agent = agents.Random().train(prior, gamma=0.95)
    runs = replay.evaluate(agent, data, "psrs", seed=0, runs=10)
    truth = replay.online_returns(agent, bbrl.envs.six_arms(0.95), n_episodes=100, runs=10, seed=0)
    assert truth.shape == (10, 100)
    ax = runs.plot(truth=truth)
    ax.figure.savefig(tmp_path / "curve.png")
    assert (tmp_path / "curve.png").stat().st_size > 0


def test_cli_writes_results_curve_and_summary(tmp_path):
    from bbrl.cli import main

    data = replay.Dataset.collect("SixArms", UNIFORM_SIX_ARMS, 200, seed=6)
    log = data.write_parquet(tmp_path / "log.parquet")
    out = tmp_path / "out"
    code = main(
        ["replay", str(log), "--agent", "psrl", "--param", "k=3", "--method", "psrs", "--runs", "3", "--out", str(out)]
    )
    assert code == 0
    for name in ("episodes.parquet", "curve.csv", "curve.png", "curve.svg", "summary.json"):
        assert (out / name).stat().st_size > 0
    assert pl.read_parquet(out / "episodes.parquet")["run"].n_unique() <= 3
    assert main(["replay", str(tmp_path / "missing.parquet"), "--agent", "psrl", "--out", str(out)]) == 2


class UniformPython(agents.Agent):
    """A Python agent with a revealed distribution: uniform over the actions."""

    def act(self, state, rng):
        return int(rng.integers(self.n_actions))

    def action_probabilities(self, state):
        return np.full(self.n_actions, 1.0 / self.n_actions)


class NoProbabilities(agents.Agent):
    def act(self, state, rng):
        return 0


def test_python_agents_are_replayed_through_the_same_handle(six_arms_log, prior):
    # A uniform Python agent is the logging policy: PSRS emits every episode of the log, and PERS
    # accepts every one; the runs go one after the other (the agent holds the GIL) and repeat.
    agent = UniformPython().train(prior, gamma=0.95)
    runs = replay.evaluate(agent, six_arms_log, "psrs", seed=2, runs=2)
    assert list(runs.n_episodes) == [six_arms_log.n_episodes] * 2
    again = replay.evaluate(agent, six_arms_log, "psrs", seed=2, runs=2)
    np.testing.assert_array_equal(runs[1].returns, again[1].returns)
    pers = replay.evaluate(agent, six_arms_log, "pers", seed=0, max_length=50)
    assert pers.n_episodes == six_arms_log.n_episodes
    queue = replay.evaluate(agent, six_arms_log, "queue", seed=0)
    assert queue.n_episodes > 0
    truth = replay.online_returns(agent, "SixArms", n_episodes=5, runs=2)
    assert truth.shape == (2, 5)
    blind = NoProbabilities().train(prior)
    with pytest.raises(RuntimeError, match="action_probabilities raised NotImplementedError"):
        replay.evaluate(blind, six_arms_log, "psrs")


def test_the_trace_accounts_for_every_reported_return(six_arms_log, prior):
    # Each emitted episode's return is the discounted sum of the rewards the agent was fed.
    agent = agents.EGreedy(epsilon=0.2).train(prior, gamma=0.9)
    for method in ("queue", "psrs"):
        result = replay.evaluate(agent, six_arms_log, method, seed=3, trace=True)
        trace = result.trace
        assert trace is not None and trace["episode"].max() == result.n_episodes - 1
        steps = trace.with_columns(pl.int_range(pl.len()).over("episode").alias("t"))
        sums = steps.group_by("episode").agg((pl.col("reward") * pl.lit(0.9).pow(pl.col("t"))).sum()).sort("episode")
        np.testing.assert_allclose(sums["reward"].to_numpy(), result.returns, rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(steps.group_by("episode").len().sort("episode")["len"], result.lengths)
