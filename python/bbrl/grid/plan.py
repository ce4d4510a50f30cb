"""Cost planning: how many core-hours a grid needs, measured on a small pilot, and how to split it.

A cell's cost is its offline time (training on the prior) plus its online time (``n_mdps``
trajectories of ``horizon`` decisions). Within one agent kind on one experiment both grow with the
agent's budget parameters, summarised as *work units*:

* online units per decision and offline units per training, as each kind's entry of the core's
  agent registry states them (``bbrl.agents.spec(kind)``): ``k * depth`` for BAMCP and BFS3
  (simulations or rollouts times their length), ``1 / epsilon`` for SBOSS (posterior samples per
  pair), ``k`` for PSRL (models solved per step), 1 otherwise online; ``n_draws * horizon`` for
  OPPS-DS (trajectories of UCB1 times their length), 1 otherwise offline (training is then
  measured as a constant per experiment and kind).

Costs are **calibrated** core-seconds: the work each pilot run counts (machine-independent units,
:mod:`bbrl.analysis.cost`) times the seconds per unit of a calibration (the shipped one by
default). The counts depend only on the seeded computation, so the plan is the same on every run,
whatever the machine's load or CPU; the pilot's measured CPU time is kept beside it, and the ratio
of the two (:attr:`Plan.measured_to_calibrated`) says how this machine compares with the
calibration's. Parts without work counts (a Python agent's training) keep their measured CPU time.
The pilot runs, for every (experiment, kind), its
cheapest and its most expensive setting, one thread each: training at the experiment's horizon
(OPPS-DS with its draws capped at :data:`PILOT_DRAWS`), then a few test MDPs of a few decisions.
It fits seconds = a + b * units to the two points, per decision online and per training offline. A cell's predicted
core-seconds are then ``offline(units) + n_mdps * horizon * online(units)``.

The pilot's cost is bounded twice: by its size (``pilot_mdps`` x ``pilot_decisions`` decisions per
point, at most two points per pair) and by ``budget_seconds`` of calibrated pilot work, after which
only the cheapest point of each remaining pair is run (and its cost taken as proportional to the
units). The budget counts calibrated, not measured, seconds, so that which points are run (and so
the plan) does not depend on the load either.

With ``every_cell=True`` the pilot measures every cell instead (``pilot_mdps`` x ``pilot_decisions``
decisions of each, and its training, OPPS-DS's scaled linearly from the capped draws), so no cell's
cost is interpolated between two settings: the measurement behind a study's stated total.

Without a measured plan, :func:`longest_first` orders cells by the units alone (a relative cost).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import agents
from ..analysis.cost import Calibration, reference_calibration
from ..fileio import check_kind, json_field, read_json_document, write_atomic
from ..protocol import Experiment
from ..protocol.schema import Col
from .model import Cell, GridConfig, check_runnable

__all__ = [
    "Fit",
    "Plan",
    "compare",
    "longest_first",
    "lpt_makespan",
    "offline_units",
    "online_units",
    "pilot",
    "pilot_ratio_line",
    "plan_path",
    "read_plan",
    "read_plan_calibration",
    "read_plan_offline",
    "static_cost",
]

#: OPPS-DS's pilot trains with at most this many draws (its offline cost is linear in the draws).
PILOT_DRAWS = 200


def _units(cell: Cell, which: str, horizon: int) -> float:
    """The product of ``parameter ** exponent`` over the core registry's ``which`` units of the
    cell's kind (``"horizon"`` standing for ``horizon``); 1 for kinds outside the registry."""
    if cell.kind not in agents.kinds():
        return 1.0
    p = cell.spec.params if cell.spec is not None else cell.params
    units = 1.0
    for name, exponent in agents.spec(cell.kind)[which]:
        value = float(horizon) if name == "horizon" else float(p.get(name, 1))
        if exponent < 0:
            # A parameter in a denominator (SBOSS's epsilon) is floored so that 0 cannot divide.
            units /= max(value, 1e-9) ** -exponent
        else:
            units *= value**exponent
    return units


def online_units(cell: Cell) -> float:
    """Relative online work per decision of the cell's agent (see the module docstring)."""
    return _units(cell, "online_units", cell.experiment.horizon)


def offline_units(cell: Cell, horizon: int | None = None) -> float:
    """Relative offline work of training the cell's agent (``horizon``: the training horizon)."""
    return _units(cell, "offline_units", horizon if horizon is not None else cell.experiment.horizon)


