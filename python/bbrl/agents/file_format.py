"""The trained-agent file: JSON of format ``bbrl-agent``, version 1 (the fields every trained agent has)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from .. import _core
from ..fileio import json_document_bytes, write_atomic

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "jsonable", "recorded_work", "work_document", "write_agent_file"]

FORMAT_NAME = "bbrl-agent"
FORMAT_VERSION = 1


def write_agent_file(trained: Any, path: str | os.PathLike[str], **extra: Any) -> Path:
    """Writes ``trained`` (a :class:`bbrl.agents.TrainedAgent`) as an agent file, atomically: its
    kind, parameters, label, setting, offline times, details and prior, plus ``extra`` fields
    (``state`` of a built-in agent, ``python`` of a Python agent)."""
    document = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "kind": trained.spec.kind,
        "params": jsonable(trained.spec.params),
        "label": trained.label,
        "gamma": trained.gamma,
        "horizon": trained.horizon,
        "seed": trained.seed,
        "offline_seconds": trained.offline_seconds,
        "offline_cpu_seconds": None if math.isnan(trained.offline_cpu_seconds) else trained.offline_cpu_seconds,
        "offline_work": work_document(trained.offline_work),
        "details": trained.details,
        "prior": trained.prior.to_document(compact=True),
        **extra,
    }
    return write_atomic(path, json_document_bytes(document))


def work_document(work: Any) -> dict[str, int] | None:
    """Offline work counts for the file: ``{unit: count}`` (None: unknown)."""
    if work is None:
        return None
    return {unit: int(n) for unit, n in zip(_core.work_units(), work, strict=True)}


def recorded_work(document: dict[str, Any]) -> list[int] | None:
    """The offline work counts an agent file records, in the core's unit order (absent, or a
    unit missing: None, unknown)."""
    value = document.get("offline_work")
    if not isinstance(value, dict):
        return None
    try:
        return [int(value[unit]) for unit in _core.work_units()]
    except (KeyError, TypeError, ValueError):
        return None


def jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters for a JSON file: tuples as lists, anything JSON cannot hold as its repr."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, tuple):
            v = list(v)
        try:
            json.dumps(v)
        except TypeError:
            v = repr(v)
        out[str(k)] = v
    return out
