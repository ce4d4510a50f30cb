"""The grid runner: trains (or loads) each unfinished cell's agent, runs it on the experiment's test
MDPs and writes the cell's file atomically, one cell after another.

A cell whose agent fails is recorded with its error (``<params>.failed.json``) and the run goes on
with the others; the failures are listed at the end. Ctrl-C stops the run: finished cells stay on
disk, the cell in progress is lost, and the next run resumes.

Cells run longest first (by :func:`bbrl.grid.plan.longest_first`), so that on several runners the
long cells do not all end up last. Every cell is claimed before it runs (:func:`run_claimed`), so
runners sharing a folder (shards, Dask workers, SLURM tasks) never compute the same cell twice.
"""

from __future__ import annotations

import io
import json
import os
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import agents
from ..fileio import write_atomic
from ..protocol import Experiment
from ..protocol.results import CellFileError, check_cell_file
from ..protocol.schema import CELL_COLUMNS, REWARDS_COLUMN, Col, describe_host, host_columns, per_mdp_frame
from ..version import __version__
from .claims import file_lock
from .display import open_display
from .model import Cell, GridConfig, check_runnable
from .plan import longest_first
from .shards import select_shard
from .store import (
    agent_lock,
    agent_path,
    cell_claim,
    cell_path,
    check_settings,
    failure_path,
    record_config,
    remove_stale_temp_files,
    write_failure,
)

__all__ = [
    "CellOutcome",
    "GridRun",
    "cores_given",
    "in_thread",
    "prepare_folder",
    "run_cell",
    "run_claimed",
    "run_grid",
]


def _json(value: Any) -> str:
    return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}, sort_keys=False)


def in_thread(work: Callable[[], Any], on_poll: Callable[[], None] | None = None) -> Any:
    """Runs ``work`` (a Rust call with the GIL released) in a worker thread so that this thread
    stays responsive to signals: Python runs signal handlers only in the main thread, between
    bytecodes, so a long call made from the main thread would hold a Ctrl-C until it returns."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="bbrl-grid", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(timeout=0.1)
        if on_poll is not None:
            on_poll()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _trained(out: Path, cell: Cell) -> agents.TrainedAgent:
    """The cell's agent trained on its prior, from the cache or trained now (and cached). Under
    the agent's lock: runners needing the same agent wait for the first to train and write it."""
    with file_lock(agent_lock(out, cell)):
        return _trained_unlocked(out, cell)


def _trained_unlocked(out: Path, cell: Cell) -> agents.TrainedAgent:
    assert cell.spec is not None
    e = cell.experiment
    path = agent_path(out, cell)
    if path.is_file():
        try:
            trained = _cached(path, cell)
            if (
                trained.spec == cell.spec
                and trained.prior == e.prior_fdm
                and (trained.gamma, trained.horizon, trained.seed) == (e.gamma, e.horizon, e.seed)
            ):
                return trained
            raise ValueError("it was trained with another setting or prior")
        except (ValueError, OSError) as exc:
            warnings.warn(
                f"{path}: cached trained agent refused and trained again: {exc}", RuntimeWarning, stacklevel=2
            )
    spec = cell.spec
    trained = in_thread(lambda: spec.train(e.prior_fdm, e.gamma, e.horizon, e.seed))
    path.parent.mkdir(parents=True, exist_ok=True)
    trained.save(path)
    return trained


def _cached(path: Path, cell: Cell) -> agents.TrainedAgent:
    """The trained agent of the cache file ``path``, read as data for the cell's kind only: a
    built-in agent's file holding a Python agent (or the reverse, or another kind) is refused
    before anything is built from it."""
    from ..agents.files import from_document, read_document

    document = read_document(path)
    python_cell = isinstance(cell.spec, agents.Agent)
    if ("python" in document) != python_cell or (not python_cell and document.get("kind") != cell.kind):
        raise ValueError(f"it does not hold a {cell.kind!r} agent")
    agent_class = type(cell.spec) if python_cell else None
    return from_document(document, str(path), agent_class)


