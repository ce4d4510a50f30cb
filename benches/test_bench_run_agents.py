"""Whole experiments (the protocol) per agent and problem, one thread: the suite form of
run_agents.py. Cost per decision = online CPU time / (N * T), stored in ``extra_info``."""

from __future__ import annotations

import pytest

import bbrl
from run_agents import BASIC, OTHERS, PLANNERS

PROBLEMS = ("GC", "GDL", "Grid")
# Small N: the cheap agents run for milliseconds per round, the planners for about a second.
CASES = [(p, a, 20) for p in PROBLEMS for a, _ in BASIC + OTHERS] + [(p, a, 2) for p in PROBLEMS for a, _ in PLANNERS]


@pytest.mark.parametrize(("problem", "agent", "n_mdps"), CASES, ids=[f"{p}-{a.label}" for p, a, _ in CASES])
def test_experiment(benchmark, problem, agent, n_mdps):
    experiment = bbrl.Experiment(problem, n_mdps=n_mdps, gamma=0.95, horizon=250, seed=0)
    run = benchmark.pedantic(experiment.run, args=(agent,), kwargs={"threads": 1}, rounds=3, iterations=1)
    assert run.returns.shape == (n_mdps,)
    benchmark.extra_info["problem"] = problem
    benchmark.extra_info["agent"] = agent.label
    benchmark.extra_info["us_per_decision"] = float(run.online_cpu_seconds.sum()) / (n_mdps * 250) * 1e6
