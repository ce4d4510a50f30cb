"""Agent parameter records: validated at construction, built into a Rust agent when run.

Each class names one algorithm of the benchmark (SPEC 4) and holds only its parameters. The
default behaviour is always the intended algorithm; ``compat=True`` reproduces the original
library's quirks where the published numbers depend on them (see the README's deviations list).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from . import _core

__all__ = ["BEB", "AgentSpec", "EGreedy", "Random", "SoftMax", "create", "kinds"]


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


@dataclass(frozen=True)
class AgentSpec:
    """Base class of the built-in agents: a kind understood by the Rust core plus parameters."""

    kind: ClassVar[str]
    display: ClassVar[str]

    @property
    def params(self) -> dict[str, Any]:
        """The parameters as passed to the core, e.g. ``{"epsilon": 0.1}``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def label(self) -> str:
        """A readable, stable name with parameters, e.g. ``e-Greedy (epsilon=0.1)``."""
        shown = [f"{k}={v}" for k, v in self.params.items() if not (k == "compat" and v is False)]
        return f"{self.display} ({', '.join(shown)})" if shown else self.display

    def _build(self) -> _core.Agent:
        return _core.Agent(self.kind, self.params)


@dataclass(frozen=True)
class Random(AgentSpec):
    """Uniformly random actions (SPEC 4.1)."""

    kind: ClassVar[str] = "random"
    display: ClassVar[str] = "Random"


@dataclass(frozen=True)
class EGreedy(AgentSpec):
    """e-Greedy on the posterior-mean model (SPEC 4.3): with probability ``epsilon`` a uniformly
    random action, otherwise greedy on Q (random ties). Q is re-solved after every transition.

    Args:
        epsilon: exploration probability in [0, 1].
    """

    kind: ClassVar[str] = "egreedy"
    display: ClassVar[str] = "e-Greedy"
    epsilon: float

    def __post_init__(self) -> None:
        value = _number(self.epsilon, "epsilon")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {value}")
        object.__setattr__(self, "epsilon", value)


@dataclass(frozen=True)
class SoftMax(AgentSpec):
    """Soft-max (Boltzmann) exploration on the posterior-mean model's Q (SPEC 4.4).

    Args:
        tau: temperature, > 0.
        compat: reproduce the original's unnormalised scores, which make it always play action 0
            on the benchmark's non-negative rewards (the published Soft-max numbers).
    """

    kind: ClassVar[str] = "softmax"
    display: ClassVar[str] = "Soft-max"
    tau: float
    compat: bool = False

    def __post_init__(self) -> None:
        value = _number(self.tau, "tau")
        if value <= 0.0:
            raise ValueError(f"tau must be > 0, got {value}")
        object.__setattr__(self, "tau", value)
        _flag(self.compat, "compat")


@dataclass(frozen=True)
class BEB(AgentSpec):
    """Bayesian Exploration Bonus (Kolter & Ng 2009; SPEC 4.5): greedy on the mean model with
    rewards increased by ``beta / (1 + n(s, a))``, n counting prior pseudo-counts and observations.

    Args:
        beta: bonus coefficient, >= 0.
        compat: truncate beta to an integer as the original does (0.5 acts as 0, 2.5 as 2).
    """

    kind: ClassVar[str] = "beb"
    display: ClassVar[str] = "BEB"
    beta: float
    compat: bool = False

    def __post_init__(self) -> None:
        value = _number(self.beta, "beta")
        if value < 0.0:
            raise ValueError(f"beta must be >= 0, got {value}")
        object.__setattr__(self, "beta", value)
        _flag(self.compat, "compat")


_KINDS: dict[str, type[AgentSpec]] = {cls.kind: cls for cls in (Random, EGreedy, SoftMax, BEB)}


def kinds() -> dict[str, type[AgentSpec]]:
    """The built-in agents by command-line name (``random``, ``egreedy``, ``softmax``, ``beb``...)."""
    return dict(_KINDS)


def create(kind: str, params: Mapping[str, Any] | None = None) -> AgentSpec:
    """Builds an agent by its command-line name, e.g. ``create("egreedy", {"epsilon": 0.1})``."""
    cls = _KINDS.get(kind.lower().replace("-", "").replace("_", ""))
    if cls is None:
        raise ValueError(f"unknown agent {kind!r}; known agents: {', '.join(_KINDS)}")
    params = dict(params or {})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"agent {kind!r} has no parameter(s) {', '.join(unknown)}; its parameters: {sorted(known)}")
    try:
        return cls(**params)
    except TypeError as exc:
        if "missing" in str(exc):
            missing = sorted(known - set(params))
            raise ValueError(f"agent {kind!r} needs parameter(s) {', '.join(missing)}") from None
        raise
