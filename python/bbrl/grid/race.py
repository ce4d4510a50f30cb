"""Running a grid as a race: ``bbrl grid run CONFIG --out DIR --race``.

Each experiment's configurations run in batches of test MDPs (``0..b``, ``b..2b``, ..., the same
MDPs for every configuration); after each round, when every running configuration of the
experiment has its batch, :func:`bbrl.analysis.racing.decide` says which ones stop. A stopped
configuration's cell file holds the MDPs it ran and names what stopped it
(:data:`~bbrl.protocol.schema.RACE_STOPPED_BY`); the others run on to N, and their cell files are
those of a full run, row for row.

Layout, besides the folder's usual files (:mod:`bbrl.grid.store`):

* ``DIR/race.json``: the race's settings; a folder never mixes two settings.
* ``DIR/batches/<experiment>/<prior>/<kind>/<params>/<start>-<stop>.parquet``: one batch of a cell,
  written atomically, claimed while it runs (``.claim`` beside it); joined into the cell's file
  when the cell stops or reaches N.
* ``DIR/race/<experiment>/<prior>.json``: the decisions so far: the last round decided and every
  stop, with its bounds.

A batch is the unit a runner claims, so a killed runner loses at most its batch, and runners sharing
the folder (``--shard``, Dask workers) each take unclaimed batches and wait at the end of a round
for the others. The decisions depend only on the returns and the work counts of the batches, never
on which runner ran them, their thread count or their order, so every engine gives the same stops
and the same results.
"""

from __future__ import annotations

import io
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from .. import agents
from ..analysis.cost import reference_calibration
from ..analysis.racing import (
    BOUNDS,
    COST_ORDER,
    Contender,
    RaceOptions,
    Stop,
    batch_spans,
    comparable_pairs,
    contenders_of,
    decide,
    describe_stop,
    return_range,
)
from ..analysis.scores import ORACLE_KINDS
from ..fileio import json_field, read_json_document, write_atomic
from ..protocol.results import CellFileError, from_frames, read_cell_file
from ..protocol.schema import RACE_STOPPED_BY, Col
from .claims import Claim, file_lock
from .model import Cell, ExperimentConfig, GridConfig, cells_by_experiment
from .runner import GridRun, prepare_folder, run_cell
from .store import cell_path, experiment_folder, failure_path, folder_lock, write_failure

__all__ = [
    "RaceState",
    "batch_path",
    "race_outcome",
    "race_state",
    "read_rows",
    "record_race",
    "recorded_race",
    "retry_failures",
    "run_batch",
    "run_raced_grid",
]

#: The cost model a race compares configurations with: the shipped calibration, so that every
#: machine and every engine takes the same decisions (the maps' default model).
RACE_CALIBRATION = "reference"


def record_race(out: Path, options: RaceOptions) -> None:
    """Records the race's settings in ``out/race.json``; refuses a folder raced with other settings,
    or whose cells were run in full (without a race)."""
    file = out / "race.json"
    settings = {**options.settings(), "calibration": RACE_CALIBRATION, "bounds": BOUNDS, "cost_order": COST_ORDER}
    with folder_lock(out):
        if file.is_file():
            recorded = read_json_document(file, "race record")
            if recorded != settings:
                diff = ", ".join(
                    f"{k} {recorded.get(k)!r} there, {v!r} here" for k, v in settings.items() if recorded.get(k) != v
                )
                raise ValueError(f"{out} was raced with other settings ({diff}); use another --out folder")
            return
        if (out / "cells").is_dir() and any((out / "cells").rglob("*.parquet")):
            raise ValueError(f"{out} holds cells of a run without --race; race into another --out folder")
        write_atomic(file, (json.dumps(settings, indent=1) + "\n").encode())


def recorded_race(out: Path) -> RaceOptions | None:
    """The race settings a folder was run with, or None for a folder run in full."""
    file = out / "race.json"
    if not file.is_file():
        return None
    return RaceOptions.from_record(read_json_document(file, "race record"), f"race record {str(file)!r}")


def batch_path(out: Path, cell: Cell, start: int, stop: int) -> Path:
    """Where the batch ``start..stop`` of ``cell`` is kept until the cell is joined."""
    relative = cell_path(out, cell).relative_to(out / "cells")
    folder = out / "batches" / relative.with_name(relative.name[: -len(".parquet")])
    return folder / f"{start:07d}-{stop:07d}.parquet"


def _state_path(out: Path, experiment: ExperimentConfig) -> Path:
    folder = experiment_folder(out / "race", experiment)
    return folder.parent / f"{folder.name}.json"


