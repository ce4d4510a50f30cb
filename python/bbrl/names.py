"""The one name rule of every registry (agent kinds, environments, problems and their priors): a
name is found whatever its case and whatever ``-`` or ``_`` it holds, on both sides, so
``my_agent``, ``My-Agent`` and ``myagent`` are one name. The rule is the core's
(``bbrl_core::names``), which its own lookups follow; every lookup of the package goes through
:func:`find`."""

from __future__ import annotations

from collections.abc import Iterable

from . import _core

__all__ = ["find", "key"]


def key(name: str) -> str:
    """The form two names are compared in (lower case, without ``-`` and ``_``)."""
    return _core.name_key(name)


def find(registered: Iterable[str], name: str) -> str | None:
    """The registered spelling of ``name`` among ``registered``, or None.

    Raises:
        TypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"a name must be a string, got {type(name).__name__}")
    wanted = key(name)
    return next((known for known in registered if key(known) == wanted), None)
