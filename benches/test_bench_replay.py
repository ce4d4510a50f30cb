"""Replay evaluators on logs of about 50,000 transitions, one thread: the suite form of
replay_speed.py (tuples consumed per second stored in ``extra_info``), the model-based evaluator, and a
Python agent's runs on 1 and 2 worker processes."""

from __future__ import annotations

import numpy as np
import pytest

from bbrl import agents, replay
from conftest import per_second
from python_agent_overhead import UniformPython
from replay_speed import python_psrs

TRANSITIONS = 50_000


@pytest.fixture(scope="module")
def logs():
    six_arms = replay.Dataset.collect("SixArms", np.full((7, 6), 1 / 6), int(TRANSITIONS / 2.068), seed=0)
    river = replay.Dataset.collect(
        "RiverSwim-Osband", np.full((6, 2), 0.5), TRANSITIONS // 20, seed=0, episode_end=20, discount=1.0
    )
    # RiverSwim's log has a fixed horizon: its returns are undiscounted sums (gamma=1.0 below).
    return {"SixArms": (six_arms, "start", 0.95), "RiverSwim": (river, 20, 1.0)}


@pytest.mark.parametrize("method", ["queue", "psrs"])
@pytest.mark.parametrize("log", ["SixArms", "RiverSwim"])
def test_replay_random_agent(benchmark, logs, log, method):
    data, end, gamma = logs[log]
    agent = agents.Random().train(data.uniform_prior(), gamma=0.95)
    result = benchmark.pedantic(
        lambda: replay.evaluate(agent, data, method, threads=1, runs=1, episode_end=end, gamma=gamma)[0],
        rounds=3,
        iterations=1,
    )
    assert 0 < result.tuples_used <= data.n_rows
    benchmark.extra_info["tuples_per_second"] = per_second(benchmark, result.tuples_used)


@pytest.mark.parametrize("method", ["queue", "psrs"])
def test_replay_psrl(benchmark, logs, method):
    data, end, gamma = logs["RiverSwim"]
    psrl = agents.PSRL(k=10).train(data.uniform_prior(), gamma=0.95)
    result = benchmark.pedantic(
        lambda: replay.evaluate(psrl, data, method, threads=1, runs=1, episode_end=end, max_episodes=200, gamma=gamma)[
            0
        ],
        rounds=2,
        iterations=1,
    )
    assert 0 < result.n_episodes <= 200
    benchmark.extra_info["tuples_per_second"] = per_second(benchmark, result.tuples_used)


def test_replay_plain_python_psrs(benchmark, logs):
    data, _, _ = logs["SixArms"]
    pops, episodes = benchmark.pedantic(python_psrs, args=(data, 0), rounds=2, iterations=1)
    assert 0 < pops <= data.n_rows and episodes > 0
    benchmark.extra_info["tuples_per_second"] = per_second(benchmark, pops)


def test_replay_model(benchmark, logs):
    # The model-based evaluator: the log's maximum-likelihood MDP built, then 20,000 online episodes.
    data, end, _ = logs["SixArms"]
    agent = agents.Random().train(data.uniform_prior(), gamma=0.95)
    result = benchmark.pedantic(
        lambda: replay.evaluate(agent, data, "model", threads=1, runs=1, episode_end=end, max_episodes=20_000)[0],
        rounds=3,
        iterations=1,
    )
    assert result.n_episodes == 20_000
    benchmark.extra_info["steps_per_second"] = per_second(benchmark, int(result.lengths.sum()))


@pytest.mark.parametrize("workers", [1, 2])
def test_replay_python_agent_on_worker_processes(benchmark, logs, workers):
    # A Python agent's runs= over worker processes (spawn and unpickling included): 4 Queue runs of
    # 500 episodes each; the results are the same for both worker counts.
    data, end, _ = logs["SixArms"]
    agent = UniformPython().train(data.uniform_prior(), gamma=0.95)
    runs = benchmark.pedantic(
        lambda: replay.evaluate(agent, data, "queue", runs=4, threads=workers, episode_end=end, max_episodes=500),
        rounds=2,
        iterations=1,
    )
    assert list(runs.n_episodes) == [500] * 4
    benchmark.extra_info["tuples_per_second"] = per_second(benchmark, sum(r.tuples_used for r in runs))
