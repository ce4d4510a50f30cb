"""The 95% normal interval of a mean, stated once: every result table, run and report uses it.

Non-finite values are refused (a NaN would come out as a NaN interval, an infinity as an infinite
mean), naming the function and the positions. Finite values near the float range (about
±1.8e308), whose sums or squares overflow, are taken again in units scaled by a power of two, so
a mean or a spread within the range comes out exact; only a result beyond the range is ``inf``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .checks import finite_values

__all__ = ["Z_95_ONE_SIDED", "Z_95_TWO_SIDED", "ci95_halfwidth", "mean_ci95", "overflow_scale"]

#: Two-sided 95% normal quantile used by the original for intervals and paired tests.
Z_95_TWO_SIDED = 1.96
#: One-sided 95% normal quantile (the paper's appendix C; defined but unused by the original's export).
Z_95_ONE_SIDED = 1.645


def overflow_scale(*arrays: Any) -> float:
    """A power of two ``s`` with every value of ``arrays`` within ``[-2 s, 2 s]`` (1 when they
    are all 0): dividing by it is exact (short of subnormals) and leaves sums and squares of a
    few values far from overflow. The statistics take their values in these units again when the
    plain computation overflows."""
    largest = max((float(np.max(np.abs(a))) for a in arrays if np.size(a)), default=0.0)
    if largest == 0.0:
        return 1.0
    return math.ldexp(1.0, math.frexp(largest)[1] - 1)


def _halfwidth(values: np.ndarray) -> float:
    """``1.96 s / sqrt(N)`` of two or more finite values, exact for values whose squares overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        half = Z_95_TWO_SIDED * float(np.std(values, ddof=1)) / math.sqrt(values.size)
    if not math.isfinite(half):  # the spread of values near the float range: in scaled units
        scale = overflow_scale(values)
        half = Z_95_TWO_SIDED * float(np.std(values / scale, ddof=1)) / math.sqrt(values.size) * scale
    return half


def _mean(values: np.ndarray) -> float:
    """The mean, exact for finite values whose sum overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(values.mean())
    if not math.isfinite(mean):
        scale = overflow_scale(values)
        mean = float((values / scale).mean()) * scale
    return mean


def ci95_halfwidth(values: np.ndarray) -> float:
    """Half-width of the 95% interval of the mean: ``1.96 * s / sqrt(N)``, ``s`` with divisor N - 1.

    NaN when there is a single value (no spread can be estimated); ``inf`` only when the
    half-width is beyond the float range.

    Raises:
        ValueError: a NaN or an infinite value (named with its position).
    """
    values = finite_values(values, "ci95_halfwidth: sample 'values'")
    if values.size < 2:
        return math.nan
    return _halfwidth(values)


def mean_ci95(values: np.ndarray) -> tuple[float, float]:
    """The mean and the half-width of its 95% interval (SPEC 3.5): ``mean ± 1.96 s / sqrt(N)``
    (the half-width as :func:`ci95_halfwidth`: NaN for a single value).

    Raises:
        ValueError: no values, or a NaN or an infinite value (named with its position).
    """
    values = finite_values(values, "mean_ci95: sample 'values'")
    if values.size == 0:
        raise ValueError("no values")
    return _mean(values), math.nan if values.size < 2 else _halfwidth(values)
