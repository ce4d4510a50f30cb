"""The data model of a grid: its experiments, its cells (experiment x agent x parameters) with their
ids, and the parsed configuration."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import agents
from ..distributions import FDM
from .ids import REWARDS_SUFFIX, params_id

__all__ = [
    "DEFAULTS",
    "DEFAULT_KEYS",
    "EXPERIMENT_KEYS",
    "RECORDING_KEYS",
    "Cell",
    "ExperimentConfig",
    "GridConfig",
    "cells_by_experiment",
]

EXPERIMENT_KEYS = ("name", "test", "prior", "n_mdps", "gamma", "horizon", "seed")

DEFAULT_KEYS = ("n_mdps", "gamma", "horizon", "seed")

DEFAULTS: dict[str, Any] = {"n_mdps": 500, "gamma": 0.95, "horizon": 250, "seed": 0}
#: Keys that change what is recorded, not the results: in [defaults] and [[experiment]] tables.

RECORDING_KEYS = ("record_rewards",)
#: The end of the id (and file name) of a cell that records per-step rewards.


@dataclass(frozen=True)
class ExperimentConfig:
    """One experiment of a grid: N test MDPs drawn from ``test``, agents trained on ``prior``."""

    name: str
    test: str
    prior: str
    n_mdps: int
    gamma: float
    horizon: int
    seed: int
    test_fdm: FDM = field(repr=False, compare=False)
    prior_fdm: FDM = field(repr=False, compare=False)
    #: Keep the reward of every step in the cell files (N x T floats per cell).
    record_rewards: bool = False

    @property
    def key(self) -> str:
        """``name/prior``: what identifies the experiment in cell ids and reports."""
        return f"{self.name}/{self.prior}"

    def settings(self) -> dict[str, Any]:
        """The settings that determine its results (the MDPs drawn and the protocol), and
        ``record_rewards`` when true (absent when false, as in folders written before the option)."""
        settings = {k: getattr(self, k) for k in EXPERIMENT_KEYS}
        if self.record_rewards:
            settings["record_rewards"] = True
        return settings


@dataclass(frozen=True)
class Cell:
    """One (experiment, agent, parameters) combination of a grid."""

    index: int
    experiment: ExperimentConfig
    kind: str
    params: dict[str, Any]
    block: str
    spec: agents.AgentSpec | None = field(repr=False, compare=False)

    @property
    def params_id(self) -> str:
        return params_id(self.spec, self.params)

    @property
    def suffix(self) -> str:
        """What the id and file name gain for what the cell records: ``+rewards`` or nothing."""
        return REWARDS_SUFFIX if self.experiment.record_rewards else ""

    @property
    def id(self) -> str:
        """A readable, stable id, e.g. ``GC/UGC/egreedy/epsilon=0.1`` (no parameters: ``GC/GC/random``;
        recording rewards: ``GC/UGC/egreedy/epsilon=0.1+rewards``)."""
        tail = self.params_id
        return f"{self.experiment.key}/{self.kind}" + (f"/{tail}" if tail else "") + self.suffix

    @property
    def algorithm(self) -> str:
        """The algorithm's display name (the class the statistics compare), e.g. ``e-Greedy``."""
        if isinstance(self.spec, agents.Agent):
            return type(self.spec).display
        cls = agents.kinds().get(self.kind)
        return cls.display if cls is not None else self.kind

    @property
    def label(self) -> str:
        if self.spec is not None:
            return self.spec.label
        return f"{self.kind} ({', '.join(f'{k}={v}' for k, v in self.params.items())})"


@dataclass(frozen=True)
class GridConfig:
    """A parsed configuration: experiments, the expanded cells, and where it came from."""

    path: Path | None
    text: str
    experiments: tuple[ExperimentConfig, ...]
    cells: tuple[Cell, ...]
    #: Blocks marked ``optional = true`` whose kind this installation does not know (not run).
    skipped_agents: tuple[str, ...] = ()
    #: The folder relative files (distributions, Python agents) were read from.
    base: Path | None = None

    def blocks(self) -> list[str]:
        return list(dict.fromkeys(c.block for c in self.cells))


def cells_by_experiment(cells: Iterable[Cell]) -> dict[str, list[Cell]]:
    """``cells`` grouped by their experiment's key (``experiment/prior``), in order of appearance."""
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.experiment.key, []).append(cell)
    return groups
