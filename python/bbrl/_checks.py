"""Checks of user-given values shared by the public modules, so each rule and message is stated once."""

from __future__ import annotations

from typing import Any

import numpy as np


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