def run_cell(
    out: Path,
    cell: Cell,
    threads: int | None = None,
    on_mdps: Callable[[int], None] | None = None,
    mdps: range | None = None,
    path: Path | None = None,
) -> Path:
    """Trains (or loads) the cell's agent, runs it on the experiment's MDPs and writes the cell's
    Parquet file atomically (with the per-step rewards when its experiment records them). Returns
    the file.

    ``mdps`` and ``path``: run only these test MDPs (a batch of a race) and write them to ``path``
    instead of the cell's file."""
    check_runnable([cell])
    e = cell.experiment
    trained = _trained(out, cell)
    experiment = Experiment(e.test_fdm, n_mdps=e.n_mdps, gamma=e.gamma, horizon=e.horizon, seed=e.seed, name=e.name)
    # The same code path as Experiment.run everywhere: built-in agents in the core's threads, Python
    # agents (which hold the GIL) on worker processes.
    selected = range(e.n_mdps) if mdps is None else mdps
    result = experiment.run(
        trained, threads=threads, record_rewards=e.record_rewards, on_progress=on_mdps, mdps=selected
    )
    returns, online, online_cpu = result.returns, result.online_seconds, result.online_cpu_seconds
    online_work, offline_work = result.online_work, result.offline_work
    rewards, used = result.rewards, result.threads
    host = describe_host()  # after the run: the load average covers it
    values = {
        Col.CELL_ID: cell.id,
        Col.CELL_INDEX: cell.index,
        Col.EXPERIMENT: e.name,
        Col.TEST: e.test,
        Col.PRIOR: e.prior,
        Col.AGENT: cell.label,
        Col.BLOCK: cell.block,
        Col.KIND: cell.kind,
        Col.ALGORITHM: cell.algorithm,
        Col.LABEL: cell.label,
        Col.PARAMS: _json(cell.spec.params),
        Col.DETAILS: json.dumps(trained.details),
        Col.N_MDPS: e.n_mdps,
        Col.GAMMA: e.gamma,
        Col.HORIZON: e.horizon,
        Col.SEED: e.seed,
        Col.OFFLINE_SECONDS: trained.offline_seconds,
        Col.OFFLINE_CPU_SECONDS: trained.offline_cpu_seconds,
        Col.BBRL_VERSION: __version__,
        Col.MDP: _arange(selected),
        Col.RETURN: returns,
        Col.ONLINE_SECONDS: online,
        Col.ONLINE_CPU_SECONDS: online_cpu,
        Col.ONLINE_WORK: online_work,
        Col.OFFLINE_WORK: offline_work,
        Col.FINGERPRINT: result.fingerprint,
        **host_columns(host, used if used is not None else host["logical_cores"]),
    }
    columns = CELL_COLUMNS
    if e.record_rewards:
        values[REWARDS_COLUMN] = rewards
        columns = (*CELL_COLUMNS, REWARDS_COLUMN)
    frame = per_mdp_frame(columns, values, len(selected))
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    path = cell_path(out, cell) if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, buffer.getvalue())


def _arange(mdps: range) -> Any:
    import numpy as np

    return np.arange(mdps.start, mdps.stop, dtype=np.int64)


@dataclass
class GridRun:
    """What a call of :func:`run_grid` did.

    Attributes:
        ran: cells run and written now.
        skipped: cells already done (their file reads back whole).
        seconds: wall time of the run.
        failed: cells whose agent failed, with the error (recorded beside the cell's file).
        busy: cells left to the live runners that had claimed them, with who holds the claim.
    """

    ran: list[Cell]
    skipped: list[Cell]
    seconds: float
    failed: list[tuple[Cell, str]] = field(default_factory=list)
    busy: list[tuple[Cell, str]] = field(default_factory=list)


def cores_given() -> int:
    """The cores this process was given: SLURM's ``--cpus-per-task`` inside a SLURM job (SLURM
    does not always pin a task to its cores), else the CPU affinity (taskset, cgroups, Dask's
    worker pinning), not every core of the node."""
    slurm = os.environ.get("SLURM_CPUS_PER_TASK")
    if slurm and slurm.isdigit() and int(slurm) > 0:
        return int(slurm)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class CellOutcome:
    """What :func:`run_claimed` did with a cell: ``"ran"`` (written now), ``"done"`` (another runner
    had finished it), ``"busy"`` (a live runner holds its claim; with ``wait=False``) or
    ``"failed"`` (recorded beside the cell, ``error`` says why). ``seconds``: wall time spent."""

    status: str
    seconds: float = 0.0
    error: str = ""
    holder: str = ""


