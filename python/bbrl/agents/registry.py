"""The built-in agent kinds: the core's registry (the single source of every kind's parameters,
types, defaults, ranges and cost units, in the order tables and figures show them) joined to the
Python parameter record of each kind."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from .. import _core
from .records import BAMCP, BEB, BFS3, OPPSDS, PSRL, SBOSS, AgentSpec, EGreedy, Formula, Optimal, Random, SoftMax

__all__ = ["REGISTRY", "create", "kinds", "spec"]

#: The core's agent registry, one entry per kind: ``kind``, ``display``, ``params`` (``name``,
#: ``type``, ``default``, ``required``, ``range``, ``doc``), ``online_units``, ``offline_units``.
REGISTRY: tuple[dict[str, Any], ...] = tuple(_core.agent_kinds())

_RECORDS: dict[str, type[AgentSpec]] = {
    cls.kind: cls for cls in (Random, EGreedy, SoftMax, BEB, BAMCP, BFS3, SBOSS, PSRL, Optimal, Formula, OPPSDS)
}
if set(_RECORDS) != {entry["kind"] for entry in REGISTRY}:  # pragma: no cover - a build out of step
    raise ImportError(
        f"the Python agent records {sorted(_RECORDS)} and the core's registry "
        f"{sorted(e['kind'] for e in REGISTRY)} differ: give every core kind a record in agents/records.py"
    )
_KINDS: dict[str, type[AgentSpec]] = {entry["kind"]: _RECORDS[entry["kind"]] for entry in REGISTRY}
_SPECS: dict[str, dict[str, Any]] = {entry["kind"]: entry for entry in REGISTRY}


def kinds() -> dict[str, type[AgentSpec]]:
    """The built-in agents by command-line name (``random``, ``egreedy``, ``softmax``, ``beb``...),
    in the registry's order."""
    return dict(_KINDS)


def spec(kind: str) -> dict[str, Any]:
    """The core registry's entry for ``kind`` (see :data:`REGISTRY`)."""
    try:
        return _SPECS[kind]
    except KeyError:
        raise ValueError(f"unknown agent {kind!r}; known agents: {', '.join(_SPECS)}") from None


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
    # The record's fields are the registry's parameters in its order (OPPS-DS's formula_set is the
    # core's "formulas"); the registry says which have no default.
    required = [f.name for f, p in zip(fields(cls), _SPECS[cls.kind]["params"], strict=True) if p["required"]]
    missing = [name for name in required if name not in params]
    if missing:
        raise ValueError(f"agent {cls.kind!r} needs parameter(s) {', '.join(missing)} (no default)")
    return cls(**params)
