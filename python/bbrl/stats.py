"""Statistics of the protocol and of the export (SPEC 3.5, 5.2, 5.3).

Everything here works on plain arrays (one return per test MDP, the same MDPs for every agent),
so it serves a single :class:`bbrl.Run` as well as a whole grid loaded with :func:`bbrl.results.load`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = [
    "BOUND_FACTOR",
    "BOUND_START_SECONDS",
    "Z_95_ONE_SIDED",
    "Z_95_TWO_SIDED",
    "PairedZTest",
    "best_per_algorithm",
    "best_under_bounds",
    "bound_grid",
    "ci95_halfwidth",
    "mean_ci95",
    "not_different_from_best",
    "paired_z",
    "paired_z_test",
]

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


@dataclass(frozen=True)
class PairedZTest:
    """Outcome of :func:`paired_z_test`.

    Attributes:
        z: ``|mean(d)| / sqrt(s_d^2 / N)`` (unbiased variance).
        threshold: 1.96 (two-sided, the original's export) or 1.645 (one-sided, the paper's appendix C).
        p_value: the normal tail probability of ``z`` (two tails for the two-sided test).
        significant: ``z >= threshold``; the original calls a pair *not* significantly different
            iff ``z < threshold``.
    """

    z: float
    threshold: float
    p_value: float
    significant: bool


def paired_z_test(a: np.ndarray, b: np.ndarray, one_sided: bool = False) -> PairedZTest:
    """The paired Z-test of SPEC 5.2 between two agents' returns on the same MDPs.

    By default the original export's version: two-sided, threshold 1.96, unbiased variance of the
    differences. ``one_sided=True`` selects the threshold 1.645 of the paper's appendix C (the
    statistic is unchanged: the comparison is always of the better mean against the other, and
    the unbiased variance is kept). The test assumes N >= 30, as the original (which only asserts it).
    """
    from scipy.special import ndtr

    z = paired_z(a, b)
    tail = float(1.0 - ndtr(z)) if math.isfinite(z) else 0.0
    threshold = Z_95_ONE_SIDED if one_sided else Z_95_TWO_SIDED
    return PairedZTest(
        z=z, threshold=threshold, p_value=tail if one_sided else min(1.0, 2.0 * tail), significant=z >= threshold
    )


def best_per_algorithm(cells: pl.DataFrame, within: Sequence[str] = (), algorithm: str = "algorithm") -> pl.DataFrame:
    """The best-mean row of each algorithm (the bold rows of the original's tables, the paper's
    Figs. 9 and 13), in the order of first appearance; on a tie the first row wins.

    Args:
        cells: one row per agent setting with at least the columns ``algorithm`` and ``mean``.
        within: columns that separate independent comparisons, e.g. ``("experiment", "prior")``.
    """
    keys = [*within, algorithm]
    indexed = cells.with_row_index("_row")
    best = (
        indexed.sort(["mean", "_row"], descending=[True, False])
        .group_by(keys, maintain_order=True)
        .first()
        .sort("_row")
        .drop("_row")
    )
    return best.select(cells.columns)


def not_different_from_best(returns: Sequence[np.ndarray], one_sided: bool = False) -> int:
    """How many of ``returns`` (sorted by mean, best first) are kept by SPEC 5.3 item 3, step 4:
    the best, then each next one *as long as* it is not significantly different from the best
    (``z < threshold``), stopping at the first significant one even if a later one would not be.

    Returns 0 for an empty list.
    """
    if not returns:
        return 0
    best = np.asarray(returns[0], dtype=np.float64)
    kept = 1
    for other in returns[1:]:
        if paired_z_test(best, other, one_sided).significant:
            break
        kept += 1
    return kept


#: First bound of the time grids of the best-algorithm map: 0.01 ms, as the original.
BOUND_START_SECONDS = 1e-5
#: Ratio between successive bounds, as the original.
BOUND_FACTOR = 5.0


def bound_grid(maximum: float, start: float = BOUND_START_SECONDS, factor: float = BOUND_FACTOR) -> list[float]:
    """``start * factor**k`` for k = 0, 1, ... up to the first value ``>= maximum`` (at least ``start``).

    The original stops its online grid at the last bound ``<= max`` and its offline grid at the
    last bound ``< max``, so that the slowest agents of a grid never appear in the map. Here the
    grids end at the first bound that admits every agent, so the top-right corner of the map
    compares every algorithm (a deliberate difference, besides the two bug fixes).
    """
    if not math.isfinite(maximum):
        raise ValueError(f"maximum must be finite, got {maximum}")
    bounds = [start]
    while bounds[-1] < maximum:
        bounds.append(bounds[-1] * factor)
    return bounds


def best_under_bounds(
    algorithms: Sequence[str],
    means: Sequence[float],
    offline_seconds: Sequence[float],
    online_seconds: Sequence[float],
    returns: Sequence[np.ndarray],
    horizon: int,
    online_bounds: Sequence[float] | None = None,
    offline_bounds: Sequence[float] | None = None,
    one_sided: bool = False,
) -> pl.DataFrame:
    """The best algorithms under an offline and an online time bound (SPEC 5.3 item 3).

    For every point (x, y) of a grid of online bounds x (seconds per *trajectory*) and offline
    bounds y (seconds):

    1. keep the agents with online time per trajectory ``<= x`` and offline time ``<= y``;
    2. keep each algorithm's best-mean agent (the first one on a tie);
    3. sort them by mean, descending;
    4. choose the best, then the next ones as long as each is not significantly different from
       the best (paired Z-test, :func:`paired_z_test`), stopping at the first significant one.

    The default grids are the original's ``1e-5 s * 5**k`` (0.01 ms, factor 5), extended to the
    first bound that admits every agent (:func:`bound_grid`; the original stopped below the
    largest times).

    Two bugs of the original are fixed here:

    * a point where no agent meets the bounds is reported as ``["none"]``; the original added it
      to the series of the first algorithm in its list;
    * the online bound per decision (``online_bound_seconds_per_step`` = x / T) is scaled once,
      by this experiment's horizon T; the original divided by 250 again for every experiment, so
      only its first experiment's x axis was right.

    Args:
        algorithms, means, offline_seconds, online_seconds: one entry per agent setting;
            ``online_seconds`` is the mean online time per trajectory.
        returns: one array of per-MDP returns per agent, over the same MDPs (paired).
        horizon: T, the decisions per trajectory, to express the online bound per decision.

    Returns:
        One row per grid point: ``online_bound_seconds`` (per trajectory),
        ``online_bound_seconds_per_step``, ``offline_bound_seconds`` and ``algorithms`` (the
        chosen algorithms, best first, or ``["none"]``), with ``best`` the first of them.
    """
    n = len(algorithms)
    if not (len(means) == len(offline_seconds) == len(online_seconds) == len(returns) == n):
        raise ValueError("algorithms, means, offline_seconds, online_seconds and returns must have equal lengths")
    means_a = np.asarray(means, dtype=np.float64)
    offline = np.asarray(offline_seconds, dtype=np.float64)
    online = np.asarray(online_seconds, dtype=np.float64)
    if online_bounds is None:
        online_bounds = bound_grid(float(online.max()) if n else 0.0)
    if offline_bounds is None:
        offline_bounds = bound_grid(float(offline.max()) if n else 0.0)
    rows: dict[str, list] = {
        "online_bound_seconds": [],
        "online_bound_seconds_per_step": [],
        "offline_bound_seconds": [],
        "algorithms": [],
        "best": [],
    }
    for x in online_bounds:
        for y in offline_bounds:
            admitted = np.flatnonzero((online <= x) & (offline <= y))
            best_of: dict[str, int] = {}
            for i in admitted:  # ascending order: the first agent wins a tie
                name = algorithms[i]
                if name not in best_of or means_a[i] > means_a[best_of[name]]:
                    best_of[name] = int(i)
            # Stable sort: equal means keep the order of first appearance.
            ranked = sorted(best_of.values(), key=lambda i: (-means_a[i], i))
            kept = not_different_from_best([returns[i] for i in ranked], one_sided)
            chosen = [algorithms[i] for i in ranked[:kept]] or ["none"]
            rows["online_bound_seconds"].append(float(x))
            rows["online_bound_seconds_per_step"].append(float(x) / horizon)
            rows["offline_bound_seconds"].append(float(y))
            rows["algorithms"].append(chosen)
            rows["best"].append(chosen[0])
    return pl.DataFrame(
        rows, schema={**{k: pl.Float64 for k in list(rows)[:3]}, "algorithms": pl.List(pl.String), "best": pl.String}
    )