def static_cost(cell: Cell) -> float:
    """A relative cost without measurement: decisions x online units + offline units."""
    e = cell.experiment
    return e.n_mdps * e.horizon * online_units(cell) + offline_units(cell)


@dataclass(frozen=True)
class Fit:
    """seconds = a + b * units, fitted on one or two pilot points (a, b >= 0)."""

    a: float
    b: float

    def __call__(self, units: float) -> float:
        return self.a + self.b * units

    @staticmethod
    def through(points: Sequence[tuple[float, float]]) -> Fit:
        """The line through two points (units, seconds) with distinct units, clipped to a, b >= 0;
        through the origin for one point (or equal units)."""
        (x1, y1), (x2, y2) = points[0], points[-1]
        if len(points) < 2 or x1 == x2:
            x = max(x1, 1e-12)
            y = float(np.mean([y for _, y in points]))
            return Fit(0.0, y / x)
        b = max((y2 - y1) / (x2 - x1), 0.0)
        a = max(y1 - b * x1, 0.0)
        return Fit(a, b)


@dataclass
class Plan:
    """Predicted core-seconds of every cell, and the pilot that measured them.

    Attributes:
        seconds: cell id -> predicted core-seconds (offline + online).
        online: (experiment key, kind) -> fit of seconds per decision.
        offline: (experiment key, kind) -> fit of seconds per training.
        pilot_seconds: wall time of the pilot.
        pilot_points: pilot runs made.
        every_cell: whether every cell was measured.
        offline_seconds: cell id -> the offline (training) part of ``seconds``; the rest is online,
            ``n_mdps`` trajectories of equal predicted cost (what a race's prediction scales).
    """

    seconds: dict[str, float]
    online: dict[tuple[str, str], Fit]
    offline: dict[tuple[str, str], Fit]
    pilot_seconds: float
    pilot_points: int
    every_cell: bool = False
    offline_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    calibration: str = ""
    pilot_cpu_seconds: float = math.nan
    pilot_calibrated_seconds: float = math.nan

    @property
    def measured_to_calibrated(self) -> float:
        """The pilot's measured CPU seconds over its calibrated seconds (work times the
        calibration), over the parts that have work counts: above 1, this machine ran slower than
        the calibration says (a loaded or slower CPU); NaN when nothing was calibrated."""
        if not self.pilot_calibrated_seconds > 0.0:
            return math.nan
        return self.pilot_cpu_seconds / self.pilot_calibrated_seconds

    def to_json(self) -> str:
        return json.dumps(
            {
                "cells": self.seconds,
                "offline_cells": self.offline_seconds,
                "pilot_seconds": self.pilot_seconds,
                "pilot_points": self.pilot_points,
                "every_cell": self.every_cell,
                "calibration": self.calibration,
                # NaN is not JSON: null for a pilot without work counts.
                "pilot_cpu_seconds": _number_or_none(self.pilot_cpu_seconds),
                "pilot_calibrated_seconds": _number_or_none(self.pilot_calibrated_seconds),
                "online": [[e, k, f.a, f.b] for (e, k), f in self.online.items()],
                "offline": [[e, k, f.a, f.b] for (e, k), f in self.offline.items()],
            },
            indent=1,
        )


def _number_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def read_plan(out: Path) -> dict[str, float] | None:
    """The predicted core-seconds per cell id kept in ``out`` (``None`` without a plan).

    Raises:
        ValueError: naming ``plan.json`` and the field, for a plan that is damaged or of another
            schema (delete it, or plan again with ``bbrl grid plan CONFIG --out DIR``).
    """
    return _plan_seconds(out, "cells")


def read_plan_offline(out: Path) -> dict[str, float] | None:
    """The predicted offline core-seconds per cell id kept in ``out`` (``None`` without a plan, or
    one kept before they were recorded). Raises ValueError as :func:`read_plan` does."""
    return _plan_seconds(out, "offline_cells")


def read_plan_calibration(out: Path) -> str | None:
    """The name of the calibration ``out``'s plan is priced with (``None``: no plan, or a plan of
    measured CPU times, kept before plans were priced from work). Raises ValueError as
    :func:`read_plan` does."""
    path = plan_path(out)
    if not path.is_file():
        return None
    value = json_field(read_json_document(path, "plan"), "calibration", "a string", f"plan {str(path)!r}", None)
    return str(value) if value else None