@dataclass
class RaceState:
    """The decisions of one experiment's race so far.

    Attributes:
        decided: the MDP count of the last round decided (0 before the first).
        stops: each stopped cell's :class:`~bbrl.analysis.racing.Stop`, by cell id.
    """

    decided: int
    stops: dict[str, Stop]

    def to_document(self) -> dict[str, Any]:
        return {"decided": self.decided, "stops": {k: vars(v) for k, v in self.stops.items()}}


def race_state(out: Path, experiment: ExperimentConfig) -> RaceState:
    """The recorded decisions of ``experiment``'s race in ``out`` (none yet: decided 0)."""
    path = _state_path(out, experiment)
    if not path.is_file():
        return RaceState(0, {})
    where = f"race record {str(path)!r}"
    document = read_json_document(path, "race record")
    decided = json_field(document, "decided", "an integer", where)
    stops = json_field(document, "stops", "an object", where)
    return RaceState(decided, {k: Stop.from_document(v, f"{where}: stop {k!r}") for k, v in stops.items()})


def read_rows(path: Path, start: int, stop: int) -> pl.DataFrame | None:
    """The rows of test MDPs ``start..stop`` of a batch or a whole cell file, or None when the
    file is missing, damaged, or lacks one of them. A batch may vanish while it is read: another
    runner that decided its round joins the cell and removes its batches (under the race's lock,
    which a runner only looking for missing batches does not hold)."""
    if not path.is_file():
        return None
    try:
        frame = read_cell_file(path).filter((pl.col(Col.MDP) >= start) & (pl.col(Col.MDP) < stop))
    except CellFileError:  # damaged, or removed since the look above
        return None
    return frame if frame[Col.MDP].sort().to_list() == list(range(start, stop)) else None


def run_batch(out: Path, cell: Cell, start: int, stop: int, threads: int | None) -> Path:
    """Runs ``cell`` on test MDPs ``start..stop`` into its batch file (:func:`batch_path`). A Python
    agent's batch runs in this process: worker processes cost more to start than a batch of a few
    MDPs takes (the results do not depend on it)."""
    workers = 1 if isinstance(cell.spec, agents.Agent) else threads
    return run_cell(out, cell, workers, mdps=range(start, stop), path=batch_path(out, cell, start, stop))


def _join(out: Path, cell: Cell, spans: list[tuple[int, int]], n: int, stop: Stop | None) -> None:
    """Writes the cell's file from its batches up to ``n`` MDPs (atomically), then removes them."""
    parts = [read_cell_file(batch_path(out, cell, a, b)) for a, b in spans if b <= n]
    frame = pl.concat(parts, how="vertical")
    if stop is not None:
        frame = frame.with_columns(pl.lit(describe_stop(stop), dtype=pl.String).alias(RACE_STOPPED_BY))
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    path = cell_path(out, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, buffer.getvalue())
    for a, b in spans:
        batch_path(out, cell, a, b).unlink(missing_ok=True)


