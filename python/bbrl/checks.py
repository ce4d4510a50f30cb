"""Checks of user-given numbers shared by the public modules, so each rule and message is stated once."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["count", "discount", "finite_values", "flag", "index", "integer", "number", "seed"]


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


def index(value: Any, name: str, n: int) -> int:
    """``value`` as an index in 0 to ``n - 1`` (NumPy integers are fine; bools and floats are not),
    every bad value refused by one message naming it and the allowed range.

    Raises:
        TypeError: not an integer.
        ValueError: outside 0 to ``n - 1``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int from 0 to {n - 1}, got {value!r} ({type(value).__name__})")
    if not 0 <= value < n:
        raise ValueError(f"{name} {value} is out of range: allowed 0 to {n - 1}")
    return int(value)


#: How many positions of non-finite values a refusal lists.
_SHOWN_POSITIONS = 10


def finite_values(values: Any, where: str, allow_nan: bool = False) -> np.ndarray:
    """``values`` as a float64 array, refused when it holds a NaN or an infinity (with
    ``allow_nan``, an infinity only): the one check of the statistics' samples, whose NaN would
    otherwise come out as a number (a p-value of 0, a best algorithm).

    Args:
        where: the function and the argument, as the message names them, e.g.
            ``"paired_z_test: sample 'a'"``.

    Raises:
        ValueError: naming ``where``, how many values are not finite and their positions in the
            flattened array (the first ten).
    """
    array = np.asarray(values, dtype=np.float64)
    bad = np.isinf(array) if allow_nan else ~np.isfinite(array)
    if bad.any():
        positions = np.flatnonzero(bad)
        kind = "infinite" if allow_nan else "non-finite"
        plural = "s" if positions.size > 1 else ""
        shown = positions[:_SHOWN_POSITIONS].tolist()
        at = f"index {shown[0]}" if positions.size == 1 else f"indices {shown}"
        if positions.size > _SHOWN_POSITIONS:
            at += f" (the first {_SHOWN_POSITIONS})"
        what = "inf" if allow_nan else "NaN or inf"
        raise ValueError(f"{where} holds {positions.size} {kind} value{plural} ({what}) at {at}")
    return array


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


def discount(value: Any, name: str = "gamma") -> float:
    """A discount factor in [0, 1) (an int or a float; NaN is refused).

    Raises:
        TypeError: not a number.
        ValueError: outside [0, 1).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (0.0 <= value < 1.0):  # also rejects NaN
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def seed(value: Any, name: str = "seed") -> int:
    """A seed: an int in [0, 2**64) (the core's streams take 64-bit seeds).

    Raises:
        TypeError: not an integer.
        ValueError: negative or too large.
    """
    value = integer(value, name, 0)
    if value >= 2**64:
        raise ValueError(f"{name} must be < 2**64, got {value}")
    return value
