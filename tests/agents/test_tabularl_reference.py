"""The `reference = "tabularl"` settings of UCRL2, UCFH and Optimistic PSRL (docs/baselines.md, Reference
settings): checked by the core's builder, and run in the episodic protocol."""

from __future__ import annotations

import numpy as np
import pytest

import bbrl
from bbrl import agents


def test_tabularl_needs_learned_rewards_and_a_known_name() -> None:
    with pytest.raises(ValueError, match='needs rewards = "learned"'):
        agents.create("ucrl2", {"reference": "tabularl"})
    with pytest.raises(ValueError, match="reference must be"):
        agents.create("opsrl", {"reference": "TabulaRL-2016", "rewards": "learned"})
    agent = agents.create("ucrl2", {"reference": "tabularl", "rewards": "learned"})
    assert agent.reference == "tabularl"


def test_tabularl_settings_run_in_episodes_and_psrl_learns_riverswim() -> None:
    exp = bbrl.EpisodicExperiment("RiverSwim-Osband", episodes=60, n_runs=4, gamma=1 - 1e-6, seed=1)
    psrl = agents.create(
        "opsrl", {"k": 1, "alpha0": 1 / 6, "plan_horizon": 20, "rewards": "learned", "reference": "tabularl"}
    )
    ucrl2 = agents.create("ucrl2", {"rewards": "learned", "reference": "tabularl"})
    learned, uniform = exp.run(psrl, threads=1), exp.run(ucrl2, threads=1)
    # PSRL finds the right end within 60 episodes; TabulaRL's UCRL2, whose optimism compounds over
    # the stages, still explores almost uniformly (its late episodes earn little).
    late = slice(40, 60)
    assert np.mean(learned.returns[:, late]) > 2.0
    assert np.mean(uniform.returns[:, late]) < 1.0


def test_ucfh_parameters_are_checked_by_name() -> None:
    with pytest.raises(ValueError, match='needs rewards = "learned"'):
        agents.create("ucfh", {"reference": "tabularl"}).build_core()
    with pytest.raises(ValueError, match="epsilon"):
        agents.create("ucfh", {"epsilon": 0.0}).build_core()
    with pytest.raises(ValueError, match="delta"):
        agents.create("ucfh", {"delta": 0.9}).build_core()
    assert "TabulaRL" in agents.create("ucfh", {"rewards": "learned", "reference": "tabularl"}).build_core().name


def test_ucfh_learns_riverswim_in_episodes() -> None:
    exp = bbrl.EpisodicExperiment("RiverSwim-Osband", episodes=200, n_runs=4, gamma=1 - 1e-6, seed=1)

    def regret(kind: str, params: dict[str, object]) -> float:
        return float(exp.run(agents.create(kind, params), threads=1).regret.sum(axis=1).mean())

    random = regret("random", {})
    # The paper's intervals (known rewards) find the right end within the first tens of episodes
    # (about 0.25 of Random's regret after 200); TabulaRL's setting, whose reward width is UCRL2's,
    # later (about 0.5).
    assert regret("ucfh", {"plan_horizon": 20}) < 0.4 * random
    assert regret("ucfh", {"plan_horizon": 20, "rewards": "learned", "reference": "tabularl"}) < 0.7 * random
