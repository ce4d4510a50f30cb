"""Racing the configurations of one experiment on the same test MDPs: which ones may stop early.

A raced experiment runs its configurations (cells) in batches of test MDPs, ``0..b``, ``b..2b``,
..., so that after every batch each running configuration has returns on the same MDPs. After each
batch, :func:`decide` stops a configuration ``c`` when another running configuration ``c'`` that
*costs no more* (:func:`precedes`: no more offline and no more online cost under the maps' cost
model, ties broken by the configuration's index; and, since the online cost is a mean over the test
MDPs that the first ones need not show, a confidence sequence on the paired differences of the
online costs per trajectory, :func:`cost_bounds`, says so too) shows, by a confidence sequence on
the paired differences of their returns, either

* **beaten**: ``c'`` is better than ``c`` (the sequence's upper bound on ``mean(R_c - R_c')`` is
  below 0); ``c`` can then never be the best under any pair of budgets, since wherever ``c`` fits,
  ``c'`` fits too; or
* **plateau** (``c`` and ``c'`` are settings of the same algorithm): ``c`` cannot beat ``c'`` by
  more than the margin ``eta`` (that upper bound is at most ``eta``). The maps show each algorithm
  at its best setting, so a costlier setting matters only where it beats a cheaper one by more
  than the maps can resolve.

No configuration stops before :data:`MIN_MDPS` test MDPs, the count below which the maps' own
paired Z-test does not trust its normal approximation.

**The confidence sequences** (``bbrl._core.confidence_intervals``) are valid at every batch at
once, so looking after every batch does not inflate the error. Every stop reads one bound, the
upper bound on ``mean(R_c - R_c')``, so the race asks for **one-sided** sequences: each bound
holds at level ``1 - delta`` on its own (about 10% narrower than a two-sided sequence at the same
level, whose error is shared by both bounds); the lower bounds reported beside a stop hold at the
same level on their own.

* ``"asymptotic"`` (the default): the time-uniform central-limit sequence of Waudby-Smith, Arbour,
  Sinha, Kennedy and Ramdas (Annals of Statistics 2024), tuned for N; its width follows the spread
  of the differences, like the maps' paired Z-test, on whose normal approximation it also rests.
* ``"betting"``: the betting sequence for bounded means (Waudby-Smith and Ramdas 2024), valid for
  every sample size, on differences in ``[-W, W]``, ``W`` the width of the returns' range
  (:func:`return_range`). It must pay for that range: about ``W log(2/delta) / n`` whatever the
  spread, and the benchmark's returns use a small part of their range (GC: returns in [0, 200],
  paired differences with a standard deviation about 20), so it stops nothing at N = 100.

**The error level** mirrors the maps' own test: by default each comparable pair gets level delta,
as each paired Z-test of the maps has its own 5% level (the original's rule); with
``family_wise=True`` delta is split over the experiment's comparable pairs (a union bound), as the
maps' Holm-corrected option controls the family. Then, with probability at least ``1 - delta``
(asymptotically, for ``"asymptotic"``), every sequence covers its mean at every batch at once, and
every stop is right: a beaten configuration is worse than its stopper, a plateaued one no more than
``eta`` better.

The margin ``eta`` of a pair is ``margin`` times the paired standard error the maps' own test will
have at N, ``s_d / sqrt(N)``, with ``s_d`` the standard deviation of the pair's differences so
far: a difference below it is one the maps' paired Z-test (threshold 1.96 standard errors) cannot
tell from zero either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl

from .. import _core
from ..fileio import check_kind, json_field
from ..intervals import Z_95_ONE_SIDED, Z_95_TWO_SIDED
from ..protocol.results import Results, from_frames, returns_matrix
from ..protocol.schema import Col, work_array
from .cost import Calibration, CellCosts, cell_costs
from .race_defaults import DEFAULT_DELTA, DEFAULT_MARGIN, SEQUENCES
from .stats import MIN_PAIRS_FOR_Z, tied_times

__all__ = [
    "BOUNDS",
    "COST_ORDER",
    "DEFAULT_DELTA",
    "DEFAULT_MARGIN",
    "MIN_MDPS",
    "RACE_SENSITIVE",
    "SEQUENCES",
    "Contender",
    "RaceOptions",
    "Stop",
    "batch_ends",
    "batch_spans",
    "comparable_pairs",
    "contenders_of",
    "cost_bounds",
    "decide",
    "default_batch",
    "describe_stop",
    "full_run_upper",
    "paired_means",
    "precedes",
    "race_sensitive_cells",
    "read_stop",
    "return_range",
    "simulate_race",
    "simulated_results",
    "stopper_of",
    "stops_from_bounds",
    "with_paired_means",
]

#: How the race's confidence sequences hold: each bound at level 1 - delta on its own, since every
#: stop reads one bound (recorded with a raced folder, so that a race never resumes under another
#: rule; races of bbrl before this rule used "two-sided" sequences).
BOUNDS = "one-sided"

#: How the race orders costs (recorded with a raced folder, as :data:`BOUNDS`): a stopper's online
#: cost is no more than the stopped configuration's by a one-sided confidence sequence on their
#: paired cost differences (:func:`cost_bounds`). Races of bbrl before this rule compared the means
#: over the MDPs run so far as exact numbers, and recorded no rule.
COST_ORDER = "sequence"

#: No configuration stops before this many test MDPs (the maps' paired Z-test needs as many).
MIN_MDPS = MIN_PAIRS_FOR_Z
#: Rules a stop can come from.
RULES = ("beaten", "plateau")


@dataclass(frozen=True)
class RaceOptions:
    """The race's settings.

    Attributes:
        delta: the error level, in (0, 1): of each comparable pair, or, with ``family_wise``, of
            the experiment's every stop.
        margin: the plateau margin in paired standard errors at N (>= 0; 0 turns the plateau rule
            into the beaten rule within an algorithm).
        batch: test MDPs per batch (>= 1); ``None``: :func:`default_batch`.
        sequence: ``"asymptotic"`` or ``"betting"`` (see the module's text).
        family_wise: split delta over the experiment's comparable pairs.
    """

    delta: float = DEFAULT_DELTA
    margin: float = DEFAULT_MARGIN
    batch: int | None = None
    sequence: str = SEQUENCES[0]
    family_wise: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.delta, (int, float)) and 0.0 < self.delta < 1.0):
            raise ValueError(f"the race's delta must be in (0, 1), got {self.delta!r}")
        if not (isinstance(self.margin, (int, float)) and math.isfinite(self.margin) and self.margin >= 0.0):
            raise ValueError(f"the race's margin must be a finite number >= 0 (standard errors), got {self.margin!r}")
        if self.batch is not None and (
            isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch < 1
        ):
            raise ValueError(f"the race's batch must be an integer >= 1 (test MDPs), got {self.batch!r}")
        if self.sequence not in SEQUENCES:
            raise ValueError(f"the race's sequence must be one of {', '.join(SEQUENCES)}, got {self.sequence!r}")
        if not isinstance(self.family_wise, bool):
            raise ValueError(f"family_wise must be True or False, got {self.family_wise!r}")

    def settings(self) -> dict[str, object]:
        """The settings as a JSON-able dict (recorded with a raced folder)."""
        return {
            "delta": self.delta,
            "margin": self.margin,
            "batch": self.batch,
            "sequence": self.sequence,
            "family_wise": self.family_wise,
        }

    @classmethod
    def from_record(cls, document: dict[str, Any], where: str) -> RaceOptions:
        """The options of a race record (``race.json``: :meth:`settings` and more), checked field by
        field; ``where`` names the file in errors.

        Raises:
            ValueError: naming ``where`` and the field.
        """
        batch = document.get("batch")
        try:
            return cls(
                delta=json_field(document, "delta", "a number", where),
                margin=json_field(document, "margin", "a number", where),
                batch=None if batch is None else json_field(document, "batch", "an integer", where),
                sequence=json_field(document, "sequence", "a string", where),
                family_wise=json_field(document, "family_wise", "true or false", where),
            )
        except ValueError as exc:
            message = str(exc)
            raise ValueError(message if message.startswith(where) else f"{where}: {message}") from None

    def batch_size(self, n_mdps: int) -> int:
        return default_batch(n_mdps) if self.batch is None else min(self.batch, n_mdps)


def default_batch(n_mdps: int) -> int:
    """Test MDPs per batch: a tenth of N, at least 10 (N itself when smaller): ten looks per race."""
    return min(n_mdps, max(10, math.ceil(n_mdps / 10)))


def batch_spans(n_mdps: int, batch: int) -> list[tuple[int, int]]:
    """The batches ``(start, stop)`` of test MDPs: ``(0, batch), (batch, 2 batch), ..., (., n_mdps)``."""
    ends = batch_ends(n_mdps, batch)
    return list(zip([0, *ends[:-1]], ends, strict=True))


def batch_ends(n_mdps: int, batch: int) -> list[int]:
    """The MDP counts after each batch: ``batch, 2 batch, ..., n_mdps``."""
    if batch < 1 or n_mdps < 1:
        raise ValueError(f"batch and n_mdps must be >= 1, got {batch} and {n_mdps}")
    ends = list(range(batch, n_mdps, batch))
    return [*ends, n_mdps]


def return_range(rewards: np.ndarray, gamma: float, horizon: int) -> tuple[float, float]:
    """The range ``(low, high)`` of a discounted return of ``horizon`` steps with rewards in the
    table ``rewards`` (every reward the MDPs can pay): ``sum_t gamma^t`` times the smallest and the
    largest reward."""
    weight = float(horizon) if gamma == 1.0 else (1.0 - gamma**horizon) / (1.0 - gamma)
    return float(np.min(rewards)) * weight, float(np.max(rewards)) * weight


@dataclass(frozen=True)
class Contender:
    """One configuration of a raced experiment, as the race sees it after a batch.

    Attributes:
        cell_id: the cell's id.
        index: its index in the configuration (breaks ties of cost).
        algorithm: the algorithm it is a setting of.
        offline_cost: its offline cost under the maps' cost model (seconds of offline learning).
        online_costs: the online cost of each of its trajectories under that model (seconds), on
            test MDPs ``0..n``; the race compares their mean, as the maps do.
        returns: its returns on test MDPs ``0..n`` (every running contender has the same n).
    """

    cell_id: str
    index: int
    algorithm: str
    offline_cost: float
    online_costs: np.ndarray
    returns: np.ndarray

    @property
    def online_cost(self) -> float:
        """The mean online cost per trajectory so far (seconds)."""
        return float(np.mean(self.online_costs))

    def first(self, n: int) -> Contender:
        """This contender as it stood after the first ``n`` test MDPs."""
        return self.take(slice(None, n))

    def take(self, rows: np.ndarray | slice) -> Contender:
        """This contender on the test MDPs ``rows`` (indices into its arrays), in their order."""
        return Contender(
            self.cell_id, self.index, self.algorithm, self.offline_cost, self.online_costs[rows], self.returns[rows]
        )


def precedes(a: Contender, b: Contender) -> bool:
    """Whether ``a`` costs no more than ``b``: no more offline and no more online cost, and, when
    both costs are equal, the lower index. A strict partial order, so no two configurations can
    stop each other."""
    if a.offline_cost > b.offline_cost or a.online_cost > b.online_cost:
        return False
    if a.offline_cost < b.offline_cost or a.online_cost < b.online_cost:
        return True
    return a.index < b.index


def comparable_pairs(contenders: Sequence[Contender]) -> int:
    """The number of ordered pairs ``(a, b)`` with ``a`` preceding ``b``: the family the race's
    delta is split over."""
    return sum(1 for a in contenders for b in contenders if a is not b and precedes(a, b))


@dataclass(frozen=True)
class Stop:
    """A configuration stopped by the race.

    Attributes:
        cell_id: the stopped cell; ``by``: the cell that stopped it.
        n_mdps: the test MDPs it ran (its returns are on MDPs ``0..n_mdps``).
        rule: ``"beaten"`` or ``"plateau"``.
        lower, upper: the confidence sequence's bounds on ``mean(R_cell - R_by)`` at the stop.
        margin: the plateau margin eta of the pair, in return units (0 for a beaten cell).
    """

    cell_id: str
    by: str
    n_mdps: int
    rule: str
    lower: float
    upper: float
    margin: float

    @classmethod
    def from_document(cls, document: Any, where: str) -> Stop:
        """A stop as a race record keeps it (its fields as JSON), checked field by field.

        Raises:
            ValueError: naming ``where`` (the file and the stop) and the field.
        """
        check_kind(document, "an object", where)
        kinds = {"cell_id": "a string", "by": "a string", "n_mdps": "an integer", "rule": "a string"}
        kinds |= {"lower": "a number", "upper": "a number", "margin": "a number"}
        return cls(**{name: json_field(document, name, kind, where) for name, kind in kinds.items()})


def decide(
    running: Sequence[Contender],
    n_total: int,
    return_low: float,
    return_high: float,
    options: RaceOptions,
    n_pairs: int,
    threads: int | None = None,
) -> list[Stop]:
    """The running configurations that stop after the batch that brought them to ``n`` test MDPs.

    Configurations are considered from the cheapest up (a linear order of :func:`precedes`), and
    a configuration is stopped only by one still running after the decisions before it, so the
    cheapest configurations always run on. A pair counts only where a one-sided sequence on its
    paired online costs confirms that the cheaper costs no more (:func:`cost_bounds`). The
    sequences are read at every batch end up to ``n`` (their running intersection).

    Args:
        running: the configurations still running, each with its returns on the same MDPs
            ``0..n``, ``n`` a batch end.
        n_total: N, the experiment's test MDPs (sets the batches, the tuning and the margin).
        return_low, return_high: the range of a return (:func:`return_range`).
        options: the race's settings.
        n_pairs: the number of comparable pairs of the experiment (:func:`comparable_pairs` of
            every configuration it raced, stopped ones too), over which ``family_wise`` splits delta.
        threads: threads for the confidence sequences (results do not depend on it).
    """
    if not running:
        return []
    n = running[0].returns.size
    if any(c.returns.size != n for c in running):
        raise ValueError("every running configuration must have returns on the same test MDPs")
    looks = [end for end in batch_ends(n_total, options.batch_size(n_total)) if end <= n]
    if n < MIN_MDPS or not looks or looks[-1] != n:
        return []
    pairs = [(a, b) for a in running for b in running if a is not b and precedes(a, b)]
    if not pairs:
        return []
    width = return_high - return_low
    if not (math.isfinite(width) and width > 0.0):
        raise ValueError(f"the returns' range must be finite and non-empty, got [{return_low}, {return_high}]")
    level = options.delta / max(n_pairs, len(pairs)) if options.family_wise else options.delta
    # Only a pair whose cost order the sequence on the costs confirms can stop (cost_bounds).
    confirmed = cost_bounds(pairs, looks, level, n_total, threads) <= 0.0
    pairs = [pair for pair, keep in zip(pairs, confirmed, strict=True) if keep]
    if not pairs:
        return []
    # Row k: the differences R_b - R_a of pair k (the costlier minus the cheaper).
    differences = np.stack([b.returns - a.returns for a, b in pairs])
    np.clip(differences, -width, width, out=differences)  # rounding only: returns lie in the range
    lower, upper = _core.confidence_intervals(
        differences, -width, width, level, looks, kind=options.sequence, tuned_for=n_total,
        one_sided=BOUNDS == "one-sided", threads=threads,
    )  # fmt: skip
    sd = differences.std(axis=1, ddof=1)
    bounds = {
        (a.cell_id, b.cell_id): (float(lower[k, -1]), float(upper[k, -1]), float(sd[k]))
        for k, (a, b) in enumerate(pairs)
    }
    return stops_from_bounds(running, bounds, n, n_total, options.margin)


def cost_bounds(
    pairs: Sequence[tuple[Contender, Contender]],
    looks: Sequence[int],
    level: float,
    n_total: int,
    threads: int | None = None,
) -> np.ndarray:
    """For each pair ``(a, b)``, the upper bound after the last of ``looks`` of the one-sided
    asymptotic confidence sequence (tuned for ``n_total``, at ``level``) on the mean of
    ``cost_a - cost_b``, their paired online costs per trajectory: at most 0 when ``a`` costs no
    more than ``b`` at that level, 0 for costs equal on every MDP so far.

    The maps compare each configuration's mean online cost over the test MDPs it ran, and a
    configuration that costs a little more than another on the first MDPs may cost less over N (the
    quick grid's UCRL2 against MBIE-EB on GC/UGC: 0.4% more over 30 MDPs, 1.2% less over 100); it
    then fits budgets its stopper does not, and could be the best there. The sequence is the
    asymptotic one whatever the race's ``sequence``: the costs have no range known in advance, which
    the betting sequence needs. A wrong stop needs the sequence that its pair's truth puts at stake
    to fail (the cost one if the stopper costs more, the returns' one if not), so each pair's
    error stays at ``level``."""
    if not pairs:
        return np.zeros(0)
    differences = np.stack([a.online_costs - b.online_costs for a, b in pairs])
    width = float(np.abs(differences).max())
    if width == 0.0:  # equal costs on every MDP (the index breaks the tie)
        return np.zeros(len(pairs))
    _, upper = _core.confidence_intervals(
        differences, -width, width, level, list(looks), kind="asymptotic", tuned_for=n_total, one_sided=True,
        threads=threads,
    )  # fmt: skip
    return upper[:, -1]


def stops_from_bounds(
    running: Sequence[Contender],
    bounds: dict[tuple[str, str], tuple[float, float, float]],
    n: int,
    n_total: int,
    margin: float,
) -> list[Stop]:
    """The rule of :func:`decide` on given bounds: ``bounds[(a, b)]`` is ``(lower, upper, s_d)``
    for ``mean(R_b - R_a)`` and the standard deviation of the pair's differences, for each pair
    where ``a`` costs no more than ``b``. Configurations are considered from the cheapest up, each
    stopped by the first still-running one that beats it or, of its algorithm, whose upper bound is
    at most the margin ``margin * s_d / sqrt(n_total)``; the stops are at ``n`` test MDPs."""
    order = sorted(running, key=lambda c: (c.offline_cost, c.online_cost, c.index))
    live = {c.cell_id for c in running}
    stops: list[Stop] = []
    for b in order:
        for a in order:
            if a.cell_id not in live or (a.cell_id, b.cell_id) not in bounds:
                continue
            low, high, s_d = bounds[(a.cell_id, b.cell_id)]
            if high < 0.0:
                stops.append(Stop(b.cell_id, a.cell_id, n, "beaten", low, high, 0.0))
            elif a.algorithm == b.algorithm and high <= (eta := margin * s_d / math.sqrt(n_total)):
                stops.append(Stop(b.cell_id, a.cell_id, n, "plateau", low, high, eta))
            else:
                continue
            live.discard(b.cell_id)
            break
    return stops


def simulate_race(
    contenders: Sequence[Contender],
    n_total: int,
    return_low: float,
    return_high: float,
    options: RaceOptions,
    threads: int | None = None,
) -> dict[str, Stop | None]:
    """The race :func:`decide` runs batch after batch, on returns and costs already known for every
    MDP (each contender's arrays of length ``n_total``): for each cell, its stop, or None if it
    runs to N. Since MDP ``i`` gives a cell the same return and the same work in a raced run as in
    a full one, this is the race a raced run makes, which lets a finished full run say what racing
    would have saved and whether its maps would have changed."""
    n_pairs = comparable_pairs(contenders)
    outcome: dict[str, Stop | None] = {c.cell_id: None for c in contenders}
    running = list(contenders)
    for end in batch_ends(n_total, options.batch_size(n_total)):
        if end == n_total:
            break  # the last batch ends the race: everyone left has run every MDP
        for stop in decide(
            [c.first(end) for c in running], n_total, return_low, return_high, options, n_pairs, threads
        ):
            outcome[stop.cell_id] = stop
        running = [c for c in running if outcome[c.cell_id] is None]
    return outcome


def contenders_of(results: Results, cells: pl.DataFrame, calibration: Calibration) -> list[Contender]:
    """The contenders of ``cells`` (rows of ``results.cells``, one experiment): their returns and
    per-trajectory costs on the MDPs they ran, in MDP order, costs under ``calibration`` (work
    counts times seconds per unit, as the maps). A cell without work counts (a Python agent's
    training, results written before work was counted) has no cost the race can compare, so it
    is left out: never stopped, and never the stopper of another."""
    costs = cell_costs(cells, calibration)
    by_cell = results.returns.partition_by(Col.CELL_ID, as_dict=True, maintain_order=True)
    out = []
    for k, row in enumerate(cells.iter_rows(named=True)):
        if costs.basis[k] != "work":
            continue
        frame = by_cell[(row[Col.CELL_ID],)].sort(Col.MDP)
        online = work_array(frame[Col.ONLINE_WORK]) @ calibration.unit_seconds(row[Col.ALGORITHM])
        out.append(
            Contender(
                cell_id=row[Col.CELL_ID],
                index=int(row[Col.CELL_INDEX]),
                algorithm=row[Col.ALGORITHM],
                offline_cost=float(costs.offline[k]),
                online_costs=online,
                returns=frame[Col.RETURN].to_numpy(),
            )
        )
    return out


def describe_stop(stop: Stop) -> str:
    """The text a stopped cell's file keeps (:data:`~bbrl.protocol.schema.RACE_STOPPED_BY`): the
    stopper's cell id first, then the rule, the MDPs and the bounds, e.g. ``GC/GC/egreedy/epsilon=0.0
    (beaten after 30 MDPs: mean difference in [-15.8, -0.0462])``."""
    bound = f"mean difference in [{stop.lower:.4g}, {stop.upper:.4g}]"
    margin = f", margin {stop.margin:.4g}" if stop.rule == "plateau" else ""
    return f"{stop.by} ({stop.rule} after {stop.n_mdps} MDPs: {bound}{margin})"


def read_stop(text: str) -> tuple[str, str, str]:
    """``(stopper's cell id, rule, bounds)`` of a :func:`describe_stop` text; a text of another
    form is the stopper whole, with no rule nor bounds."""
    by, _, detail = text.rpartition(" (")
    if not by or not detail.endswith(")"):
        return text, "", ""
    head, _, bounds = detail[:-1].partition(": ")
    return by, head.split(" ", 1)[0], bounds


def stopper_of(text: str) -> str:
    """The stopper's cell id in a :func:`describe_stop` text."""
    return read_stop(text)[0]


def paired_means(results: Results, cells: pl.DataFrame) -> np.ndarray:
    """Each cell's mean return over the experiment's N test MDPs, estimated on the paired design
    for the cells a race stopped (the others' own means).

    A stopped cell ran MDPs ``0..n`` only, and the first MDPs of an experiment are not a fair
    sample of its N: on the paper's GC at N = 500 the first 50 give the better agents about 2.5
    more than the 500 do, so a raw mean over 50 MDPs would outrank every configuration that ran
    500. The stopped cell's mean is therefore its stopper's, followed to a cell that ran to N (its
    reference), plus their paired difference on the MDPs the stopped cell ran:
    ``mean_N(R_ref) + mean_n(R_c - R_ref)``, unbiased for the cell's mean over the N MDPs under
    the paired design. A cell whose chain of stoppers leaves ``cells`` keeps its raw mean."""
    ids = results.returns[Col.CELL_ID].unique(maintain_order=True).to_list()
    returns_of = dict(zip(ids, returns_matrix(results, ids), strict=True))
    stopped_by: dict[str, str] = {}
    if Col.RACE_STOPPED_BY in cells.columns:
        for row in cells.select(Col.CELL_ID, Col.RACE_STOPPED_BY).iter_rows():
            if row[1] is not None:
                stopped_by[row[0]] = stopper_of(row[1])
    means = []
    for cell_id in cells[Col.CELL_ID].to_list():
        own = returns_of[cell_id]
        reference, seen = cell_id, {cell_id}
        while reference in stopped_by and stopped_by[reference] in returns_of and stopped_by[reference] not in seen:
            reference = stopped_by[reference]
            seen.add(reference)
        if reference == cell_id or reference in stopped_by:
            means.append(float(own.mean()))
            continue
        full = returns_of[reference]
        means.append(float(full.mean() + (own - full[: own.size]).mean()))
    return np.asarray(means, dtype=np.float64)


def simulated_results(results: Results, stops: dict[str, Stop | None]) -> Results:
    """The results a race with ``stops`` (:func:`simulate_race`'s outcome, for any experiments)
    would have written: each stopped cell's rows cut to the MDPs it ran, with the text of its stop,
    read back the way a raced folder is read."""
    stopped = {cell_id: stop for cell_id, stop in stops.items() if stop is not None}
    if not stopped:
        return results
    keep = {cell_id: stop.n_mdps for cell_id, stop in stopped.items()}
    texts = {cell_id: describe_stop(stop) for cell_id, stop in stopped.items()}
    cell = pl.col(Col.CELL_ID)
    rows = results.returns.filter(
        pl.col(Col.MDP) < cell.replace_strict(keep, default=None, return_dtype=pl.Int64).fill_null(2**62)
    )
    rows = rows.drop(Col.RACE_STOPPED_BY, strict=False).with_columns(
        cell.replace_strict(texts, default=None, return_dtype=pl.String).alias(Col.RACE_STOPPED_BY)
    )
    return from_frames([rows])


def with_paired_means(results: Results) -> Results:
    """``results`` with the cells' :data:`~bbrl.protocol.schema.Col.PAIRED_MEAN` column
    (:func:`paired_means`) when a race stopped any of them, which then ranks the settings of an
    algorithm (:func:`~bbrl.analysis.stats.best_per_algorithm`); unchanged otherwise."""
    cells = results.cells
    if Col.RACE_STOPPED_BY not in cells.columns or cells[Col.RACE_STOPPED_BY].null_count() == cells.height:
        return results
    paired = pl.Series(Col.PAIRED_MEAN, paired_means(results, cells), dtype=pl.Float64)
    return Results(cells.with_columns(paired), results.returns)


#: The column of a budget map (:func:`race_sensitive_cells`) that marks the cells whose verdict a
#: configuration the race stopped could have changed: False in every cell of a map without stops.
RACE_SENSITIVE = "race_sensitive"


def full_run_upper(differences: np.ndarray, n_total: int, level: float = DEFAULT_DELTA) -> float:
    """An upper bound on the mean of paired differences over ``n_total`` test MDPs, from the first
    ``n`` of them (``differences``), which a run of all ``n_total`` shares:
    ``(n mean_n + (N - n) (U + 1.96 s_d / sqrt(N - n))) / N``, ``U`` the one-sided asymptotic
    confidence sequence's upper bound on the differences' mean after the ``n`` (at ``level``,
    tuned for N), ``s_d`` their standard deviation.

    The sequence holds at every sample size at once, so also at the one where a race chose to stop
    (a fixed-n interval would not: a race stops a configuration when its first MDPs make it look
    worst, and on the MDPs after the stop its difference is nearer its mean than on those); the
    other ``N - n`` MDPs then average at most ``U`` plus 1.96 standard errors of a mean of ``N - n``.
    Infinite below 2 differences."""
    d = np.asarray(differences, dtype=np.float64)
    n = d.size
    if n < 2:
        return math.inf
    known = float(d.mean())
    rest = n_total - n
    if rest <= 0:
        return known
    sd = float(d.std(ddof=1))
    width = float(np.abs(d).max())
    if width == 0.0:
        upper = 0.0
    else:
        _, bound = _core.confidence_intervals(
            d[None, :], -width, width, level, [n], kind="asymptotic", tuned_for=n_total, one_sided=True
        )
        upper = float(bound[0, -1])
    return (n * known + rest * (upper + Z_95_TWO_SIDED * sd / math.sqrt(rest))) / n_total


def race_sensitive_cells(
    bounds: pl.DataFrame,
    cells: pl.DataFrame,
    means: Sequence[float],
    costs: CellCosts,
    returns: Sequence[np.ndarray],
    one_sided: bool = False,
    correction: str | None = None,
    resolution: float = 0.0,
) -> np.ndarray:
    """Which cells of a budget map a stopped configuration could have decided otherwise, had it run
    every test MDP: one bool per row of ``bounds``.

    ``bounds`` is :func:`~bbrl.analysis.stats.best_under_bounds`'s map of the configurations
    ``cells`` (rows in the map's order, with their ids, algorithms, N and
    :data:`~bbrl.protocol.schema.Col.RACE_STOPPED_BY`), made from ``means``, ``costs``
    (``online`` per trajectory), ``returns`` (each on the test MDPs it ran), ``one_sided``,
    ``correction`` and ``resolution``, the same arguments.

    A map cell names, for each of its three choices (at the costs, every cost higher within its
    uncertainty, every cost lower: ``algorithms``, ``algorithms_if_slower``,
    ``algorithms_if_faster``), a winner ``w`` and its last algorithm ``L``, each represented by
    its best-mean setting among those the choice admits. A stopped configuration ``c`` that a
    choice admits leaves it as a run of every MDP would when

    1. ``c`` was beaten by a setting ``s`` of its own algorithm that costs no more than ``c`` in
       the map (offline and online, in each choice) and ranks above it: ``s`` is admitted
       wherever ``c`` is, and
       the race's bound says that ``c`` is worse (its guarantee); or
    2. the mean difference ``R_c - R_w`` that a run of every MDP would have over the N MDPs,
       bounded from the ``n`` MDPs both ran (which that run shares: :func:`full_run_upper`), lies
       below ``-z s_d / sqrt(N)`` (``z`` the maps' threshold, ``s_d`` the differences' standard
       deviation): the maps' test at N would call ``c`` worse than the winner, so it cannot enter
       the choice; and that of ``R_c - R_L`` lies below 0: ``c`` would rank below the last
       algorithm named, so it cannot cut the list short either.

    Otherwise the cell is marked. With Holm's correction ``z`` is its largest threshold, at
    ``0.05 / m`` for the ``m`` comparisons the cell's widest choice can make. A full run's map
    (no stopped configuration) marks nothing."""
    marks = np.zeros(bounds.height, dtype=bool)
    texts = cells[Col.RACE_STOPPED_BY].to_list() if Col.RACE_STOPPED_BY in cells.columns else [None] * cells.height
    stops = {i: read_stop(text) for i, text in enumerate(texts) if text is not None}
    if not stops or bounds.height == 0:
        return marks
    ids = cells[Col.CELL_ID].to_list()
    algorithms = cells[Col.ALGORITHM].to_list()
    n_total = int(cells[Col.N_MDPS].max())
    index_of = {cell_id: i for i, cell_id in enumerate(ids)}
    mean = np.asarray(means, dtype=np.float64)
    offline = tied_times(costs.offline, None, resolution)
    online = tied_times(costs.online, None, resolution)
    # The costs of each choice: at the costs, all higher within their uncertainty, all lower.
    factors = (0.0, 1.0, -1.0)
    choices = ("algorithms", "algorithms_if_slower", "algorithms_if_faster")
    scaled = [
        (online * (1 + f * costs.online_uncertainty), offline * (1 + f * costs.offline_uncertainty)) for f in factors
    ]

    def own_stopper_settles(c: int) -> bool:
        by, rule, _ = stops[c]
        s = index_of.get(by)
        return (
            rule == "beaten"
            and s is not None
            and algorithms[s] == algorithms[c]
            and all(on[s] <= on[c] and off[s] <= off[c] for on, off in scaled)
            and mean[s] > mean[c]
        )

    free = [c for c in stops if not own_stopper_settles(c)]
    if not free:
        return marks
    paired: dict[tuple[int, int], tuple[float, float]] = {}

    def predicted(c: int, other: int) -> tuple[float, float]:
        """The upper end of mean(R_c - R_other) over the N MDPs as a run of every MDP would have it,
        from the n MDPs both ran (:func:`full_run_upper`), and the differences' standard deviation."""
        if (c, other) not in paired:
            n = min(returns[c].size, returns[other].size)
            d = np.asarray(returns[c][:n], dtype=np.float64) - np.asarray(returns[other][:n], dtype=np.float64)
            paired[(c, other)] = (full_run_upper(d, n_total), float(d.std(ddof=1)) if n >= 2 else math.inf)
        return paired[(c, other)]

    for row_index, row in enumerate(bounds.iter_rows(named=True)):
        x, y = row["online_bound_seconds"], row["offline_bound_seconds"]
        admitted = [(on <= x) & (off <= y) for on, off in scaled]
        if not any(admitted[2][c] for c in free):  # the widest choice admits no free stop
            continue
        z = Z_95_ONE_SIDED if one_sided else Z_95_TWO_SIDED
        if correction == "holm":
            m = len({algorithms[i] for i in np.flatnonzero(admitted[2])}) - 1
            if m > 1:
                z = NormalDist().inv_cdf(1.0 - 0.05 / (m if one_sided else 2 * m))
        for mask, choice in zip(admitted, choices, strict=True):
            names = row[choice]
            if names == ["none"]:
                continue
            best: dict[str, int] = {}
            for i in np.flatnonzero(mask):  # as best_under_bounds: the first setting wins a tie
                if algorithms[i] not in best or mean[i] > mean[best[algorithms[i]]]:
                    best[algorithms[i]] = int(i)
            winner, last = best[names[0]], best[names[-1]]
            for c in free:
                if not mask[c]:
                    continue
                upper, sd = predicted(c, winner)
                below_winner = upper < -z * sd / math.sqrt(n_total)
                if not (below_winner and predicted(c, last)[0] < 0.0):
                    marks[row_index] = True
                    break
            if marks[row_index]:
                break
    return marks
