"""The built-in agent kinds by command-line name: lookup and construction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from .records import BAMCP, BEB, BFS3, OPPSDS, PSRL, SBOSS, AgentSpec, EGreedy, Formula, Optimal, Random, SoftMax

__all__ = ["create", "kinds"]


_KINDS: dict[str, type[AgentSpec]] = {
    cls.kind: cls for cls in (Random, EGreedy, SoftMax, BEB, BAMCP, BFS3, SBOSS, PSRL, Optimal, Formula, OPPSDS)
}


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
