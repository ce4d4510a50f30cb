"""The Python-agent boundary against the Rust Random agent, one process: the suite form of
python_agent_overhead.py. Online time per decision stored in ``extra_info``."""

from __future__ import annotations

import pytest

import bbrl
from bbrl import agents
from python_agent_overhead import ConstantPython, UniformPython

N, T = 20, 250
AGENTS = {"Random-Rust": agents.Random(), "ConstantPython": ConstantPython(), "UniformPython": UniformPython()}


@pytest.mark.parametrize("name", list(AGENTS))
def test_python_agent_boundary(benchmark, name):
    experiment = bbrl.Experiment("GC", n_mdps=N, horizon=T, seed=0)
    run = benchmark.pedantic(experiment.run, args=(AGENTS[name],), kwargs={"threads": 1}, rounds=5, iterations=1)
    assert run.returns.shape == (N,)
    benchmark.extra_info["online_us_per_decision"] = float(run.online_seconds.sum()) / (N * T) * 1e6
