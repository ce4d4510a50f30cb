"""Statistics of the protocol and of the export (SPEC 3.5, 5.2, 5.3).

Everything here works on plain arrays (one return per test MDP, the same MDPs for every agent),
so it serves a single :class:`bbrl.Run` as well as a whole grid loaded with :func:`bbrl.protocol.results.load`.
The 95% interval itself is :mod:`bbrl.intervals` (re-exported here).

Samples holding a NaN or an infinity are refused by every statistic here, with a ValueError naming
the function, the argument and the positions (a NaN would otherwise come out as a number: a
p-value of 0, a best algorithm). Finite samples give finite results, or the documented ``inf``
(a paired Z of constant non-zero differences; a value beyond the float range, about ±1.8e308:
sums and squares that overflow are taken again in units scaled by a power of two, so the
results within the range are exact).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from .. import _core
from ..checks import finite_values
from ..intervals import Z_95_ONE_SIDED, Z_95_TWO_SIDED, ci95_halfwidth, mean_ci95, overflow_scale
from ..protocol.schema import Col

__all__ = [
    "BOUND_FACTOR",
    "BOUND_START_SECONDS",
    "MIN_PAIRS_FOR_Z",
    "SERIES_125",
    "Z_95_ONE_SIDED",
    "Z_95_TWO_SIDED",
    "PairedZTest",
    "best_per_algorithm",
    "best_under_bounds",
    "bound_grid",
    "ci95_halfwidth",
    "holm",
    "iqm",
    "map_agreement",
    "mean_ci95",
    "normalized_scores",
    "not_different_from_best",
    "paired_z",
    "paired_z_test",
    "probability_of_improvement",
    "series_grid",
    "stratified_bootstrap_ci",
    "stratified_bootstrap_cis",
    "tied_times",
]


def _paired(a: object, b: object, function: str) -> tuple[np.ndarray, np.ndarray]:
    """Two paired samples as float64 arrays, checked: finite, 1-D, of one length, 2 or more."""
    x = finite_values(a, f"{function}: sample 'a'")
    y = finite_values(b, f"{function}: sample 'b'")
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"paired samples must be 1-D and of equal length, got {x.shape} and {y.shape}")
    if x.size < 2:
        raise ValueError("a paired test needs at least 2 pairs")
    return x, y


def _z(x: np.ndarray, y: np.ndarray) -> float:
    """The paired Z of two checked samples (see :func:`paired_z`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = x - y
        mean = float(d.mean())
        var = float(d.var(ddof=1))
    if not (math.isfinite(mean) and math.isfinite(var)):
        # Values near the float range, whose differences, sum or squares overflow: Z does not
        # depend on the unit, so it is taken in units scaled by a power of two.
        scale = overflow_scale(x, y)
        d = x / scale - y / scale
        mean, var = float(d.mean()), float(d.var(ddof=1))
    spread = math.sqrt(var / d.size)
    if spread == 0.0:  # constant differences (or a variance below the float range)
        return 0.0 if mean == 0.0 else math.inf
    return abs(mean) / spread


def _mean_difference(x: np.ndarray, y: np.ndarray) -> float:
    """``mean(x - y)`` of two checked samples: ±inf only when it is beyond the float range."""
    with np.errstate(over="ignore", invalid="ignore"):
        difference = float((x - y).mean())
    if not math.isfinite(difference):
        scale = overflow_scale(x, y)
        difference = float((x / scale - y / scale).mean()) * scale
    return difference


def paired_z(a: np.ndarray, b: np.ndarray) -> float:
    """The paired Z statistic of SPEC 5.2: ``|mean(d)| / sqrt(s_d^2 / N)`` with ``d = a - b`` over
    the same MDPs and the unbiased variance. Infinite when the differences are constant and
    non-zero, 0 when they are all zero; finite otherwise.

    Raises:
        ValueError: samples of other shapes or fewer than 2 pairs, or a sample holding a NaN or an
            infinity (named with its positions).
    """
    return _z(*_paired(a, b, "paired_z"))


@dataclass(frozen=True)
class PairedZTest:
    """Outcome of :func:`paired_z_test`.

    Attributes:
        z: ``|mean(d)| / sqrt(s_d^2 / N)`` with ``d = a - b`` (unbiased variance).
        threshold: 1.96 (two-sided, the original's export) or 1.645 (one-sided, the paper's appendix C).
        p_value: the normal tail probability of ``z`` (two tails for the two-sided test).
        significant: ``z >= threshold``; the original calls a pair *not* significantly different
            iff ``z < threshold``.
        mean_difference: ``mean(a - b)``, in return units.
        better: ``"a"`` or ``"b"``, the side with the larger mean return (``"neither"`` if equal).
        n: the number of pairs.
    """

    z: float
    threshold: float
    p_value: float
    significant: bool
    mean_difference: float = math.nan
    better: str = "neither"
    n: int = 0


#: Below this many pairs the normal approximation of the paired test is not trusted.
MIN_PAIRS_FOR_Z = 30


def _returns_of(value: object) -> np.ndarray:
    """The per-MDP returns of a :class:`bbrl.Run` (anything with ``returns``) or an array."""
    returns = getattr(value, "returns", value)
    return np.asarray(returns, dtype=np.float64)


def _describe_run(run: Any) -> str:
    """A run's experiment as the refusal of :func:`paired_z_test` names it."""
    last = run.first_mdp + run.n_mdps - 1
    return (
        f"{run.agent!r} on {run.experiment!r} (fingerprint {run.fingerprint}, MDPs {run.first_mdp}..{last}, "
        f"gamma {run.gamma}, T {run.horizon}, seed {run.seed})"
    )


def _check_paired_runs(a: Any, b: Any) -> None:
    """Refuses two :class:`bbrl.Run` objects whose returns are not on the same test MDPs: another
    experiment fingerprint (test distribution, N, gamma, T, seed) or another range of MDPs. Arrays
    are not checked (the caller's responsibility)."""
    if not (hasattr(a, "returns") and hasattr(b, "returns")):
        return
    for name, run in (("a", a), ("b", b)):
        if getattr(run, "fingerprint", None) is None:
            raise ValueError(
                f"paired_z_test: run {name} has no experiment fingerprint, so its test MDPs cannot be checked; "
                "pass the returns arrays (a.returns, b.returns) to pair them on your own responsibility"
            )
    if (a.fingerprint, a.first_mdp, a.n_mdps) != (b.fingerprint, b.first_mdp, b.n_mdps):
        raise ValueError(
            f"paired_z_test: the runs are not on the same test MDPs: a is {_describe_run(a)}, b is "
            f"{_describe_run(b)}; a paired test compares runs of one Experiment (same test distribution, N, "
            "gamma, T and seed) on the same MDPs"
        )


def paired_z_test(a: object, b: object, one_sided: bool = False) -> PairedZTest:
    """The paired Z-test between two agents' returns on the same MDPs.

    Two :class:`bbrl.Run` objects are checked: they must carry the same experiment fingerprint
    (:attr:`bbrl.Run.fingerprint`: test distribution, N, gamma, T and seed) and cover the same test
    MDPs. Arrays are taken as given: that they hold returns on the same MDPs, in the same order, is
    the caller's responsibility (a results folder's cells carry the fingerprint in their
    ``experiment_fingerprint`` column, to check before pairing their returns).

    Args:
        a, b: two :class:`bbrl.Run` objects of the same experiment, or two arrays of per-MDP returns
            in the same MDP order.
        one_sided: threshold 1.645 (the paper's appendix C) instead of 1.96 (the original's export).
            The statistic is unchanged: the better mean is always compared against the other.

    Returns:
        z, p, whether the difference is significant, the mean difference ``mean(a - b)`` and which
        side is better.

    Raises:
        ValueError: two runs of different experiments or MDPs (naming both), a run without a
            fingerprint (pass its ``returns`` instead), arrays of different lengths, or a sample
            holding a NaN or an infinity (named with its positions: such a test has no answer).

    Warns:
        UserWarning: below :data:`MIN_PAIRS_FOR_Z` pairs, where the normal approximation is poor
        (the original only asserted N >= 30).
    """
    from scipy.special import ndtr

    _check_paired_runs(a, b)
    x, y = _paired(_returns_of(a), _returns_of(b), "paired_z_test")
    z = _z(x, y)
    if x.size < MIN_PAIRS_FOR_Z:
        import warnings

        warnings.warn(
            f"paired Z-test on {x.size} pairs: the normal approximation needs about {MIN_PAIRS_FOR_Z} or more",
            UserWarning,
            stacklevel=2,
        )
    tail = float(1.0 - ndtr(z)) if math.isfinite(z) else 0.0
    threshold = Z_95_ONE_SIDED if one_sided else Z_95_TWO_SIDED
    difference = _mean_difference(x, y)
    better = "a" if difference > 0 else "b" if difference < 0 else "neither"
    return PairedZTest(
        z=z,
        threshold=threshold,
        p_value=tail if one_sided else min(1.0, 2.0 * tail),
        significant=z >= threshold,
        mean_difference=difference,
        better=better,
        n=int(x.size),
    )


def holm(p_values: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down correction: which of ``m`` hypotheses are rejected at family-wise level
    ``alpha``. The smallest p-value is compared with alpha / m, the next with alpha / (m - 1), and
    so on, stopping at the first that is not rejected.

    Raises:
        ValueError: a p-value that is NaN or infinite (named with its position).
    """
    finite_values(p_values, "holm: sample 'p_values'")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    rejected = [False] * m
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected


def best_per_algorithm(cells: pl.DataFrame, within: Sequence[str] = (), algorithm: str = "algorithm") -> pl.DataFrame:
    """The best-mean row of each algorithm (the bold rows of the original's tables, the paper's
    Figs. 9 and 13), in the order of first appearance; on a tie the first row wins.

    Args:
        cells: one row per agent setting with at least the columns ``algorithm`` and ``mean``.
        within: columns that separate independent comparisons, e.g. ``("experiment", "prior")``.

    Raises:
        ValueError: a mean that is missing, NaN or infinite (a NaN sorts above every number: it
            would be the best), naming the column and the rows.
    """
    keys = [*within, algorithm]
    # In a raced grid's analysis a stopped setting ranks by its paired estimate over the N MDPs
    # (bbrl.analysis.racing.with_paired_means), not by the mean of the first MDPs it ran.
    score = Col.PAIRED_MEAN if Col.PAIRED_MEAN in cells.columns else Col.MEAN
    scores = cells[score].cast(pl.Float64)
    if scores.null_count():
        row = int(scores.is_null().arg_true()[0])
        raise ValueError(f"best_per_algorithm: column {score!r} has no value in row {row}")
    finite_values(scores.to_numpy(), f"best_per_algorithm: column {score!r}")
    indexed = cells.with_row_index("_row")
    best = (
        indexed.sort([score, "_row"], descending=[True, False])
        .group_by(keys, maintain_order=True)
        .first()
        .sort("_row")
        .drop("_row")
    )
    return best.select(cells.columns)


def not_different_from_best(
    returns: Sequence[np.ndarray], one_sided: bool = False, correction: str | None = None
) -> int:
    """How many of ``returns`` (sorted by mean, best first) are kept: the best, then each next one
    *as long as* it is not significantly different from the best, stopping at the first
    significant one even if a later one would not be (the original's rule).

    Each array holds returns on test MDPs ``0..n`` in order; a configuration stopped early by a
    race has fewer, and is compared with the best on the MDPs both ran (still paired).

    Args:
        correction: ``None``: each comparison at its own 5% level (the original). ``"holm"``: the
            comparisons of the best with the others form one family, corrected with :func:`holm`
            at a 5% family-wise level (one-sided p-values with ``one_sided``).

    Returns 0 for an empty list.

    Raises:
        ValueError: an array holding a NaN or an infinity (named by its position in ``returns``).
    """
    if not returns:
        return 0
    if correction not in (None, "holm"):
        raise ValueError(f"correction must be None or 'holm', got {correction!r}")
    arrays = [finite_values(r, f"not_different_from_best: sample 'returns[{i}]'") for i, r in enumerate(returns)]
    best = arrays[0]
    pairs = []
    for other in arrays[1:]:
        common = min(best.size, other.size)
        pairs.append((best[:common], other[:common]))
    if correction is None:
        # paired_z_test's verdict (z against the threshold) without its p-value, whose normal tail
        # imports scipy: a third of a second of a report that uses no p-value.
        threshold = Z_95_ONE_SIDED if one_sided else Z_95_TWO_SIDED
        different = [paired_z(a, b) >= threshold for a, b in pairs]
    else:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a map warns once, not per comparison
            different = holm([paired_z_test(a, b, one_sided).p_value for a, b in pairs])
    kept = 1
    for is_different in different:
        if is_different:
            break
        kept += 1
    return kept


#: The lattice of the original's time grids: 0.01 ms times powers of 5.
BOUND_START_SECONDS = 1e-5
#: Ratio between successive bounds, as the original.
BOUND_FACTOR = 5.0


def bound_grid(
    maximum: float, start: float = BOUND_START_SECONDS, factor: float = BOUND_FACTOR, minimum: float | None = None
) -> list[float]:
    """Bounds ``start * factor**k`` (k any integer) from the first one ``>= minimum`` to the first
    one ``>= maximum``.

    With ``minimum`` the cheapest agent's time, the grid starts where the first agent fits
    (without it, at ``start`` as the original). Bounds stay on the original's lattice, so two runs
    whose cheapest agent moves a little give the same grid. The original also stopped below the
    largest times, so that the slowest agents never appeared; here the grid ends at the first bound
    that admits every agent. A ``minimum`` that is None, not finite or <= 0 starts at ``start``.

    Raises:
        ValueError: ``maximum`` not finite, ``start`` not finite and > 0, or ``factor`` not finite
            and > 1 (the grid would never reach ``maximum``).
    """
    if not math.isfinite(maximum):
        raise ValueError(f"maximum must be finite, got {maximum}")
    if not (math.isfinite(start) and start > 0.0):
        raise ValueError(f"start must be finite and > 0, got {start}")
    if not (math.isfinite(factor) and factor > 1.0):
        raise ValueError(f"factor must be finite and > 1, got {factor}")
    if minimum is not None and math.isfinite(minimum) and minimum > 0.0:
        k = math.ceil(math.log(minimum / start) / math.log(factor) - 1e-9)
    else:
        k = 0

    def lattice(j: int) -> float:  # exact powers, so that the same bound is the same float
        return start * factor**j if j >= 0 else start / factor**-j

    bounds = [lattice(k)]
    while bounds[-1] < maximum * (1 - 1e-12):
        k += 1
        bounds.append(lattice(k))
    return bounds


#: The mantissas of the budgets' fixed lattice: 1, 2 and 5 times a power of ten, in seconds.
SERIES_125 = (1, 2, 5)


def series_grid(maximum: float, minimum: float | None = None) -> list[float]:
    """Bounds on the fixed 1-2-5 series (1, 2 and 5 times 10**k seconds, k any integer) from the
    first one ``>= minimum`` (the first that admits the cheapest agent) to the first one
    ``>= maximum`` (the first that admits every agent).

    The values are fixed (each is parsed from its decimal text, so the same bound is the same float
    everywhere); with costs that do not depend on the run, every run of a grid gets the same bounds.
    ``minimum`` <= 0, not finite or None starts at the series value just below ``maximum``'s decade.
    """
    if not (math.isfinite(maximum) and maximum > 0.0):
        raise ValueError(f"maximum must be finite and > 0, got {maximum}")
    low = minimum if minimum is not None and math.isfinite(minimum) and minimum > 0.0 else maximum

    def value(j: int) -> float:  # position j on the series: mantissa SERIES_125[j % 3], exponent j // 3
        return float(f"{SERIES_125[j % 3]}e{j // 3}")

    j = 3 * math.floor(math.log10(low)) - 3
    while value(j) < low * (1 - 1e-12):
        j += 1
    bounds = [value(j)]
    while bounds[-1] < maximum * (1 - 1e-12):
        j += 1
        bounds.append(value(j))
    return bounds


def tied_times(
    times: Sequence[float], halfwidths: Sequence[float] | None = None, resolution: float = 0.0
) -> np.ndarray:
    """Each agent's time for the maps, with agents whose times cannot be told apart tied.

    The rule: going from the fastest agent up, an agent not yet tied starts a group, and every
    slower agent whose interval ``[t - h - r, t + h + r]`` overlaps the group leader's joins it and
    takes the leader's time (``h`` the half-width of the 95% interval of its mean time, ``r`` the
    clock's resolution). Two agents whose measured times differ by less than their spread thus
    enter the map under the same bounds, instead of by the noise of one measurement.

    Args:
        times: mean time of each agent (seconds).
        halfwidths: the half-width of each time's 95% interval (0 if unknown; NaN, the half-width
            of a time measured once, counts as 0).
        resolution: the clock's resolution (seconds): times closer than it are equal.

    Raises:
        ValueError: a time that is NaN or infinite, an infinite half-width, or a resolution that
            is not finite.
    """
    t = finite_values(times, "tied_times: sample 'times'")
    if halfwidths is None:
        h = np.zeros_like(t)
    else:
        h = np.nan_to_num(finite_values(halfwidths, "tied_times: sample 'halfwidths'", allow_nan=True))
    if not math.isfinite(resolution):
        raise ValueError(f"tied_times: resolution must be finite, got {resolution}")
    out = t.copy()
    order = np.argsort(t, kind="stable")
    leader = None
    for i in order:
        if leader is not None and t[i] - h[i] - resolution <= t[leader] + h[leader] + resolution:
            out[i] = t[leader]
        else:
            leader = i
    return out


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
    online_halfwidths: Sequence[float] | None = None,
    resolution: float = 0.0,
    correction: str | None = None,
    online_uncertainty: Sequence[float] | None = None,
    offline_uncertainty: Sequence[float] | None = None,
    lattice: str = "original",
) -> pl.DataFrame:
    """The best algorithms under an offline and an online time bound.

    For every point (x, y) of a grid of online bounds x (seconds per *trajectory*) and offline
    bounds y (seconds):

    1. keep the agents with online time per trajectory ``<= x`` and offline time ``<= y``, times
       tied by :func:`tied_times` (online: by the spread of the per-trajectory times; offline, a
       single measurement: by the clock's resolution only);
    2. keep each algorithm's best-mean agent (the first one on a tie);
    3. sort them by mean, descending;
    4. choose the best, then the next ones as long as each is not significantly different from
       the best (paired Z-test, :func:`not_different_from_best`, optionally Holm-corrected),
       stopping at the first significant one.

    The default grids (``lattice="original"``) are the original's lattice ``1e-5 s * 5**k`` from
    the first bound that admits the cheapest agent to the first that admits every agent
    (:func:`bound_grid`); ``lattice="1-2-5"`` takes the fixed series of :func:`series_grid`
    instead. The offline grid also has a bound 0 when some agents learn nothing offline (their
    offline time is 0 by declaration): the row of budgets too small for any offline learning.

    **Boundaries.** With ``online_uncertainty`` (and ``offline_uncertainty``), each agent's time
    ``t`` is known within a relative ``u`` only: the point is also chosen once with every agent
    whose time could lie within the bound (``t (1 - u) <= x``) and once with only those surely
    within it (``t (1 + u) <= x``). Where the two choices differ, the answer depends on which side
    of a bound an agent's time falls, and the row is marked ``boundary`` (its ``algorithms`` are
    still the choice at the times themselves; ``algorithms_if_slower`` and
    ``algorithms_if_faster`` give the two others).

    Two bugs of the original are fixed here: a point where no agent meets the bounds is reported
    as ``["none"]`` (the original added it to its first algorithm), and the online bound per
    decision (``online_bound_seconds_per_step`` = x / T) is scaled once, by this experiment's T.

    Args:
        algorithms, means, offline_seconds, online_seconds: one entry per agent setting;
            ``online_seconds`` is the mean online time per trajectory.
        returns: one array of per-MDP returns per agent, over the same MDPs (paired).
        horizon: T, the decisions per trajectory, to express the online bound per decision.
        online_halfwidths: half-widths of the 95% intervals of ``online_seconds`` (ties times;
            NaN, a time measured once, counts as 0).
        resolution: the clock's resolution, in seconds.
        correction: ``None`` or ``"holm"`` (see :func:`not_different_from_best`).
        online_uncertainty, offline_uncertainty: relative uncertainty of each agent's times (see
            Boundaries); None: exact.
        lattice: ``"original"`` or ``"1-2-5"``, the default grids' lattice.

    Returns:
        One row per grid point: ``online_bound_seconds`` (per trajectory),
        ``online_bound_seconds_per_step``, ``offline_bound_seconds``, ``algorithms`` (the chosen
        algorithms, best first, or ``["none"]``), ``best`` the first of them, ``comparisons``
        (the paired tests made for that point: the maps' multiplicity), ``boundary`` and the
        alternatives ``algorithms_if_slower`` / ``algorithms_if_faster``.

    Raises:
        ValueError: arguments of other lengths, or a mean, time, uncertainty or return that is NaN
            or infinite (named with the argument and its positions).
    """
    n = len(algorithms)
    if not (len(means) == len(offline_seconds) == len(online_seconds) == len(returns) == n):
        raise ValueError("algorithms, means, offline_seconds, online_seconds and returns must have equal lengths")
    if lattice not in ("original", "1-2-5"):
        raise ValueError(f"lattice must be 'original' or '1-2-5', got {lattice!r}")
    means_a = finite_values(means, "best_under_bounds: sample 'means'")
    for name, values in (("offline_seconds", offline_seconds), ("online_seconds", online_seconds)):
        finite_values(values, f"best_under_bounds: sample {name!r}")
    for i, r in enumerate(returns):
        finite_values(r, f"best_under_bounds: sample 'returns[{i}]'")
    offline = tied_times(offline_seconds, None, resolution)
    online = tied_times(online_seconds, online_halfwidths, resolution)
    u_on = np.zeros(n)
    if online_uncertainty is not None:
        u_on = finite_values(online_uncertainty, "best_under_bounds: sample 'online_uncertainty'")
    u_off = np.zeros(n)
    if offline_uncertainty is not None:
        u_off = finite_values(offline_uncertainty, "best_under_bounds: sample 'offline_uncertainty'")
    grid = bound_grid if lattice == "original" else series_grid
    if online_bounds is None:
        # From the first bound that admits the cheapest agent with any online cost: an agent whose
        # cost is 0 (e-Greedy at epsilon = 1 solves nothing) fits every bound and sets none.
        positive_online = online[online > 0.0]
        cheapest = float(positive_online.min()) if positive_online.size else None
        online_bounds = grid(float(online.max()) if n else 0.0, minimum=cheapest)
    if offline_bounds is None:
        positive = offline[offline > 0.0]
        if positive.size:
            offline_bounds = grid(float(positive.max()), minimum=float(positive.min()))
            if (offline <= 0.0).any():
                offline_bounds = [0.0, *offline_bounds]
        else:
            offline_bounds = [0.0]

    chosen_for: dict[tuple[int, ...], tuple[list[str], int]] = {}

    def choose(admitted: np.ndarray) -> tuple[list[str], int]:
        # Many points of the grid (and the same point at the slower and faster times) admit the
        # same agents: their paired tests are made once.
        key = tuple(admitted.tolist())
        if key not in chosen_for:
            chosen_for[key] = _choose(admitted)
        return chosen_for[key]

    def _choose(admitted: np.ndarray) -> tuple[list[str], int]:
        best_of: dict[str, int] = {}
        for i in admitted:  # ascending order: the first agent wins a tie
            name = algorithms[i]
            if name not in best_of or means_a[i] > means_a[best_of[name]]:
                best_of[name] = int(i)
        # Stable sort: equal means keep the order of first appearance.
        ranked = sorted(best_of.values(), key=lambda i: (-means_a[i], i))
        kept = not_different_from_best([returns[i] for i in ranked], one_sided, correction)
        return [algorithms[i] for i in ranked[:kept]] or ["none"], max(0, len(ranked) - 1)

    rows: dict[str, list] = {
        "online_bound_seconds": [],
        "online_bound_seconds_per_step": [],
        "offline_bound_seconds": [],
        "algorithms": [],
        "best": [],
        "comparisons": [],
        "boundary": [],
        "algorithms_if_slower": [],
        "algorithms_if_faster": [],
    }
    for x in online_bounds:
        for y in offline_bounds:
            chosen, comparisons = choose(np.flatnonzero((online <= x) & (offline <= y)))
            slower, _ = choose(np.flatnonzero((online * (1 + u_on) <= x) & (offline * (1 + u_off) <= y)))
            faster, _ = choose(np.flatnonzero((online * (1 - u_on) <= x) & (offline * (1 - u_off) <= y)))
            rows["online_bound_seconds"].append(float(x))
            rows["online_bound_seconds_per_step"].append(float(x) / horizon)
            rows["offline_bound_seconds"].append(float(y))
            rows["algorithms"].append(chosen)
            rows["best"].append(chosen[0])
            rows["comparisons"].append(comparisons)
            rows["boundary"].append(not (slower == chosen == faster))
            rows["algorithms_if_slower"].append(slower)
            rows["algorithms_if_faster"].append(faster)
    schema = {
        **{k: pl.Float64 for k in list(rows)[:3]},
        "algorithms": pl.List(pl.String),
        "best": pl.String,
        "comparisons": pl.Int64,
        "boundary": pl.Boolean,
        "algorithms_if_slower": pl.List(pl.String),
        "algorithms_if_faster": pl.List(pl.String),
    }
    return pl.DataFrame(rows, schema=schema)


def map_agreement(a: pl.DataFrame, b: pl.DataFrame) -> tuple[int, int]:
    """How many cells two best-algorithm maps share: ``(identical, total)``.

    Cells are matched by their bounds; a cell in one map only counts as different. Two cells are
    identical when they name the same algorithms in the same order and, where the maps mark
    boundaries (a ``boundary`` column), both are marked or neither.
    """

    def cells(frame: pl.DataFrame) -> dict[tuple[float, float], tuple[object, ...]]:
        return {
            (round(r["online_bound_seconds"], 15), round(r["offline_bound_seconds"], 15)): (
                *r["algorithms"],
                r.get("boundary", False),
            )
            for r in frame.iter_rows(named=True)
        }

    left, right = cells(a), cells(b)
    keys = set(left) | set(right)
    return sum(1 for k in keys if left.get(k) == right.get(k)), len(keys)


# --------------------------------------------------------------------------------------------
# Normalised scores across experiments (in the manner of Agarwal et al. 2021, "rliable"): the
# rliable package itself needs arch, absl-py, seaborn and pandas besides numpy and scipy, so the
# few estimators used here are written out on numpy.


def normalized_scores(returns: np.ndarray, random_mean: float, optimal_mean: float) -> np.ndarray:
    """``(return - Random) / (Optimal - Random)`` per MDP, with the experiment's mean scores of the
    Random agent and of the Optimal oracle: 0 is Random's level, 1 the oracle's.

    A score is ``inf`` only when it is beyond the float range (a span between the two levels tiny
    against a return's distance from Random).

    Raises:
        ValueError: when Optimal does not score above Random (nothing to normalise by), or a
            return or a level that is NaN or infinite.
    """
    values = finite_values(returns, "normalized_scores: sample 'returns'")
    for name, level in (("random_mean", random_mean), ("optimal_mean", optimal_mean)):
        if not math.isfinite(float(level)):
            raise ValueError(f"normalized_scores: {name} must be finite, got {level}")
    low, high = float(random_mean), float(optimal_mean)
    if not high > low:
        raise ValueError(f"Optimal ({optimal_mean}) must score above Random ({random_mean}) to normalise")
    with np.errstate(over="ignore", invalid="ignore"):
        span = high - low
        scores = (values - low) / span
    overflowed = ~np.isfinite(scores)
    if overflowed.any():  # levels or returns near the float range: the same ratios in scaled units
        scale = overflow_scale(values, np.array([low, high]))
        with np.errstate(all="ignore"):  # entries that did not overflow may divide 0 by 0 here: unused
            scaled = (values / scale - low / scale) / (high / scale - low / scale)
        scores[overflowed] = scaled[overflowed]
    return scores


def _trim_mean(values: np.ndarray, proportion: float) -> np.ndarray:
    """The mean over the last axis of the values left after cutting ``int(proportion * n)`` from
    each end: scipy.stats.trim_mean's computation, step for step (the same numbers), without
    importing scipy.stats (most of a report's start-up)."""
    n = values.shape[-1]
    low = int(proportion * n)
    high = n - low
    kept = np.partition(values, (low, high - 1), axis=-1)[..., low:high]
    return np.mean(kept, axis=-1)


def _scaled_statistic(statistic: Any, values: np.ndarray) -> Any:
    """``statistic(values)`` (an array of results, each of degree 1 in the values: a mean, a
    quantile of means), taken again in units scaled by a power of two when the plain computation
    overflows (finite values near the float range); a result beyond the range stays ``inf``."""
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.asarray(statistic(values), dtype=np.float64)
    if np.isfinite(result).all():
        return result
    scale = overflow_scale(values)
    with np.errstate(over="ignore"):
        return np.asarray(statistic(values / scale), dtype=np.float64) * scale


def iqm(values: np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% of the values (25% trimmed at each end).

    Raises:
        ValueError: no values, or a value that is NaN or infinite (named with its position).
    """
    flat = finite_values(values, "iqm: sample 'values'").ravel()
    if flat.size == 0:
        raise ValueError("iqm: no values")
    return float(_scaled_statistic(lambda v: _trim_mean(v, 0.25), flat))


@functools.lru_cache(maxsize=4)
def _bootstrap_indices(sizes: tuple[int, ...], n_boot: int, seed: int) -> np.ndarray:
    """The replicates of :func:`stratified_bootstrap_cis` as indices into the strata pooled in
    order, ``(n_boot, sum(sizes))`` uint32: stratum k's values resampled within it, drawn stratum
    after stratum from one generator seeded with ``seed``. They depend only on the strata's sizes,
    so a report's algorithms (the same experiments, the same MDPs) share one draw; cached read-only."""
    rng = np.random.default_rng(seed)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    indices = np.concatenate(
        [start + rng.integers(0, size, size=(n_boot, size)) for start, size in zip(starts, sizes, strict=True)],
        axis=1,
    ).astype(np.uint32)
    indices.flags.writeable = False
    return indices


def stratified_bootstrap_ci(
    strata: Sequence[np.ndarray],
    statistic: str = "iqm",
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """A statistic of values pooled over strata (one array per experiment) and its percentile
    bootstrap interval, each replicate resampling the values *within* each stratum, so every
    experiment keeps its weight.

    Args:
        statistic: ``"iqm"`` or ``"mean"``.
        n_boot: bootstrap replicates.
        seed: seed of the resampling (a fixed seed gives the same interval).

    Returns:
        ``(estimate, low, high)``.

    Raises:
        ValueError: an unknown statistic, an empty stratum, or a value that is NaN or infinite
            (named by its stratum and position).
    """
    return stratified_bootstrap_cis(strata, (statistic,), n_boot, confidence, seed)[statistic]


def stratified_bootstrap_cis(
    strata: Sequence[np.ndarray],
    statistics: Sequence[str] = ("iqm", "mean"),
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[float, float, float]]:
    """:func:`stratified_bootstrap_ci` of several statistics from one set of replicates: per
    statistic, the numbers :func:`stratified_bootstrap_ci` gives with the same seed (drawing the
    replicates was most of the time of a statistic as cheap as the mean)."""
    unknown = [s for s in statistics if s not in ("iqm", "mean")]
    if unknown:
        raise ValueError(f"statistic must be 'iqm' or 'mean', got {unknown[0]!r}")
    arrays = [finite_values(s, f"stratified_bootstrap_cis: sample 'strata[{k}]'").ravel() for k, s in enumerate(strata)]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("every stratum needs at least one value")

    pooled = np.concatenate(arrays)
    sizes = tuple(a.size for a in arrays)
    if pooled.size >= 2**32:
        raise ValueError(f"the bootstrap resamples at most 2**32 - 1 values, got {pooled.size}")
    indices = _bootstrap_indices(sizes, n_boot, seed)
    tail = (1.0 - confidence) / 2.0

    def estimates(values: np.ndarray) -> list[float]:
        # Both statistics of every replicate in one pass of the core (the IQM from how often each
        # value is drawn, not by sorting each replicate): numpy took a tenth of a report's time here.
        means, iqms = _core.bootstrap_replicates(values, indices)
        replicates = {"iqm": iqms, "mean": means}
        found = []
        for statistic in statistics:
            estimate = _trim_mean(values, 0.25) if statistic == "iqm" else values.mean()
            low, high = np.quantile(replicates[statistic], [tail, 1.0 - tail])
            found += [float(estimate), float(low), float(high)]
        return found

    found = _scaled_statistic(estimates, pooled).tolist()
    return {statistic: (found[3 * k], found[3 * k + 1], found[3 * k + 2]) for k, statistic in enumerate(statistics)}


def probability_of_improvement(x: Sequence[np.ndarray], y: Sequence[np.ndarray]) -> float:
    """P(X > Y): for each experiment, the probability that a score of X drawn at random exceeds one
    of Y (ties count one half), averaged over the experiments (one array of scores per experiment
    for each of X and Y, in the same experiment order).

    Raises:
        ValueError: other numbers of experiments, an experiment without scores, or a score that is
            NaN or infinite (named by its experiment and position).
    """
    if len(x) != len(y) or not x:
        raise ValueError("x and y need one array of scores per experiment, the same experiments")
    total = 0.0
    for k, (a, b) in enumerate(zip(x, y, strict=True)):
        a = finite_values(a, f"probability_of_improvement: sample 'x[{k}]'")[:, None]
        b = finite_values(b, f"probability_of_improvement: sample 'y[{k}]'")[None, :]
        if a.size == 0 or b.size == 0:
            empty = "x" if a.size == 0 else "y"
            raise ValueError(f"probability_of_improvement: experiment {k} has no scores of {empty}")
        total += float((a > b).mean() + 0.5 * (a == b).mean())
    return total / len(x)
