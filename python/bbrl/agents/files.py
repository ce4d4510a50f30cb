"""Reading the trained-agent file (``bbrl-agent``, version 1) back into a trained agent."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from .. import _core
from ..distributions import from_document
from .file_format import FORMAT_NAME, FORMAT_VERSION, recorded_work
from .python import TrainedPythonAgent
from .registry import create
from .trained import TrainedAgent

__all__ = ["load"]


def load(path: str | os.PathLike[str]) -> TrainedAgent:
    """Reads an agent written by :meth:`TrainedAgent.save`."""
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"agent file {str(file)!r} not found")
    try:
        document = json.loads(file.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{file}: invalid JSON: {exc}") from None
    if (
        not isinstance(document, dict)
        or document.get("format") != FORMAT_NAME
        or document.get("version") != FORMAT_VERSION
    ):
        raise ValueError(f"{file}: not a bbrl agent file (format bbrl-agent, version 1)")
    if isinstance(document.get("python"), dict):
        try:
            prior = from_document(document["prior"], str(file))
            return TrainedPythonAgent.from_document(document, prior, str(file))
        except (KeyError, AttributeError, TypeError) as exc:
            raise ValueError(f"{file}: malformed agent file: {exc}") from None
    try:
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in document["params"].items()}
        spec = create(document["kind"], params)
        prior = from_document(document["prior"], str(file))
        gamma, horizon, seed = document["gamma"], document["horizon"], document["seed"]
        state = document.get("state")
    except (KeyError, AttributeError, TypeError) as exc:
        raise ValueError(f"{file}: malformed agent file: {exc}") from None
    if state is None:
        retrained = spec.train(prior, gamma, horizon, seed)
        retrained.offline_seconds = float(document.get("offline_seconds", retrained.offline_seconds))
        retrained.offline_cpu_seconds = _recorded_cpu(document, retrained.offline_cpu_seconds)
        return retrained
    core = _core.Agent.load(state, prior.n_states, prior.n_actions, gamma, horizon)
    offline = float(document.get("offline_seconds", 0.0))
    cpu = _recorded_cpu(document, math.nan)
    return TrainedAgent(spec, core, prior, gamma, horizon, seed, offline, cpu, recorded_work(document))


def _recorded_cpu(document: dict[str, Any], default: float) -> float:
    """The offline CPU time an agent file records (``None`` or absent: ``default``)."""
    value = document.get("offline_cpu_seconds")
    return default if value is None else float(value)
