"""The built-in agent kinds: the core's registry (the single source of every kind's parameters,
types, defaults, ranges and cost units, in the order tables and figures show them) joined to the
Python parameter record of each kind."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from .. import _core, names
from .records import BAMCP, BEB, BFS3, OPPSDS, PSRL, SBOSS, AgentSpec, EGreedy, Formula, Optimal, Random, SoftMax

__all__ = [
    "REGISTRY",
    "baseline_kinds",
    "canonical",
    "create",
    "example_params",
    "examples",
    "generated_record",
    "kinds",
    "quick_kinds",
    "record_for",
    "spec",
]

#: The core's agent registry, one entry per kind: ``kind``, ``display``, ``params`` (``name``,
#: ``type``, ``default``, ``required``, ``range``, ``doc``), ``online_units``, ``offline_units``,
#: ``examples`` (``doc``, ``params`` by the core's names; the first runs in seconds) and
#: ``not_in_quick`` (why ``bbrl quick`` leaves the kind out, or None).
REGISTRY: tuple[dict[str, Any], ...] = tuple(_core.agent_kinds())

#: The hand-written records (typed fields, docstrings, friendly checks), one per kind they cover.
_RECORDS: dict[str, type[AgentSpec]] = {
    cls.kind: cls for cls in (Random, EGreedy, SoftMax, BEB, BAMCP, BFS3, SBOSS, PSRL, Optimal, Formula, OPPSDS)
}

_TYPES = {"float": float, "int": int, "bool": bool, "str": str}


class _GeneratedSpec(AgentSpec):
    """A record made from the registry for a kind that has no hand-written one: a new Rust agent is
    usable from Python, the command line and grids as soon as it is registered in the core. Its
    parameters are checked by the core's own builder at construction."""

    def __post_init__(self) -> None:
        # A float parameter given as an int (a TOML `0`, a keyword `1`) is stored as a float, as the
        # hand-written records store it: one value, one record and one cell id.
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type is float and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, field.name, float(value))
        self.build_core()  # the core's checks, with their messages


def generated_record(entry: dict[str, Any]) -> type[AgentSpec]:
    """A parameter record made from a registry entry: one field per parameter (the registry's
    types and defaults, required ones first), its kind and display name, checked by the core."""
    params = sorted(entry["params"], key=lambda p: not p["required"])  # required fields first
    record = dataclasses.make_dataclass(
        "".join(part.capitalize() for part in entry["kind"].split("_")),
        [
            (p["name"], _TYPES[p["type"]])
            if p["required"]
            else (p["name"], _TYPES[p["type"]], dataclasses.field(default=p["default"]))
            for p in params
        ],
        bases=(_GeneratedSpec,),
        frozen=True,
        namespace={"kind": entry["kind"], "display": entry["display"], "__module__": __name__},
    )
    record.__doc__ = f"{entry['display']} (generated from the core's registry): " + "; ".join(
        f"{p['name']} ({p['range']}): {p['doc']}" for p in entry["params"]
    )
    return record


def record_for(entry: dict[str, Any]) -> type[AgentSpec]:
    """The parameter record of a registry entry: its hand-written one, or one generated from the
    entry (what a kind registered in the core without a Python record gets)."""
    return _RECORDS.get(entry["kind"]) or generated_record(entry)


_KINDS: dict[str, type[AgentSpec]] = {entry["kind"]: record_for(entry) for entry in REGISTRY}
_SPECS: dict[str, dict[str, Any]] = {entry["kind"]: entry for entry in REGISTRY}


def kinds() -> dict[str, type[AgentSpec]]:
    """The built-in agents by command-line name (``random``, ``egreedy``, ``softmax``, ``beb``...),
    in the registry's order."""
    return dict(_KINDS)


def baseline_kinds() -> tuple[str, ...]:
    """The kinds that declare themselves exploration baselines (the registry's ``episodic_baseline``:
    docs/baselines.md), in the registry's order: what ``bbrl regret-study`` and a grid's
    ``kind = "baselines"`` block run."""
    return tuple(e["kind"] for e in REGISTRY if e.get("episodic_baseline"))


def quick_kinds() -> tuple[str, ...]:
    """The kinds ``bbrl quick`` runs: every kind but those the registry leaves out of it
    (``not_in_quick``: not an algorithm of its own), in the registry's order."""
    return tuple(e["kind"] for e in REGISTRY if not e["not_in_quick"])


def canonical(kind: str) -> str:
    """The registry's spelling of ``kind``; case, ``-`` and ``_`` are ignored (:mod:`bbrl.names`).

    Raises:
        ValueError: an unknown kind, with the kinds there are.
    """
    found = names.find(_KINDS, kind)
    if found is None:
        raise ValueError(f"unknown agent {kind!r}; known agents: {', '.join(_KINDS)}")
    return found


def spec(kind: str) -> dict[str, Any]:
    """The core registry's entry for ``kind`` (any spelling, see :func:`canonical`)."""
    return _SPECS[canonical(kind)]


def example_params(kind: str, index: int = 0) -> dict[str, Any]:
    """Example setting ``index`` of ``kind`` (0: the one that runs in seconds) as the record's
    keyword arguments (the record's fields are the registry's parameters, in its order)."""
    entry = spec(kind)
    field_of = {p["name"]: f.name for p, f in zip(entry["params"], fields(_KINDS[entry["kind"]]), strict=True)}
    return {field_of[name]: value for name, value in entry["examples"][index]["params"].items()}


def examples(kind: str) -> tuple[AgentSpec, ...]:
    """Every example setting of ``kind``, built (the first runs in seconds; the others exercise
    the kind's main options)."""
    return tuple(create(kind, example_params(kind, i)) for i in range(len(spec(kind)["examples"])))


def create(kind: str, params: Mapping[str, Any] | None = None) -> AgentSpec:
    """Builds an agent by its command-line name, e.g. ``create("egreedy", {"epsilon": 0.1})``; the
    name is matched by the one name rule (:func:`canonical`)."""
    cls = _KINDS[canonical(kind)]
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
