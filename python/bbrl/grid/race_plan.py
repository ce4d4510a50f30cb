"""What racing saves, predicted before the run: which configurations a race stops, and when.

A race (:mod:`bbrl.grid.race`) stops a configuration on the returns of the test MDPs it has run, so
its savings cannot be read off the cost pilot (:mod:`bbrl.grid.plan`), whose runs are a few
decisions long. The **race pilot** (:func:`race_pilot`) runs every cell of the grid on its first
``m`` test MDPs, whole trajectories, as the race's first batches: by default up to the race's first
decision (the first batch end at or above :data:`~bbrl.analysis.racing.MIN_MDPS`; 30 MDPs when
N = 100, 50 when N = 500). Its rows are those a raced run has, return for return and work count for
work count, and are kept where a race of the same folder finds them, so a race run after its plan
does not run them again.

**The prediction** (:func:`predict_race`) replays the race (:func:`bbrl.analysis.racing.simulate_race`,
the race's own decisions) on ``resamples`` streams of N test MDPs built from those rows. Each stream
begins with the pilot's own ``m`` rows, in order (the race sees exactly these first, so its first
decision is replayed exactly), and goes on with ``N - m`` rows drawn with replacement from them by a
fixed-seed ``numpy`` generator. The same drawn MDP indices serve every configuration of the
experiment, so the pairing of their returns (the race compares paired differences) is kept. A
configuration's predicted stop is its median MDP count over the streams (N when it runs to the end;
``resamples`` is odd by default, so the median is a stop some stream made); the share of streams
that stopped it says how sure the prediction is.

A configuration the race cannot stop (the oracle; a cell without work counts) is predicted to run
every MDP. The predicted raced cost of a cell is its offline cost plus its online cost scaled by the
MDPs it runs: ``offline + (predicted - offline) * n / N``, with the plan's per-cell prediction.

**The pilot's size matters.** The streams hold only the pilot's rows: the paired differences' mean
and spread are those of ``m`` rows, taken for the truth. A difference of about one standard error of
``m`` rows (``s / sqrt(m)``), pure chance when the two configurations are equal, becomes
``sqrt(N / m)`` standard errors at N in every stream, enough for a stop: a small pilot predicts
stops the race does not make, and so too little cost. On the shipped quick grid (N = 100) pilots of
10, 20 and 30 MDPs predicted 26, 15 and 4 stops the race did not make, for 27 to 29 right ones. A pilot
up to the race's first decision costs nothing in a race of the same folder; a larger one (the
``pilot_mdps`` argument) costs ``m / N`` of the grid's online time, less what the race runs anyway.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..analysis.cost import reference_calibration
from ..analysis.racing import (
    MIN_MDPS,
    Contender,
    RaceOptions,
    batch_ends,
    batch_spans,
    contenders_of,
    return_range,
    simulate_race,
)
from ..analysis.scores import ORACLE_KINDS
from ..fileio import write_atomic
from ..protocol.results import from_frames
from ..protocol.schema import Col
from .model import Cell, GridConfig, cells_by_experiment, check_runnable
from .race import batch_path, read_rows, run_batch
from .store import cell_path

__all__ = [
    "DEFAULT_RESAMPLES",
    "Forecast",
    "RacePlan",
    "check_race_pilot",
    "pilot_cost",
    "pilot_size",
    "plan_race",
    "predict_grid",
    "predict_race",
    "race_pilot",
    "race_plan_path",
    "raced_seconds",
    "write_race_plan",
]

#: Streams the race is replayed on (odd: the median stop is one of theirs).
DEFAULT_RESAMPLES = 21


@dataclass(frozen=True)
class Forecast:
    """A configuration's predicted part in its experiment's race.

    Attributes:
        cell_id: the cell.
        n_mdps: its predicted MDP count: the median over the streams (N: runs to the end).
        n_total: N, the experiment's test MDPs.
        stopped_share: the share of streams in which the race stopped it.
        by: the cell that stopped it most often (None if never stopped).
        rule: that stop's rule, ``"beaten"`` or ``"plateau"`` (None if never stopped).
    """

    cell_id: str
    n_mdps: int
    n_total: int
    stopped_share: float
    by: str | None = None
    rule: str | None = None

    @property
    def stops(self) -> bool:
        """Whether the configuration is predicted to stop before N."""
        return self.n_mdps < self.n_total


def check_race_pilot(pilot_mdps: int, resamples: int) -> None:
    """Raises ValueError for a race pilot below 2 MDPs (a spread needs two) or fewer than 1 stream."""
    if isinstance(pilot_mdps, bool) or not isinstance(pilot_mdps, int) or pilot_mdps < 2:
        raise ValueError(f"the race pilot needs at least 2 test MDPs per cell, got {pilot_mdps!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"the race prediction needs at least 1 resample, got {resamples!r}")


def predict_race(
    contenders: Sequence[Contender],
    n_total: int,
    return_low: float,
    return_high: float,
    options: RaceOptions,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Forecast]:
    """Each contender's predicted stop in a race of ``n_total`` test MDPs (see the module's text).

    Args:
        contenders: the experiment's configurations on the pilot's MDPs ``0..m`` (each with its
            returns and online costs on the same ``m`` MDPs, in MDP order; ``2 <= m``).
        n_total: N; a pilot of ``m >= N`` rows is cut to its first N and replayed once (exact).
        return_low, return_high: the range of a return (:func:`~bbrl.analysis.racing.return_range`).
        options: the race's settings.
        resamples: the number of streams; seed: the generator's seed (the prediction depends on
            nothing else).
    """
    check_race_pilot(2, resamples)
    if isinstance(n_total, bool) or not isinstance(n_total, int) or n_total < 1:
        raise ValueError(f"N must be an integer >= 1, got {n_total!r}")
    if not contenders:
        return {}
    m = contenders[0].returns.size
    if any(c.returns.size != m or c.online_costs.size != m for c in contenders):
        raise ValueError("every contender of the race pilot must have returns and costs on the same test MDPs")
    if m < 2:
        raise ValueError(f"the race pilot needs at least 2 test MDPs per cell, got {m}")
    rng = np.random.default_rng(seed)
    exact = m >= n_total
    streams = 1 if exact else resamples
    outcomes: dict[str, list[tuple[int, str | None, str | None]]] = {c.cell_id: [] for c in contenders}
    head = np.arange(min(m, n_total))
    for _ in range(streams):
        rows = np.concatenate([head, rng.integers(0, m, size=n_total - head.size)])
        stream = [c.take(rows) for c in contenders]
        for cell_id, stop in simulate_race(stream, n_total, return_low, return_high, options).items():
            outcomes[cell_id].append((n_total, None, None) if stop is None else (stop.n_mdps, stop.by, stop.rule))
    forecasts = {}
    for cell_id, runs in outcomes.items():
        stopped = [(by, rule) for n, by, rule in runs if by is not None]
        by, rule = Counter(stopped).most_common(1)[0][0] if stopped else (None, None)
        forecasts[cell_id] = Forecast(
            cell_id=cell_id,
            n_mdps=int(statistics.median_low([n for n, _, _ in runs])),
            n_total=n_total,
            stopped_share=len(stopped) / len(runs),
            by=by,
            rule=rule,
        )
    return forecasts


def pilot_size(n_total: int, options: RaceOptions, pilot_mdps: int | None = None) -> int:
    """The race pilot's MDPs for an experiment of ``n_total`` test MDPs: the first batch end of the
    race at or above ``pilot_mdps`` (default :data:`~bbrl.analysis.racing.MIN_MDPS`, the MDPs
    before the race's first decision), at most N."""
    least = MIN_MDPS if pilot_mdps is None else pilot_mdps
    return next(end for end in batch_ends(n_total, options.batch_size(n_total)) if end >= min(least, n_total))


def race_pilot(
    config: GridConfig,
    folder: Path,
    options: RaceOptions,
    pilot_mdps: int | None = None,
    threads: int | None = 1,
    console: Any = None,
) -> pl.DataFrame:
    """Runs every cell of ``config`` on its first test MDPs (:func:`pilot_size`), whole
    trajectories, as the race's first batches, and returns the cells' rows joined
    (:func:`bbrl.protocol.results.from_frames` reads them).

    The batches are written where a race of ``folder`` with the same batch size keeps them
    (:func:`bbrl.grid.race.batch_path`), and the trained agents where a run of ``folder`` finds
    them: a race then run into ``folder`` starts from them, so that the pilot costs nothing more
    (a run without ``--race`` ignores them). Batches already there, and the first rows of cells
    already finished in ``folder``, are read instead of run.

    Raises:
        ValueError: for a pilot below 2 MDPs or a cell whose agent this installation lacks.
    """
    if pilot_mdps is not None:
        check_race_pilot(pilot_mdps, 1)
    check_runnable(config.cells)
    frames = []
    for index, cell in enumerate(config.cells):
        n_total = cell.experiment.n_mdps
        m = pilot_size(n_total, options, pilot_mdps)
        done = read_rows(cell_path(folder, cell), 0, m)
        if done is not None:
            frames.append(done)
            continue
        for start, stop in batch_spans(n_total, options.batch_size(n_total)):
            if stop > m:
                break
            part = read_rows(batch_path(folder, cell, start, stop), start, stop)
            frames.append(part if part is not None else pl.read_parquet(run_batch(folder, cell, start, stop, threads)))
        if console is not None and (index + 1) % 50 == 0:
            console.print(f"race pilot: {index + 1} of {len(config.cells)} cells run")
    return pl.concat(frames, how="diagonal_relaxed")


def predict_grid(
    config: GridConfig,
    rows: pl.DataFrame,
    options: RaceOptions,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, dict[str, Forecast]]:
    """Every cell's :class:`Forecast`, by experiment key (``experiment/prior``), from the race
    pilot's ``rows`` (:func:`race_pilot`). Costs are compared under the shipped calibration, as
    the race compares them; a cell the race cannot stop is forecast to run every MDP."""
    results = from_frames([rows])
    calibration = reference_calibration()
    out: dict[str, dict[str, Forecast]] = {}
    for key, cells in cells_by_experiment(config.cells).items():
        e = cells[0].experiment
        ids = [c.id for c in cells if c.kind not in ORACLE_KINDS]
        frame = results.cells.filter(pl.col(Col.CELL_ID).is_in(ids)).sort(Col.CELL_INDEX)
        contenders = contenders_of(results, frame, calibration) if frame.height else []
        low, high = return_range(e.test_fdm.rewards, e.gamma, e.horizon)
        forecasts = predict_race(contenders, e.n_mdps, low, high, options, resamples, seed)
        out[key] = {c.id: forecasts.get(c.id) or Forecast(c.id, e.n_mdps, e.n_mdps, 0.0) for c in cells}
    return out


def raced_seconds(seconds: float, offline: float, n_mdps: int, n_total: int) -> float:
    """A cell's predicted core-seconds when it runs ``n_mdps`` of its ``n_total`` test MDPs: its
    offline part, plus its online part (``seconds - offline``, N trajectories) scaled to them."""
    online = max(seconds - offline, 0.0)
    return offline + online * n_mdps / n_total


@dataclass(frozen=True)
class RacePlan:
    """A grid's cost predicted without and with racing.

    Attributes:
        seconds: cell id -> predicted core-seconds of a full run (the cost plan's).
        raced: cell id -> predicted core-seconds under the race (:func:`raced_seconds`).
        forecasts: experiment key -> cell id -> :class:`Forecast`.
        pilot_mdps: experiment key -> the race pilot's MDPs per cell.
        pilot_seconds: wall time of the race pilot and the prediction.
    """

    seconds: dict[str, float]
    raced: dict[str, float]
    forecasts: dict[str, dict[str, Forecast]]
    pilot_mdps: dict[str, int]
    pilot_seconds: float

    def to_json(self) -> str:
        return json.dumps(
            {
                "pilot_mdps": self.pilot_mdps,
                "pilot_seconds": self.pilot_seconds,
                "cells": {
                    cell_id: {**vars(forecast), "seconds": self.seconds[cell_id], "raced": self.raced[cell_id]}
                    for by_cell in self.forecasts.values()
                    for cell_id, forecast in by_cell.items()
                },
            },
            indent=1,
        )


def plan_race(
    config: GridConfig,
    seconds: dict[str, float],
    offline: dict[str, float],
    folder: Path,
    options: RaceOptions,
    pilot_mdps: int | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    threads: int | None = 1,
    console: Any = None,
) -> RacePlan:
    """The race pilot (:func:`race_pilot`, into ``folder``), the prediction (:func:`predict_grid`)
    and every cell's raced cost from the cost plan's ``seconds`` and their ``offline`` part."""
    check_race_pilot(pilot_mdps if pilot_mdps is not None else MIN_MDPS, resamples)
    missing = [c.id for c in config.cells if c.id not in seconds or c.id not in offline]
    if missing:
        raise ValueError(f"the cost plan predicts no cost for {len(missing)} cells, e.g. {missing[0]}")
    started = time.perf_counter()
    rows = race_pilot(config, folder, options, pilot_mdps, threads, console)
    forecasts = predict_grid(config, rows, options, resamples)
    by_id = {f.cell_id: f for by_cell in forecasts.values() for f in by_cell.values()}
    raced = {
        c.id: raced_seconds(seconds[c.id], offline[c.id], by_id[c.id].n_mdps, by_id[c.id].n_total) for c in config.cells
    }
    sizes = {
        key: pilot_size(cells[0].experiment.n_mdps, options, pilot_mdps)
        for key, cells in cells_by_experiment(config.cells).items()
    }
    return RacePlan(dict(seconds), raced, forecasts, sizes, time.perf_counter() - started)


def race_plan_path(out: Path) -> Path:
    """Where ``bbrl grid plan --race --out DIR`` keeps the race's prediction."""
    return out / "race-plan.json"


def write_race_plan(out: Path, plan: RacePlan) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    return write_atomic(race_plan_path(out), (plan.to_json() + "\n").encode())


def pilot_cost(
    config: GridConfig,
    seconds: dict[str, float],
    offline: dict[str, float],
    options: RaceOptions,
    pilot_mdps: int | None = None,
    cells: Sequence[Cell] | None = None,
) -> float:
    """The race pilot's predicted core-seconds (of ``cells``, default every cell): each cell's
    training and its online cost scaled to the pilot's MDPs (:func:`pilot_size`)."""
    total = 0.0
    for cell in config.cells if cells is None else cells:
        n_total = cell.experiment.n_mdps
        m = pilot_size(n_total, options, pilot_mdps)
        total += raced_seconds(seconds[cell.id], offline[cell.id], m, n_total)
    return total
