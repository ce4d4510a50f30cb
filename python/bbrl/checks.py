"""Checks of user-given numbers shared by the public modules, so each rule and message is stated once."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["count", "flag", "integer", "number"]


def integer(value: Any, name: str, minimum: int = 0) -> int:
    """``value`` as an int >= ``minimum`` (NumPy integers are fine; bools and floats are not).

    Raises:
        TypeError: not an integer.
        ValueError: below ``minimum``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def count(value: Any, name: str, minimum: int, optional: bool = False) -> int | None:
    """An int >= ``minimum`` (or ``None`` when ``optional``) where every bad value is a
    ``ValueError`` naming ``name`` (the evaluators' arguments: replay, value error)."""
    if value is None and optional:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        allowed = " (or None)" if optional else ""
        raise ValueError(f"{name} must be an int >= {minimum}{allowed}, got {value!r}")
    return int(value)


def number(value: Any, name: str) -> float:
    """A finite float (an int is fine; a bool or a string is not).

    Raises:
        TypeError: not a number.
        ValueError: NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def flag(value: Any, name: str) -> bool:
    """``True`` or ``False`` exactly.

    Raises:
        TypeError: anything else (1, "true", None...).
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value
