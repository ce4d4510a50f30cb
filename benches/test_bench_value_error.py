"""The value-error rollout sampler: the suite form of value_error_speed.py (returns and
environment steps per second stored in ``extra_info``)."""

from __future__ import annotations

import pytest

from bbrl import value_error as ve
from conftest import per_second

SAMPLES = [("mountain-car", (-0.5, 0.0), 2_000, 1000), ("puddle-world", (0.5, 0.5), 200, 1194)]


@pytest.mark.parametrize(("name", "state", "n", "length"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_sample_returns_one_thread(benchmark, name, state, n, length):
    env, policy = ve.paper_setup(name)
    returns, steps = benchmark.pedantic(
        ve.sample_returns, args=(env, policy, state, n, length), kwargs={"seed": 1}, rounds=3, iterations=1
    )
    assert len(returns) == n and steps >= n
    benchmark.extra_info["returns_per_second"] = per_second(benchmark, n)
    benchmark.extra_info["steps_per_second"] = per_second(benchmark, steps)


@pytest.mark.parametrize(("name", "m", "epsilon"), [("mountain-car", 8, 0.2), ("puddle-world", 4, 0.3)])
def test_state_values_all_cores(benchmark, name, m, epsilon):
    env, policy = ve.paper_setup(name)
    states = env.uniform_states(m, 0)
    out = benchmark.pedantic(
        ve.state_values, args=(env, policy, states), kwargs={"epsilon": epsilon, "delta": 0.1}, rounds=2, iterations=1
    )
    assert len(out.n_samples) == m
    benchmark.extra_info["returns_per_second"] = per_second(benchmark, int(out.n_samples.sum()))