def pilot_ratio_line(plan: Plan, calibration: Calibration) -> str:
    """One line on how this machine ran the pilot against the calibration the plan is priced with."""
    ratio = plan.measured_to_calibrated
    if not math.isfinite(ratio):
        return f"pilot: no work counts to compare with calibration '{calibration.name}'"
    where = "slower than" if ratio > 1.0 else "as fast as or faster than"
    return (
        f"pilot: {plan.pilot_cpu_seconds:.3g} s of CPU measured here for {plan.pilot_calibrated_seconds:.3g} s "
        f"calibrated, measured-to-calibrated ratio {ratio:.2f} (this machine ran {where} calibration "
        f"'{calibration.name}', {calibration.describe()}); the plan is priced from the work, not from this ratio"
    )


def _plan_seconds(out: Path, key: str) -> dict[str, float] | None:
    """The table ``key`` of cell id: seconds of ``out``'s plan (``None``: no plan, or no such table)."""
    path = plan_path(out)
    if not path.is_file():
        return None
    where = f"plan {str(path)!r}"
    table = json_field(read_json_document(path, "plan"), key, "an object", where, None)
    if table is None:
        return None
    return {str(k): float(check_kind(v, "a number", f"{where}: field {key}[{k!r}]")) for k, v in table.items()}


def plan_path(out: Path) -> Path:
    """Where ``bbrl grid plan --out DIR`` keeps the plan (read by runners to order cells)."""
    return out / "plan.json"


def _pilot_spec(cell: Cell) -> agents.AgentSpec:
    spec = cell.spec
    assert spec is not None
    if cell.kind == "oppsds" and dataclasses.is_dataclass(spec):
        return dataclasses.replace(spec, n_draws=min(int(spec.params["n_draws"]), PILOT_DRAWS))  # type: ignore[type-var]
    return spec


@dataclass(frozen=True)
class _Point:
    """One pilot run: the units of its training and decisions, their calibrated seconds, and what
    they cost on this machine (CPU seconds) against what the calibration says (the parts with work
    counts only)."""

    offline_units: float
    offline_seconds: float
    online_units: float
    online_per_decision: float
    measured: float
    calibrated: float
    cost: float


def _pilot_point(cell: Cell, n_mdps: int, decisions: int, calibration: Calibration) -> _Point:
    """Runs a scaled-down copy of ``cell`` on one thread and prices its work with ``calibration``."""
    e = cell.experiment
    horizon = min(decisions, e.horizon)
    spec = _pilot_spec(cell)
    pilot_cell = dataclasses.replace(cell, spec=spec)
    # Offline: trained at the experiment's horizon (training cost grows with it), its budget capped.
    offline = spec.train(e.prior_fdm, e.gamma, e.horizon, e.seed)
    # Online: a trained agent runs only at its training horizon, so a second, short training.
    trained = spec.train(e.prior_fdm, e.gamma, horizon, e.seed) if horizon != e.horizon else offline
    experiment = Experiment(e.test_fdm, n_mdps=n_mdps, gamma=e.gamma, horizon=horizon, seed=e.seed, name=e.name)
    result = experiment.run(trained, threads=1)
    unit_seconds = calibration.unit_seconds(cell.algorithm)
    online_cpu = float(np.sum(_cpu_or_wall(result.online_cpu_seconds, result.online_seconds)))
    training_cpu = float(_cpu_or_wall(np.array([offline.offline_cpu_seconds]), np.array([offline.offline_seconds]))[0])
    measured = calibrated = 0.0
    if result.online_work is not None:
        online = float(np.asarray(result.online_work, dtype=float).sum(axis=0) @ unit_seconds)
        measured, calibrated = online_cpu, online
    else:
        online = online_cpu
    if offline.offline_work is not None:
        training = float(np.asarray(offline.offline_work, dtype=float) @ unit_seconds)
        measured, calibrated = measured + training_cpu, calibrated + training
    else:
        training = training_cpu
    per_decision = online / (n_mdps * horizon)
    return _Point(
        offline_units(pilot_cell), training, online_units(cell), per_decision, measured, calibrated, training + online
    )


def _cpu_or_wall(cpu: Any, wall: Any) -> np.ndarray:
    """CPU seconds (what a core spent, however loaded the machine), or wall seconds where the CPU
    time is unknown (NaN, or a file written before CPU times were recorded)."""
    cpu_array = np.asarray(cpu, dtype=float) if cpu is not None else np.full(np.shape(wall), np.nan)
    wall_array = np.asarray(wall, dtype=float)
    if cpu_array.shape != wall_array.shape:
        return wall_array
    return np.where(np.isfinite(cpu_array), cpu_array, wall_array)