class _Experiment:
    """One experiment's race: :meth:`advance` is one step of it (what :func:`run_raced_grid` loops on)."""

    def __init__(self, out: Path, experiment: ExperimentConfig, cells: list[Cell], options: RaceOptions) -> None:
        self.out, self.experiment, self.cells, self.options = out, experiment, cells, options
        self.spans = batch_spans(experiment.n_mdps, options.batch_size(experiment.n_mdps))
        self.ends = [stop for _, stop in self.spans]
        self.low, self.high = return_range(experiment.test_fdm.rewards, experiment.gamma, experiment.horizon)
        # Batches never change once written: each is read once per runner.
        self._parts: dict[Path, pl.DataFrame] = {}
        #: Decisions and joins (which remove batches) happen under this lock only.
        self.lock = out / "locks" / "race.lock"

    def _part(self, cell: Cell, start: int, stop: int) -> pl.DataFrame | None:
        path = batch_path(self.out, cell, start, stop)
        if path not in self._parts:
            frame = read_rows(path, start, stop)
            if frame is None:
                return None
            self._parts[path] = frame
        return self._parts[path]

    def finished(self) -> bool:
        return all(_is_joined(self.out, c) for c in self.cells)

    def advance(self, threads: int | None, on_round: Callable[[str, int, int, list[Stop]], None]) -> tuple[bool, bool]:
        """Does one step of this experiment's race: runs one unclaimed batch a running cell lacks
        up to the current round's end, or, when every running cell has them, decides the round.
        Returns (did something, waits on another runner).

        A cell that failed drops out of the race; run again (its failure record is removed when a
        race starts), it catches up with the round from its own first missing batch, and joins the
        decisions from there; after the last round it runs to N."""
        state = race_state(self.out, self.experiment)
        if self._finished_cells(state):
            # Left by a runner killed between a decision and its joins, or a cell that caught up
            # after the last round: joined under the race's lock, as every join is, so that no
            # runner reads batches another one is removing.
            with file_lock(self.lock):
                self._join_decided(race_state(self.out, self.experiment))
            return True, False
        n = self.experiment.n_mdps
        stop = n if state.decided >= n else self.ends[self.ends.index(state.decided) + 1 if state.decided else 0]
        running = [c for c in self.cells if c.id not in state.stops and not _is_joined(self.out, c)]
        waiting = False
        for cell in running:
            for first, end in self._batches(stop):
                path = batch_path(self.out, cell, first, end)
                if path.is_file():  # written atomically: whole (a damaged one is run again, below)
                    continue
                outcome = self._run_batch(cell, first, end, threads)
                if outcome == "busy":
                    waiting = True
                    break
                return True, False
        if waiting or state.decided >= n:
            return False, waiting
        for cell in running:
            for first, end in self._batches(stop):
                if self._part(cell, first, end) is None:
                    # Damaged on disk (not by us: batches are written atomically): run it again.
                    batch_path(self.out, cell, first, end).unlink(missing_ok=True)
                    return True, False
        decided = self._decide(stop)
        if decided is not None:
            on_round(self.experiment.key, stop, len(running) - len(decided), decided)
        return True, False

    def _batches(self, stop: int) -> list[tuple[int, int]]:
        """The batches ``(start, stop)`` up to ``stop`` MDPs."""
        return [span for span in self.spans if span[1] <= stop]

    def _run_batch(self, cell: Cell, first: int, end: int, threads: int | None) -> str:
        """Claims and runs one batch of ``cell``: ``"ran"`` (or found done, or the cell failed:
        recorded, and it drops out of the race), or ``"busy"`` (another runner holds it)."""
        path = batch_path(self.out, cell, first, end)
        claim = Claim(path.with_suffix(".claim"), self.out / "locks" / "claims.lock")
        if claim.acquire() is not None:
            return "busy"
        try:
            # Another runner may have run it, or decided past it and joined the cell, meanwhile.
            current = race_state(self.out, self.experiment)
            if path.is_file() or cell.id in current.stops or _is_joined(self.out, cell):
                return "ran"
            try:
                run_batch(self.out, cell, first, end, threads)
            except Exception as exc:  # an agent's failure: recorded, the race goes on without it
                write_failure(self.out, cell, exc, "".join(traceback.format_exception(exc)[-12:]))
        finally:
            claim.release()
        return "ran"

    def _finished_cells(self, state: RaceState) -> list[tuple[Cell, int, Stop | None]]:
        """The cells the recorded decisions have finished (stopped, or at N) whose files are not
        written yet, with their MDP count and stop."""
        by_id = {c.id: c for c in self.cells}
        out = [
            (by_id[s.cell_id], s.n_mdps, s)
            for s in state.stops.values()
            if s.cell_id in by_id and not _is_joined(self.out, by_id[s.cell_id])
        ]
        if state.decided >= self.experiment.n_mdps:
            n = self.experiment.n_mdps
            out += [
                (c, n, None)
                for c in self.cells
                if c.id not in state.stops
                and not _is_joined(self.out, c)
                and all(batch_path(self.out, c, a, b).is_file() for a, b in self._batches(n))
            ]
        return out

    def _join_decided(self, state: RaceState) -> None:
        """Joins the cells :meth:`_finished_cells` names; the caller holds the race's lock."""
        for cell, n, stop in self._finished_cells(state):
            _join(self.out, cell, self.spans, n, stop)

    def _decide(self, stop: int) -> list[Stop] | None:
        """Decides the round ending at ``stop`` MDPs: the new stops, or None if another runner
        had decided it."""
        with file_lock(self.lock):
            state = race_state(self.out, self.experiment)
            if state.decided >= stop:
                return None  # another runner decided this round
            running = [c for c in self.cells if c.id not in state.stops and not failure_path(self.out, c).is_file()]
            new: list[Stop] = []
            if stop < self.experiment.n_mdps:
                contenders = self._contenders(running, stop)
                # The family delta is split over (family_wise): every configuration raced.
                every = self._contenders(self.cells, self.ends[0], missing_ok=True) if self.options.family_wise else []
                new = decide(
                    contenders, self.experiment.n_mdps, self.low, self.high, self.options, comparable_pairs(every)
                )
            state.stops.update({s.cell_id: s for s in new})
            state.decided = stop
            path = _state_path(self.out, self.experiment)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, (json.dumps(state.to_document(), indent=1) + "\n").encode())
            self._join_decided(state)
        return new

    def _contenders(self, cells: list[Cell], n: int, missing_ok: bool = False) -> list[Contender]:
        """The raceable cells (not the oracle; with work counts) as they stood after ``n`` MDPs."""
        frames = []
        for cell in cells:
            if cell.kind in ORACLE_KINDS:
                continue
            parts = [self._part(cell, a, b) for a, b in self._batches(n)]
            if cell_path(self.out, cell).is_file():  # joined (e.g. stopped earlier): its first rows
                parts = [read_cell_file(cell_path(self.out, cell)).filter(pl.col(Col.MDP) < n)]
            if any(p is None for p in parts):
                if missing_ok:
                    continue
                raise RuntimeError(f"race: batch of {cell.id} missing below {n} MDPs")
            frames.extend(p for p in parts if p is not None)
        if not frames:
            return []
        results = from_frames(frames)
        return contenders_of(results, results.cells, reference_calibration())


