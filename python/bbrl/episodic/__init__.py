"""The episodic protocol: K episodes of H steps in one MDP per run, the agent learning across
episodes, with the realised and expected regret of every episode against the finite-horizon
optimum (docs/regret.md); its results file; and the regret study (``bbrl regret-study``)."""

from __future__ import annotations

from .experiment import EpisodicExperiment
from .results import EpisodicRun, read_results, regret_curves, regret_table, save_results

__all__ = ["EpisodicExperiment", "EpisodicRun", "read_results", "regret_curves", "regret_table", "save_results"]
