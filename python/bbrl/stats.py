"""Statistics of the protocol (SPEC 3.5, 5.2)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Z_95_TWO_SIDED", "ci95_halfwidth", "paired_z"]

#: Two-sided 95% normal quantile used by the original for intervals and paired tests.
Z_95_TWO_SIDED = 1.96


def ci95_halfwidth(values: np.ndarray) -> float:
    """Half-width of the 95% interval of the mean: ``1.96 * s / sqrt(N)``, ``s`` with divisor N - 1.

    NaN when there is a single value (no spread can be estimated).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return math.nan
    return Z_95_TWO_SIDED * float(np.std(values, ddof=1)) / math.sqrt(values.size)


def paired_z(a: np.ndarray, b: np.ndarray) -> float:
    """The paired Z statistic of SPEC 5.2: ``|mean(d)| / sqrt(s_d^2 / N)`` with ``d = a - b`` over
    the same MDPs and the unbiased variance. Infinite when the differences are constant and
    non-zero, 0 when they are all zero."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired samples must be 1-D and of equal length, got {a.shape} and {b.shape}")
    if a.size < 2:
        raise ValueError("a paired test needs at least 2 pairs")
    d = a - b
    mean = float(d.mean())
    var = float(d.var(ddof=1))
    if var == 0.0:
        return 0.0 if mean == 0.0 else math.inf
    return abs(mean) / math.sqrt(var / d.size)
