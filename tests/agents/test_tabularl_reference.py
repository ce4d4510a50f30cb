"""The TabulaRL settings of UCRL2, UCFH, Optimistic PSRL, BEB, UCBVI and PSRL (docs/baselines.md, Reference
settings): checked by the core's builder, and run in the episodic protocol."""

from __future__ import annotations

import numpy as np
import pytest

import bbrl
from bbrl import agents


def test_tabularl_needs_learned_rewards_and_a_known_name() -> None:
    with pytest.raises(ValueError, match='needs rewards = "learned"'):
        agents.create("ucrl2", {"reference": "tabularl"})
    with pytest.raises(ValueError, match=r"parameter .reference. must be one of"):
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


def test_the_bonus_planners_refuse_what_they_cannot_take_by_name() -> None:
    with pytest.raises(ValueError, match="compat = true"):
        agents.create("beb", {"beta": 800.0, "compat": True, "reference": "tabularl"})
    with pytest.raises(ValueError, match="k must be 1"):
        agents.create("psrl", {"k": 2, "reference": "tabularl-gaussian"})
    with pytest.raises(ValueError, match='needs rewards = "learned"'):
        agents.create("ucbvi", {"reference": "tabularl"}).build_core()
    with pytest.raises(ValueError, match="bernstein"):
        agents.create("ucbvi", {"reference": "tabularl", "rewards": "learned", "bonus": "bernstein"}).build_core()
    with pytest.raises(ValueError, match=r"parameter .reference. must be one of"):
        agents.create("beb", {"beta": 1.0, "reference": "TabulaRL"})
    with pytest.raises(TypeError, match="reference must be a string"):
        agents.create("psrl", {"reference": 1})
    # The default settings keep their labels; the new ones say which planner they run.
    assert agents.create("psrl", {}).label == "PSRL (k=1)"
    assert agents.create("beb", {"beta": 1.0}).label == "BEB (beta=1.0)"
    core = agents.create("beb", {"beta": 800.0, "reference": "tabularl"}).build_core()
    assert "TabulaRL's BEB" in core.name


def test_the_bonus_planners_run_in_episodes_as_tabularls_do() -> None:
    # TabulaRL's UCBVI learns RiverSwim within 200 episodes (0.62 of uniform play's regret there,
    # benches/README-tabularl.md); its BEB and GaussianPSRL explore far longer (0.83 and 0.86).
    exp = bbrl.EpisodicExperiment("RiverSwim-Osband", episodes=200, n_runs=4, gamma=1 - 1e-6, seed=2)
    random = exp.run(agents.create("random", {}), threads=1).regret.sum(axis=1).mean()
    ucbvi = agents.create("ucbvi", {"reference": "tabularl", "rewards": "learned", "plan_horizon": 20})
    beb = agents.create("beb", {"beta": 800.0, "reference": "tabularl"})
    gaussian = agents.create("psrl", {"reference": "tabularl-gaussian"})
    regrets = {
        name: exp.run(agent, prior_concentration=1.0, threads=1).regret.sum(axis=1).mean()
        for name, agent in (("ucbvi", ucbvi), ("beb", beb), ("gaussian", gaussian))
    }
    assert regrets["ucbvi"] < 0.75 * random
    assert 0.7 * random < regrets["beb"] < 0.95 * random
    assert 0.7 * random < regrets["gaussian"] < 0.97 * random


def test_rlberry_psrl_setting_is_checked_and_learns_riverswim() -> None:
    with pytest.raises(ValueError, match="k must be 1"):
        agents.create("psrl", {"k": 3, "reference": "rlberry"})
    # rlberry's Beta(1, 1) reward prior is optimistic on RiverSwim (mean 0.5 where the rewards are
    # 0): PSRL with it learns the right end within 200 episodes (benches/README-rlberry.md).
    exp = bbrl.EpisodicExperiment("RiverSwim-Osband", episodes=200, n_runs=4, gamma=1 - 1e-6, seed=2)
    random = exp.run(agents.create("random", {}), threads=1).regret.sum(axis=1).mean()
    psrl = exp.run(agents.create("psrl", {"reference": "rlberry"}), threads=1).regret.sum(axis=1).mean()
    assert psrl < 0.3 * random


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