def retry_failures(out: Path, cells: list[Cell]) -> None:
    """Removes the failure records of ``cells`` that have no cell file, so that a race runs them
    again (their batches so far are kept)."""
    for cell in cells:
        if not cell_path(out, cell).is_file():
            failure_path(out, cell).unlink(missing_ok=True)


def _is_joined(out: Path, cell: Cell) -> bool:
    """Whether the cell is over: its file written (atomically, so whole) or its failure recorded."""
    return cell_path(out, cell).is_file() or failure_path(out, cell).is_file()


def run_raced_grid(
    config: GridConfig,
    out: str | os.PathLike[str],
    options: RaceOptions,
    threads: int | None = None,
    console: Any = None,
    poll_seconds: float = 1.0,
    retry_failed: bool = True,
) -> GridRun:
    """Races every experiment of ``config`` into ``out`` (see the module's text); resumes a race
    left unfinished. Returns what ran (``GridRun.ran``: the cells joined now, stopped or full).

    ``retry_failed``: run cells whose agent failed again, as ``bbrl grid run`` does (they catch up
    with the race from their first missing batch); the engines' own tasks pass False, their
    driver having cleared the failures once (:func:`retry_failures`)."""
    from rich.console import Console

    console = console or Console()
    folder = Path(out)
    selected, _, skipped = prepare_folder(config, folder, None, console)
    record_race(folder, options)
    if retry_failed:
        retry_failures(folder, selected)
    started = time.perf_counter()
    by_experiment = cells_by_experiment(selected)
    races = [_Experiment(folder, cells[0].experiment, cells, options) for cells in by_experiment.values()]

    def on_round(key: str, n: int, running: int, stops: list[Stop]) -> None:
        finished = "finished" if n == by_experiment[key][0].experiment.n_mdps else "running on"
        console.print(f"{key}: {n} MDPs decided, {len(stops)} stopped, {running} {finished}", highlight=False)
        for stop in stops:
            console.print(f"  stopped: {stop.cell_id}, by {describe_stop(stop)}", highlight=False)

    while True:
        progressed = waiting = False
        for race in races:
            did, waits = race.advance(threads, on_round)
            progressed, waiting = progressed or did, waiting or waits
        if not progressed:
            if not waiting and all(r.finished() for r in races):
                break
            time.sleep(poll_seconds)
    return race_outcome(folder, selected, skipped, time.perf_counter() - started, console)


def race_outcome(folder: Path, selected: list[Cell], skipped: list[Cell], seconds: float, console: Any) -> GridRun:
    """What a race of ``selected`` into ``folder`` did, as every engine reports it: the cells
    joined now, those done before, the failures; and a line saying how many stopped early."""
    done = {c.id for c in skipped}
    failed = [(c, "see " + str(failure_path(folder, c))) for c in selected if failure_path(folder, c).is_file()]
    ran = [c for c in selected if c.id not in done and not failure_path(folder, c).is_file()]
    experiments = {c.experiment.key: c.experiment for c in selected}.values()
    stopped = sum(len(race_state(folder, e).stops) for e in experiments)
    console.print(f"race: {stopped} of {len(selected)} configurations stopped early", highlight=False)
    return GridRun(ran, skipped, seconds, failed)