def check_pilot_size(pilot_mdps: int, pilot_decisions: int, budget_seconds: float) -> None:
    """Raises ValueError naming the first pilot size out of range (MDPs and decisions >= 1,
    budget >= 0 seconds)."""
    for name, value, least in (
        ("pilot_mdps", pilot_mdps, 1),
        ("pilot_decisions", pilot_decisions, 1),
        ("pilot budget (seconds)", budget_seconds, 0),
    ):
        if value < least:
            raise ValueError(f"{name} must be >= {least}, got {value}")


def pilot(
    config: GridConfig,
    pilot_mdps: int = 2,
    pilot_decisions: int = 10,
    budget_seconds: float = 120.0,
    console: Any = None,
    every_cell: bool = False,
    calibration: Calibration | None = None,
) -> Plan:
    """Measures each (experiment, kind) of ``config`` on a pilot and predicts every cell's cost.

    Args:
        budget_seconds: calibrated seconds of pilot work after which only the cheapest point of
            each remaining pair is run.
        every_cell: measure every cell rather than two settings per (experiment, kind); the
            budget then does not apply (the pilot costs about ``pilot_mdps * pilot_decisions /
            (n_mdps * horizon)`` of the grid's online time, plus every training).
        calibration: the seconds per work unit the plan is priced with (default: the shipped
            reference calibration, :func:`bbrl.analysis.cost.reference_calibration`).

    Raises:
        ValueError: for a pilot size below 1 or a cell whose agent this installation lacks.
    """
    check_pilot_size(pilot_mdps, pilot_decisions, budget_seconds)
    groups: dict[tuple[str, str], list[Cell]] = {}
    check_runnable(config.cells)
    for cell in config.cells:
        groups.setdefault((cell.experiment.key, cell.kind), []).append(cell)
    calibration = calibration if calibration is not None else reference_calibration()
    if every_cell:
        return _pilot_every_cell(config, pilot_mdps, pilot_decisions, console, calibration)
    started = time.perf_counter()
    points: dict[tuple[str, str], list[_Point]] = {}
    # The cheapest point of every pair first, so that the budget never leaves a pair unmeasured.
    cheapest = {key: min(cells, key=static_cost) for key, cells in groups.items()}
    dearest = {key: max(cells, key=static_cost) for key, cells in groups.items()}
    for key, cell in cheapest.items():
        points[key] = [_pilot_point(cell, pilot_mdps, pilot_decisions, calibration)]
    for key, cell in sorted(dearest.items(), key=lambda item: static_cost(item[1])):
        if cell is cheapest[key]:
            continue
        if _spent(points) > budget_seconds:
            if console is not None:
                console.print(f"pilot budget of {budget_seconds:.0f} s spent: {key[0]} {key[1]} fitted on one point")
            continue
        points[key].append(_pilot_point(cell, pilot_mdps, pilot_decisions, calibration))
    online = {key: Fit.through([(p.online_units, p.online_per_decision) for p in pts]) for key, pts in points.items()}
    offline = {key: Fit.through([(p.offline_units, p.offline_seconds) for p in pts]) for key, pts in points.items()}
    seconds, offline_seconds = {}, {}
    for cell in config.cells:
        key = (cell.experiment.key, cell.kind)
        e = cell.experiment
        offline_seconds[cell.id] = offline[key](offline_units(cell))
        seconds[cell.id] = offline_seconds[cell.id] + e.n_mdps * e.horizon * online[key](online_units(cell))
    return _plan(seconds, online, offline, started, points, False, offline_seconds, calibration)


def _spent(points: dict[tuple[str, str], list[_Point]]) -> float:
    """The pilot's cost so far in calibrated seconds (training and decisions of every point)."""
    return sum(p.cost for pts in points.values() for p in pts)


def _plan(
    seconds: dict[str, float],
    online: dict[tuple[str, str], Fit],
    offline: dict[tuple[str, str], Fit],
    started: float,
    points: dict[tuple[str, str], list[_Point]],
    every_cell: bool,
    offline_seconds: dict[str, float],
    calibration: Calibration,
) -> Plan:
    runs = [p for pts in points.values() for p in pts]
    return Plan(
        seconds,
        online,
        offline,
        time.perf_counter() - started,
        len(runs),
        every_cell=every_cell,
        offline_seconds=offline_seconds,
        calibration=calibration.name,
        pilot_cpu_seconds=sum(p.measured for p in runs),
        pilot_calibrated_seconds=sum(p.calibrated for p in runs),
    )