def run_claimed(
    out: Path,
    cell: Cell,
    threads: int | None = None,
    on_mdps: Callable[[int], None] | None = None,
    wait: bool = False,
    poll_seconds: float = 2.0,
) -> CellOutcome:
    """Claims ``cell``, runs it unless it is done, records its result or failure, releases the claim.

    With ``wait``, a cell claimed by a live runner is waited for (until that runner finishes it or
    its claim expires, see :mod:`bbrl.grid.claims`): what an engine task does, so that a task
    rescheduled after a worker died neither duplicates nor skips its cell.
    """
    started = time.perf_counter()
    while True:
        if _is_done(out, cell):
            return CellOutcome("done", time.perf_counter() - started)
        claim = cell_claim(out, cell)
        holder = claim.acquire()
        if holder is None:
            break
        if not wait:
            return CellOutcome("busy", time.perf_counter() - started, holder=holder.describe())
        time.sleep(poll_seconds)
    try:
        if _is_done(out, cell):  # finished by another runner between the check and the claim
            return CellOutcome("done", time.perf_counter() - started)
        try:
            run_cell(out, cell, threads, on_mdps)
        except Exception as exc:  # an agent's failure: record it, the caller goes on with other cells
            details = "".join(traceback.format_exception(exc)[-12:])
            write_failure(out, cell, exc, details)
            return CellOutcome("failed", time.perf_counter() - started, f"{type(exc).__name__}: {exc}")
        failure_path(out, cell).unlink(missing_ok=True)
        return CellOutcome("ran", time.perf_counter() - started)
    finally:
        claim.release()


def _is_done(folder: Path, cell: Cell) -> bool:
    path = cell_path(folder, cell)
    if not path.is_file():
        return False
    try:
        check_cell_file(path, cell.experiment.n_mdps)
    except CellFileError:
        return False
    return True


def prepare_folder(
    config: GridConfig, folder: Path, shard: tuple[int, int] | None, console: Any
) -> tuple[list[Cell], list[Cell], list[Cell]]:
    """What every engine does before sending cells out: checks that every agent is known, records
    the settings and the configuration (under the folder's lock), removes stale temporary files.
    Returns the shard's cells, those to run (longest first) and those already done."""
    check_runnable(config.cells)
    folder.mkdir(parents=True, exist_ok=True)
    check_settings(folder, config)
    record_config(folder, config)
    remove_stale_temp_files(folder)
    for skipped_agent in config.skipped_agents:
        console.print(f"skipping optional agent {skipped_agent}: not available in this installation")
    selected = select_shard(config.cells, shard)
    finished = {c.index for c in selected if _is_done(folder, c)}
    todo = longest_first([c for c in selected if c.index not in finished], folder)
    skipped = [c for c in selected if c.index in finished]
    return selected, todo, skipped


def run_grid(
    config: GridConfig,
    out: str | os.PathLike[str],
    shard: tuple[int, int] | None = None,
    threads: int | None = None,
    console: Any = None,
) -> GridRun:
    """Runs every unfinished cell of ``config`` (or of one shard) into ``out``.

    Finished cells (a file that reads back with one row per test MDP) are skipped; a damaged or
    short file and a recorded failure are run again. Each new cell is written atomically as soon
    as it finishes, so an interrupted run loses at most the cell in progress. A cell whose agent
    raises is recorded as failed and the run continues; ``GridRun.failed`` lists them. Temporary
    files left by killed writers are removed first. Cells run longest first; a cell claimed by
    another live runner is left to it (``GridRun.busy``).
    """
    from rich.console import Console

    console = console or Console()
    folder = Path(out)
    selected, todo, skipped = prepare_folder(config, folder, shard, console)
    started = time.perf_counter()
    if skipped:
        console.print(f"{len(skipped)} of {len(selected)} cells already done in {folder}; running {len(todo)}")
    if not todo:
        return GridRun([], skipped, 0.0)
    ran: list[Cell] = []
    failed: list[tuple[Cell, str]] = []
    busy: list[tuple[Cell, str]] = []
    with open_display(console, len(selected), len(skipped)) as display:
        for cell in todo:
            display.start(cell)
            outcome = run_claimed(folder, cell, threads, display.mdps)
            if outcome.status == "failed":
                failed.append((cell, outcome.error))
                display.fail(cell, outcome.error)
            elif outcome.status == "busy":
                busy.append((cell, outcome.holder))
            elif outcome.status == "ran":
                ran.append(cell)
                display.finish(cell, cell_path(folder, cell), outcome.seconds)
            else:  # finished by another runner meanwhile
                skipped.append(cell)
    if busy:
        console.print(f"{len(busy)} cells left to the other runners that are computing them", highlight=False)
    return GridRun(ran, skipped, time.perf_counter() - started, failed, busy)
