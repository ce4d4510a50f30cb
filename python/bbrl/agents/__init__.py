"""Agents: the built-in algorithms' parameter records (validated at construction, built into a Rust
agent when run), the trained-agent type and its file, Python agents, and the stepping handle.

Each record names one algorithm of the benchmark and holds only its parameters. The default
behaviour is always the intended algorithm; ``compat=True`` reproduces the original library's
quirks where the published numbers depend on them (see the README's deviations list).

One job per module: :mod:`~bbrl.agents.records` (the built-in records),
:mod:`~bbrl.agents.registry` (kinds by name), :mod:`~bbrl.agents.trained` (:class:`TrainedAgent`),
:mod:`~bbrl.agents.file_format` and :mod:`~bbrl.agents.files` (the agent file, written and read),
:mod:`~bbrl.agents.python` (:class:`Agent`, the base class of Python agents, and its trained
wrapper), :mod:`~bbrl.agents.stepper` (:class:`Stepper`, the handle every evaluator drives).
"""

from __future__ import annotations

from .files import load
from .python import Agent, AgentError, TrainedPythonAgent, UnsafeLoadWarning, offline_rng, online_rng
from .records import BAMCP, BEB, BFS3, OPPSDS, PSRL, SBOSS, AgentSpec, EGreedy, Formula, Optimal, Random, SoftMax
from .registry import REGISTRY, create, kinds, spec
from .stepper import Snapshot, Stepper
from .trained import TrainedAgent, training_arguments

__all__ = [
    "BAMCP",
    "BEB",
    "BFS3",
    "OPPSDS",
    "PSRL",
    "REGISTRY",
    "SBOSS",
    "Agent",
    "AgentError",
    "AgentSpec",
    "EGreedy",
    "Formula",
    "Optimal",
    "Random",
    "Snapshot",
    "SoftMax",
    "Stepper",
    "TrainedAgent",
    "TrainedPythonAgent",
    "UnsafeLoadWarning",
    "create",
    "kinds",
    "load",
    "offline_rng",
    "online_rng",
    "spec",
    "training_arguments",
]
