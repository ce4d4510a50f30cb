"""The reference settings of the exploration baselines (``reference = "rlberry"``) in the episodic
protocol, and UCBVI at the paper's constants (docs/baselines.md)."""

from __future__ import annotations

import pytest

from bbrl.agents import registry
from bbrl.episodic import EpisodicExperiment


def regret(kind: str, params: dict[str, object], episodes: int = 200, n_runs: int = 4) -> float:
    """Mean cumulative realised regret after ``episodes`` episodes of Osband's RiverSwim (H = 20)."""
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=episodes, n_runs=n_runs, seed=3)
    run = exp.run(registry.create(kind, params), threads=1)
    return float(run.regret.sum(axis=1).mean())


def test_ucbvi_at_the_paper_constant_acts_like_random_and_the_rlberry_setting_learns() -> None:
    random = regret("random", {})
    # c = 1: every Q-value sits at its cap, all actions tie (docs/baselines.md, "Which setting to run").
    assert regret("ucbvi", {"plan_horizon": 20}) > 0.95 * random
    # rlberry's bonus: its exploration costs about 170 over the first 100 episodes, then nothing.
    assert regret("ucbvi", {"plan_horizon": 20, "reference": "rlberry"}) < 0.4 * random
    assert regret("ucbvi", {"plan_horizon": 20, "reference": "rlberry", "rewards": "learned"}) < 0.4 * random


@pytest.mark.parametrize(
    ("kind", "episodes", "bound"),
    [("rlsvi", 200, 0.35), ("optql", 500, 0.9)],
)
def test_rlberry_settings_of_rlsvi_and_optql_learn(kind: str, episodes: int, bound: float) -> None:
    # rlberry's RLSVI learns RiverSwim within 100 episodes (0.2 of Random's regret after 200); its
    # OptQL is slow (the v_max(h) / t term of its bonus keeps every stage optimistic for long) and
    # does better than chance only later (0.83 of Random's regret after 500).
    random = regret("random", {}, episodes=episodes)
    assert regret(kind, {"plan_horizon": 20, "reference": "rlberry"}, episodes=episodes) < bound * random


def test_reference_values_are_checked() -> None:
    for kind in ("optql", "rlsvi"):
        with pytest.raises(ValueError, match=r'parameter .reference. must be one of "paper" or "rlberry"'):
            registry.create(kind, {"reference": "tabularl"}).build_core()
    with pytest.raises(ValueError, match=r'parameter .reference. must be one of "paper", "rlberry" or "tabularl"'):
        registry.create("ucbvi", {"reference": "tabula"}).build_core()
    for kind in ("ucbvi", "optql", "rlsvi"):
        assert "rlberry" in registry.create(kind, {"reference": "rlberry"}).build_core().name
    with pytest.raises(ValueError, match="does not apply"):
        registry.create("ucbvi", {"reference": "rlberry", "bonus": "bernstein"}).build_core()
