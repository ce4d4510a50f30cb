"""The 95% normal interval of a mean, stated once: every result table, run and report uses it."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Z_95_ONE_SIDED", "Z_95_TWO_SIDED", "ci95_halfwidth", "mean_ci95"]

#: Two-sided 95% normal quantile used by the original for intervals and paired tests.
Z_95_TWO_SIDED = 1.96
#: One-sided 95% normal quantile (the paper's appendix C; defined but unused by the original's export).
Z_95_ONE_SIDED = 1.645


def ci95_halfwidth(values: np.ndarray) -> float:
    """Half-width of the 95% interval of the mean: ``1.96 * s / sqrt(N)``, ``s`` with divisor N - 1.

    NaN when there is a single value (no spread can be estimated).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return math.nan
    return Z_95_TWO_SIDED * float(np.std(values, ddof=1)) / math.sqrt(values.size)


def mean_ci95(values: np.ndarray) -> tuple[float, float]:
    """The mean and the half-width of its 95% interval (SPEC 3.5): ``mean ± 1.96 s / sqrt(N)``."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise ValueError("no values")
    return float(values.mean()), ci95_halfwidth(values)
