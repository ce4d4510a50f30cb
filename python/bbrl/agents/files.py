"""Reading the trained-agent file (``bbrl-agent``, version 1) back into a trained agent.

Reading a file never runs code it holds: a built-in agent is rebuilt from its kind and parameters
(and OPPS-DS's saved text), a Python agent from its state as data through a class the caller has
already imported or passes (:func:`load`'s ``agent_class``). Files of bbrl's earlier format hold
pickles: they are refused unless the caller opts in with ``allow_pickle=True``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from .. import _core
from ..distributions import from_document as distribution_from_document
from ..fileio import json_field, read_json_document
from .file_format import FORMAT_NAME, FORMAT_VERSION, recorded_work
from .python import Agent, TrainedPythonAgent
from .registry import create
from .trained import TrainedAgent

__all__ = ["from_document", "load", "read_document"]


def load(
    path: str | os.PathLike[str], agent_class: type[Agent] | None = None, *, allow_pickle: bool = False
) -> TrainedAgent:
    """Reads an agent written by :meth:`TrainedAgent.save`.

    Args:
        path: the agent file.
        agent_class: for a Python agent, its class (a subclass of :class:`bbrl.agents.Agent` of the
            name the file records). Without it the class must already be imported: loading never
            imports a module named in a file.
        allow_pickle: read a Python agent saved in bbrl's earlier format (pickles), which runs
            whatever code the file holds: only for files you trust (a warning says so). ``bbrl
            agents convert OLD NEW --allow-pickle`` rewrites such a file as data once.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file and, where it parses, the field that is wrong or missing.
    """
    file = Path(path)
    return from_document(read_document(file), str(file), agent_class, allow_pickle=allow_pickle)


def read_document(file: Path) -> dict[str, Any]:
    """An agent file's JSON document (:func:`bbrl.fileio.read_json_document`: size-capped, errors
    naming the file), checked to be of format ``bbrl-agent``, version 1."""
    document = read_json_document(file, "agent file")
    if document.get("format") != FORMAT_NAME or document.get("version") != FORMAT_VERSION:
        raise ValueError(f"{file}: not a bbrl agent file (format {FORMAT_NAME}, version {FORMAT_VERSION})")
    return document


def from_document(
    document: dict[str, Any], source: str, agent_class: type[Agent] | None = None, *, allow_pickle: bool = False
) -> TrainedAgent:
    """The trained agent of an agent file's document (see :func:`load`); errors name ``source``."""
    if agent_class is not None and not (isinstance(agent_class, type) and issubclass(agent_class, Agent)):
        raise TypeError(f"agent_class must be a subclass of bbrl.agents.Agent, got {agent_class!r}")
    where = f"{source}: malformed agent file"
    try:
        prior = distribution_from_document(
            json_field(document, "prior", "an object", where), f"{source}: field 'prior'"
        )
        gamma = float(json_field(document, "gamma", "a number", where))
        horizon = json_field(document, "horizon", "an integer", where)
        seed = json_field(document, "seed", "an integer", where)
        json_field(document, "offline_seconds", "a number", where, None)
        if document.get("offline_cpu_seconds") is not None:
            json_field(document, "offline_cpu_seconds", "a number", where)
        if "python" in document:
            return TrainedPythonAgent.from_document(document, prior, source, agent_class, allow_pickle)
        kind = json_field(document, "kind", "a string", where)
        raw_params = json_field(document, "params", "an object", where)
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in raw_params.items()}
        try:
            spec = create(kind, params)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
        state = document.get("state")
        if state is not None:
            json_field(document, "state", "a string", where)
    except (KeyError, AttributeError, TypeError, OverflowError) as exc:
        # A value of the right JSON type that a constructor still refuses (an unknown parameter...).
        raise ValueError(f"{where}: {type(exc).__name__}: {exc}") from None
    if state is None:
        try:
            retrained = spec.train(prior, gamma, horizon, seed)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"{source}: {exc}") from None
        retrained.offline_seconds = float(document.get("offline_seconds", retrained.offline_seconds))
        retrained.offline_cpu_seconds = _recorded_cpu(document, retrained.offline_cpu_seconds)
        return retrained
    try:
        core = _core.Agent.load(state, prior.n_states, prior.n_actions, gamma, horizon)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"{source}: field 'state': {exc}") from None
    offline = float(document.get("offline_seconds", 0.0))
    cpu = _recorded_cpu(document, math.nan)
    return TrainedAgent(spec, core, prior, gamma, horizon, seed, offline, cpu, recorded_work(document))


def _recorded_cpu(document: dict[str, Any], default: float) -> float:
    """The offline CPU time an agent file records (``None`` or absent: ``default``)."""
    value = document.get("offline_cpu_seconds")
    return default if value is None else float(value)
