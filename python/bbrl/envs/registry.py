"""The environment registry of the core, the single source of every named environment: its name,
long name and one-line summary, its state space (``"finite"`` or ``"box2"``), a continuous state's
box, the policy value-error studies follow by default, its default discount and the options it
takes. :func:`bbrl.envs.make`, :mod:`bbrl.gym`, replay, the value-error studies and every
``--env`` of the command line read it."""

from __future__ import annotations

from typing import Any

from .. import _core
from .. import names as name_rule

__all__ = ["REGISTRY", "canonical", "entry", "make_core", "names"]

#: One entry per named environment, in the core's order.
REGISTRY: tuple[dict[str, Any], ...] = tuple(_core.environments())


def names(state_space: str | None = None) -> tuple[str, ...]:
    """The registry's names, all or those of one state space (``"finite"``, ``"box2"``)."""
    return tuple(e["name"] for e in REGISTRY if state_space is None or e["state_space"] == state_space)


def entry(name: str) -> dict[str, Any]:
    """The entry of ``name``; case, ``-`` and ``_`` are ignored (:mod:`bbrl.names`:
    ``"mountain-car"`` is ``MountainCar``).

    Raises:
        ValueError: an unknown name, with the names there are.
    """
    if not isinstance(name, str):
        raise TypeError(f"an environment name must be a string, got {type(name).__name__}")
    found = name_rule.find(names(), name)
    if found is None:
        raise ValueError(f"unknown environment {name!r}; the environments are {', '.join(names())}")
    return next(e for e in REGISTRY if e["name"] == found)


def canonical(name: str) -> str:
    """The registry's spelling of ``name`` (see :func:`entry`)."""
    return str(entry(name)["name"])


def make_core(name: str, **options: Any) -> Any:
    """The core object of environment ``name`` built with ``options`` (``discount``, and for
    continuous ones ``time_limit``, Puddle World's ``noise``; None or absent: the default). An
    option the environment does not take is a ``ValueError`` naming it."""
    given = {k: v for k, v in options.items() if v is not None}
    # The core reads each option by its typed spec (the registry entry's "options"), refusing one
    # the environment does not take or a value out of its range, naming the environment and option.
    return _core.make_env(entry(name)["name"], given)
