"""Python agents in replay as the built-ins: a per-episode Generator in ``start_episode`` (reproducible,
independent between runs), K-sample PSRL in Python with the built-in's per-episode law under PSRS
(a frequency test), and results independent of the number of worker processes."""

from __future__ import annotations

import numpy as np
import pytest
from python_psrl import PythonPSRL
from scipy import stats

from bbrl import agents, replay

UNIFORM_SIX_ARMS = np.full((7, 6), 1 / 6)


@pytest.fixture(scope="module")
def log() -> replay.Dataset:
    # About 100 transitions, as in Mandel et al.'s SixArms experiment.
    return replay.Dataset.collect("SixArms", UNIFORM_SIX_ARMS, 50, seed=11)


def test_the_per_episode_generator_is_reproducible_and_independent_between_runs(log):
    assert PythonPSRL.episode_rng and not agents.Agent.episode_rng
    agent = PythonPSRL(k=3).train(log.uniform_prior(), gamma=0.95)
    first = replay.evaluate(agent, log, "psrs", seed=5, runs=4, threads=1)
    again = replay.evaluate(agent, log, "psrs", seed=5, runs=4, threads=1)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.returns, b.returns)
        assert a.tuples_used == b.tuples_used
    # Different runs draw different models, so their walks differ.
    assert len({(r.tuples_used, r.n_episodes, tuple(r.returns)) for r in first}) > 1


def test_results_do_not_depend_on_the_number_of_worker_processes(log):
    agent = PythonPSRL(k=2).train(log.uniform_prior(), gamma=0.95)
    one = replay.evaluate(agent, log, "queue", seed=1, runs=5, threads=1)
    two = replay.evaluate(agent, log, "queue", seed=1, runs=5, threads=2)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a.returns, b.returns)
        assert (a.tuples_used, a.stop_reason) == (b.tuples_used, b.stop_reason)
    online_one = replay.online_returns(agent, "SixArms", n_episodes=3, runs=3, seed=2, threads=1)
    online_two = replay.online_returns(agent, "SixArms", n_episodes=3, runs=3, seed=2, threads=2)
    np.testing.assert_array_equal(online_one, online_two)


def test_python_k_sample_psrl_has_the_built_in_per_episode_law(log):
    # Under PSRS both agents reveal (1/K) x greedy mass over K posterior models drawn at each
    # episode start, from different streams. Per run: the number of episodes reached (capped at
    # 6; chi-square homogeneity) and the number of accepted pops (two-sample Kolmogorov-Smirnov,
    # conservative for counts), 300 runs each, at level 1e-3: fixed seeds make the outcome
    # deterministic, and under equal laws a failure has probability at most 1e-3 per test. The
    # same statistics tell K = 10 from K = 3 (PSRS accepts less when the K models agree more).
    prior = log.uniform_prior()
    runs, cap = 300, 6

    def psrs(agent, seed):
        return replay.evaluate(agent.train(prior, gamma=0.95), log, "psrs", seed=seed, runs=runs, max_episodes=cap)

    python, built_in, fewer = psrs(PythonPSRL(k=10), 1), psrs(agents.PSRL(k=10), 2), psrs(agents.PSRL(k=3), 2)
    reached = np.vstack([np.bincount(r.n_episodes, minlength=cap + 1) for r in (python, built_in)])
    reached = reached[:, reached.sum(axis=0) > 0]
    assert stats.chi2_contingency(reached).pvalue > 1e-3, reached

    def accepted(runs_):
        return [r.accepted for r in runs_]

    assert stats.ks_2samp(accepted(python), accepted(built_in)).pvalue > 1e-3
    assert stats.ks_2samp(accepted(python), accepted(fewer)).pvalue < 1e-3
    # The reach share (per episode) is in both results.
    assert python.reach[0] == pytest.approx(np.mean(python.n_episodes > 0))