def _pilot_every_cell(
    config: GridConfig,
    pilot_mdps: int,
    pilot_decisions: int,
    console: Any,
    calibration: Calibration,
) -> Plan:
    """:func:`pilot` with ``every_cell``: each cell's own training and per-decision cost."""
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    offline_seconds: dict[str, float] = {}
    points: dict[tuple[str, str], list[_Point]] = {}
    for index, cell in enumerate(config.cells):
        point = _pilot_point(cell, pilot_mdps, pilot_decisions, calibration)
        # Training cost is linear in its units (OPPS-DS's draws were capped for the pilot).
        offline = point.offline_seconds * offline_units(cell) / point.offline_units
        e = cell.experiment
        seconds[cell.id] = offline + e.n_mdps * e.horizon * point.online_per_decision
        offline_seconds[cell.id] = offline
        points.setdefault((e.key, cell.kind), []).append(point)
        if console is not None and (index + 1) % 50 == 0:
            elapsed = time.perf_counter() - started
            console.print(f"pilot: {index + 1} of {len(config.cells)} cells measured ({elapsed:.0f} s)")
    # The per-pair lines (kept in plan.json like the two-point pilot's) through each pair's
    # cheapest and dearest measured points.
    online, offline_fits = {}, {}
    for key, pts in points.items():
        ends = [min(pts, key=lambda p: p.online_units), max(pts, key=lambda p: p.online_units)]
        online[key] = Fit.through([(p.online_units, p.online_per_decision) for p in ends])
        ends = [min(pts, key=lambda p: p.offline_units), max(pts, key=lambda p: p.offline_units)]
        offline_fits[key] = Fit.through([(p.offline_units, p.offline_seconds) for p in ends])
    return _plan(seconds, online, offline_fits, started, points, True, offline_seconds, calibration)


def longest_first(cells: Sequence[Cell], out: Path | None = None) -> list[Cell]:
    """``cells`` in decreasing predicted cost: from ``out``'s plan (``bbrl grid plan --out``) when it
    has one, else from :func:`static_cost`. Ties keep the grid's order."""
    try:
        predicted = (read_plan(out) if out is not None else None) or {}
    except ValueError:  # the plan only orders the cells: a damaged one leaves the static order
        predicted = {}
    if all(c.id in predicted for c in cells):
        return sorted(cells, key=lambda c: (-predicted[c.id], c.index))
    return sorted(cells, key=lambda c: (-static_cost(c), c.index))


def lpt_makespan(seconds: Sequence[float], workers: int) -> float:
    """Wall time of ``workers`` runners taking the longest remaining cell first (greedy LPT)."""
    loads = [0.0] * max(workers, 1)
    for s in sorted(seconds, reverse=True):
        i = int(np.argmin(loads))
        loads[i] += s
    return max(loads)


def suggest_workers(seconds: Sequence[float], target_seconds: float, cap: int = 100_000) -> int:
    """The fewest runners whose longest-first makespan fits ``target_seconds`` (the number for
    which it comes closest when the longest cell alone exceeds the target)."""
    total = float(sum(seconds))
    workers = max(1, math.ceil(total / target_seconds))
    longest = max(seconds, default=0.0)
    limit = min(cap, len(seconds)) if seconds else 1
    while workers < limit and lpt_makespan(seconds, workers) > max(target_seconds, longest):
        workers += 1
    return min(workers, limit)


def compare(predicted: dict[str, float], config: GridConfig, out: Path) -> list[tuple[Cell, float, float]]:
    """(cell, predicted, measured core-seconds) for the cells of ``config`` done in ``out``; measured =
    offline + the sum of the trajectories' online CPU seconds (wall seconds where the file has no
    CPU times), as recorded in the cell file."""
    import polars as pl

    from ..protocol.results import read_cell_file
    from .store import cell_path

    rows = []
    for cell in config.cells:
        path = cell_path(out, cell)
        if not path.is_file():
            continue
        frame = read_cell_file(path)
        columns = set(frame.columns)

        def column(name: str, wall: str, frame: pl.DataFrame = frame, columns: set[str] = columns) -> np.ndarray:
            return _cpu_or_wall(frame[name].to_numpy() if name in columns else None, frame[wall].to_numpy())

        offline = column(Col.OFFLINE_CPU_SECONDS, Col.OFFLINE_SECONDS)[0]
        measured = float(offline) + float(column(Col.ONLINE_CPU_SECONDS, Col.ONLINE_SECONDS).sum())
        rows.append((cell, predicted[cell.id], measured))
    return rows


def write_plan(out: Path, plan: Plan) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    return write_atomic(plan_path(out), (plan.to_json() + "\n").encode())
