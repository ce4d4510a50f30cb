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
    "RecordedAgent",
    "cells_by_experiment",
    "check_runnable",
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
class RecordedAgent:
    """A Python agent's setting as a results folder records it (:func:`bbrl.grid.config.python_record`):
    data only, so that reading a folder (its status, its report) never imports the class. It
    cannot run: running needs the configuration that names the class."""

    kind: str
    display: str
    label: str
    params_id: str
    params: dict[str, Any]

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RecordedAgent:
        values = {name: record[name] for name in ("kind", "display", "label", "params_id")}
        if not all(isinstance(v, str) for v in values.values()) or not isinstance(record["agent_params"], dict):
            raise TypeError("kind, display, label and params_id must be strings, agent_params an object")
        return cls(**values, params=dict(record["agent_params"]))


@dataclass(frozen=True)
class Cell:
    """One (experiment, agent, parameters) combination of a grid."""

    index: int
    experiment: ExperimentConfig
    kind: str
    params: dict[str, Any]
    block: str
    spec: agents.AgentSpec | agents.Agent | RecordedAgent | None = field(repr=False, compare=False)

    @property
    def params_id(self) -> str:
        if isinstance(self.spec, RecordedAgent):
            return self.spec.params_id
        return params_id(self.spec, self.params)

    @property
    def runnable(self) -> bool:
        """Whether this installation can run the cell: its agent is known and, for a Python agent,
        its class was imported from a configuration the user named (not a folder's record)."""
        return self.spec is not None and not isinstance(self.spec, RecordedAgent)

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
        if isinstance(self.spec, RecordedAgent):
            return self.spec.display
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
    #: Every setting of its Python agents as data (:func:`bbrl.grid.config.python_record`), which
    #: a results folder records so that reading it never imports their classes.
    python_agents: tuple[dict[str, Any], ...] = ()

    def blocks(self) -> list[str]:
        return list(dict.fromkeys(c.block for c in self.cells))


def check_runnable(cells: Iterable[Cell]) -> None:
    """Refuses cells this installation cannot run (see :attr:`Cell.runnable`), naming the first."""
    for cell in cells:
        if cell.spec is None:
            raise ValueError(f"cell {cell.id}: agent {cell.kind!r} is not known to this installation")
        if isinstance(cell.spec, RecordedAgent):
            raise ValueError(
                f"cell {cell.id}: a Python agent runs only from the configuration that names its class (a results "
                "folder's copy never imports code): pass the configuration"
            )


def cells_by_experiment(cells: Iterable[Cell]) -> dict[str, list[Cell]]:
    """``cells`` grouped by their experiment's key (``experiment/prior``), in order of appearance."""
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell.experiment.key, []).append(cell)
    return groups
