"""Cell ids: the readable, stable spelling of an agent's parameters (defaults included) that names
a cell and its files."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import fields
from typing import Any

__all__ = ["REWARDS_SUFFIX", "format_value", "params_id"]

REWARDS_SUFFIX = "+rewards"


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        # -0.0 is the same setting as 0.0 (every agent computes with it alike): one cell, one id.
        return repr(value + 0.0)
    if isinstance(value, (tuple, list)):
        digest = hashlib.sha256("\n".join(map(str, value)).encode()).hexdigest()[:10]
        return f"{len(value)}formulas-{digest}"
    return str(value)


def params_id(spec: Any, raw: dict[str, Any]) -> str:
    """``k=v,...`` of every parameter, defaults included, in the agent's field order.

    Values are the agent's normalised values (``epsilon = 1`` and ``epsilon = 1.0`` give the same
    id), so ids do not depend on how the configuration spells a number or orders its keys. Defaults
    are part of the id: if a default changes, the cells run with the old one keep their old id and
    are not mistaken for results of the new default.
    """
    if spec is None:
        return ",".join(f"{k}={format_value(v)}" for k, v in raw.items())
    if not dataclasses.is_dataclass(spec):  # a Python agent without dataclass fields
        return ",".join(f"{k}={format_value(v)}" for k, v in spec.params.items())
    return ",".join(f"{f.name}={format_value(getattr(spec, f.name))}" for f in fields(spec) if f.init)
