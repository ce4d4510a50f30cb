"""The problem registry of the core, the single source of every benchmark problem: the test
distributions of the protocol (GC, GDL, Grid), each with its priors (itself and its uniform
prior), then one problem per registered environment. Each entry gives ``name``, ``long_name``,
``summary``, ``source`` (``"distribution"`` or ``"environment"``), ``priors`` (names),
``n_states`` (None: continuous), ``n_actions``, ``reward_range`` (low, high), ``horizon`` (steps of
an episode; None: none), ``start`` (``{"kind": "state", "state": s}``, ``{"kind": "uniform"}``,
``{"kind": "law", "probabilities": [...]}`` or ``{"kind": "simulator"}``) and ``discount`` (None:
the experiment's). :mod:`bbrl.distributions`, ``bbrl quick``, :mod:`bbrl.gym` and ``bbrl envs``
read it."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from . import _core, names

__all__ = ["REGISTRY", "canonical", "entry", "names_of", "prior_names"]

if TYPE_CHECKING:
    #: One entry per problem, distributions first, in the core's order.
    REGISTRY: tuple[dict[str, Any], ...]


@functools.cache
def _registry() -> tuple[dict[str, Any], ...]:
    return tuple(_core.problems())


@functools.cache
def _names() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    # The names, sources and priors alone: the core gives them without building the environments
    # (which describing them takes), so that parsing a grid's configuration does not pay for Taxi.
    return tuple((name, source, tuple(priors)) for name, source, priors in _core.problem_names())


def __getattr__(name: str) -> Any:
    # REGISTRY is built on first use, not at import: the core describes every environment to build
    # it (a quarter of a second), and importing bbrl.agents (through bbrl.distributions) should not
    # pay that when no problem is looked up (a report of results, for one).
    if name == "REGISTRY":
        return _registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def names_of(source: str | None = None) -> tuple[str, ...]:
    """The problems' names, all or those of one source (``"distribution"``, ``"environment"``)."""
    return tuple(name for name, kind, _ in _names() if source is None or kind == source)


def prior_names() -> tuple[str, ...]:
    """Every named distribution: the distribution problems, then their other priors in the same
    order (GC, GDL, Grid, UGC, UGDL, UGrid)."""
    priors = [p for _, _, p in _names()]
    depth = max((len(p) for p in priors), default=0)
    return tuple(p[i] for i in range(depth) for p in priors if i < len(p))


def entry(name: str) -> dict[str, Any]:
    """The entry of problem ``name`` (any spelling of :mod:`bbrl.names`' rule).

    Raises:
        ValueError: an unknown name, with the names there are.
    """
    found = names.find(names_of(), name)
    if found is None:
        raise ValueError(f"unknown problem {name!r}; the problems are {', '.join(names_of())}")
    return next(e for e in _registry() if e["name"] == found)


def canonical(name: str) -> str:
    """The registry's spelling of problem ``name`` (see :func:`entry`)."""
    return str(entry(name)["name"])
