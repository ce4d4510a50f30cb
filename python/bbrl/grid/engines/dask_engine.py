"""Running a grid on a Dask distributed cluster: ``bbrl grid run CONFIG --out DIR --scheduler ADDRESS``.

The driver (this process) prepares the output folder as a local run does, then submits one task
per unfinished cell, longest first (Dask's ``priority``). A task parses the configuration's text
on the worker, finds its cell by index (checking its id), and runs it through
:func:`~bbrl.grid.runner.run_claimed` with ``wait=True``. Dask reruns the tasks of a worker that
dies on the other workers; the dead worker's claim expires (see :mod:`bbrl.grid.claims`) and the
cell is computed again, once. The output folder must be on a file system every worker sees, at
the same path; so must a Python agent's file (or its module must be installed on the workers).
"""

from __future__ import annotations

import functools
import os
import socket
import time
import traceback
from pathlib import Path
from typing import Any

from ..config import parse_config
from ..display import open_display
from ..model import GridConfig
from ..runner import CellOutcome, GridRun, cores_given, prepare_folder, run_claimed
from ..store import cell_path, write_failure

__all__ = ["connect", "race_on_dask", "race_worker_task", "run_on_dask", "worker_task"]


def connect(scheduler: str) -> Any:
    """A Dask client for ``scheduler``: an address (``tcp://host:port``) or a scheduler file (JSON).

    Raises:
        ValueError: when Dask's distributed scheduler is not installed, or cannot be reached.
    """
    try:
        from distributed import Client
    except ImportError:
        raise ValueError("--scheduler needs Dask's distributed scheduler: pip install 'bbrl-bench[cluster]'") from None
    try:
        if Path(scheduler).is_file():
            return Client(scheduler_file=scheduler, timeout=30)
        return Client(scheduler, timeout=30)
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"cannot reach the Dask scheduler {scheduler!r}: {exc}") from None


@functools.lru_cache(maxsize=4)
def _parsed(text: str, base: str | None) -> GridConfig:
    return parse_config(text, "<grid configuration>", Path(base) if base else None)


def _worker_threads() -> int:
    """The cores of this worker process divided among its task threads (at least one each)."""
    try:
        from distributed import get_worker

        nthreads = max(int(get_worker().state.nthreads), 1)
    except (ImportError, ValueError, AttributeError):
        nthreads = 1
    return max(cores_given() // nthreads, 1)


def worker_task(text: str, base: str | None, out: str, index: int, cell_id: str, threads: int | None) -> dict[str, Any]:
    """What a worker does for one cell: returns the :class:`~bbrl.grid.runner.CellOutcome` as a
    dict (plus the host and process that ran it). A configuration this worker cannot read (a
    Python agent's file it cannot see, another version of bbrl) is recorded as the cell's failure,
    naming the worker and what to do."""
    folder = Path(out)
    where = f"{socket.gethostname()} (process {os.getpid()})"
    try:
        config = _parsed(text, base)
    except ValueError as exc:
        message = (
            f"worker {where} cannot read the grid's configuration: {exc}. Every worker must see the "
            f"configuration's files at the same paths as the driver (a shared file system: base folder {base!r}) "
            "or have a Python agent's module installed (class = 'module:Class')"
        )
        raise ValueError(message) from None
    cell = config.cells[index] if 0 <= index < len(config.cells) else None
    if cell is None or cell.id != cell_id:
        raise ValueError(
            f"worker {where} expands the configuration differently (cell {index} is "
            f"{cell.id if cell else 'missing'!r}, expected {cell_id!r}): install the same bbrl version on every worker"
        )
    try:
        outcome = run_claimed(folder, cell, threads or _worker_threads(), wait=True)
    except Exception as exc:  # the folder itself failed (not the agent): record it for `grid status`
        write_failure(folder, cell, exc, "".join(traceback.format_exception(exc)[-12:]))
        outcome = CellOutcome("failed", error=f"{type(exc).__name__}: {exc}")
    return {**outcome.__dict__, "where": where}


def run_on_dask(
    config: GridConfig,
    out: str | os.PathLike[str],
    scheduler: str,
    shard: tuple[int, int] | None = None,
    threads: int | None = None,
    console: Any = None,
) -> GridRun:
    """Runs every unfinished cell of ``config`` (or one shard) on the Dask cluster at ``scheduler``;
    the results land in ``out`` as with :func:`bbrl.grid.run_grid`.

    ``threads``: threads per cell (default: the worker's cores divided by its task threads).
    """
    from rich.console import Console

    console = console or Console()
    folder = Path(out).resolve()
    selected, todo, skipped = prepare_folder(config, folder, shard, console)
    started = time.perf_counter()
    if skipped:
        console.print(f"{len(skipped)} of {len(selected)} cells already done in {out}; running {len(todo)}")
    if not todo:
        return GridRun([], skipped, 0.0)
    base = config.base if config.base is not None else (config.path.resolve().parent if config.path else None)
    client = connect(scheduler)
    ran, failed = [], []
    try:
        from distributed import as_completed

        workers = len(client.scheduler_info().get("workers", {}))
        console.print(f"sending {len(todo)} cells to {workers} Dask workers at {scheduler}", highlight=False)
        run_id = f"{time.time_ns():x}"
        futures = {}
        for rank, cell in enumerate(todo):
            future = client.submit(
                worker_task,
                config.text,
                str(base) if base else None,
                str(folder),
                cell.index,
                cell.id,
                threads,
                key=f"bbrl-{run_id}-cell-{cell.index}",
                priority=len(todo) - rank,  # longest first
                pure=False,
            )
            futures[future] = cell
        with open_display(console, len(selected), len(skipped)) as display:
            for future in as_completed(futures):
                cell = futures[future]
                try:
                    outcome = future.result()
                except Exception as exc:  # the task itself failed (e.g. its worker died too often)
                    message = f"{type(exc).__name__}: {exc}"
                    failed.append((cell, message))
                    display.fail(cell, message)
                    continue
                if outcome["status"] == "failed":
                    failed.append((cell, outcome["error"]))
                    display.fail(cell, outcome["error"])
                else:
                    ran.append(cell)
                    display.finish(cell, cell_path(folder, cell), outcome["seconds"])
    finally:
        client.close()
    return GridRun(ran, skipped, time.perf_counter() - started, failed)


def race_worker_task(text: str, base: str | None, out: str, settings: dict[str, Any], threads: int | None) -> str:
    """What a worker does in a race: takes unclaimed batches of any experiment and decides finished
    rounds until every race is over (:func:`bbrl.grid.race.run_raced_grid`, the loop a local
    runner runs). Returns where it ran."""
    import io

    from rich.console import Console

    from ...analysis.racing import RaceOptions
    from ..race import run_raced_grid

    config = _parsed(text, base)
    quiet = Console(file=io.StringIO())
    run_raced_grid(
        config, out, RaceOptions(**settings), threads or _worker_threads(), console=quiet, retry_failed=False
    )
    return f"{socket.gethostname()} (process {os.getpid()})"


def race_on_dask(
    config: GridConfig,
    out: str | os.PathLike[str],
    scheduler: str,
    options: Any,
    threads: int | None = None,
    console: Any = None,
) -> GridRun:
    """Races ``config`` into ``out`` on the Dask cluster at ``scheduler``: one race loop per worker
    thread, sharing the batches through claims (the decisions, and so the results, are those of a
    local race). The output folder must be on a file system every worker sees, at the same path."""
    from rich.console import Console

    from ..race import race_outcome, record_race, retry_failures

    console = console or Console()
    folder = Path(out).resolve()
    selected, _, skipped = prepare_folder(config, folder, None, console)
    record_race(folder, options)
    retry_failures(folder, selected)
    started = time.perf_counter()
    base = config.base if config.base is not None else (config.path.resolve().parent if config.path else None)
    client = connect(scheduler)
    try:
        slots = sum(int(w.get("nthreads", 1)) for w in client.scheduler_info().get("workers", {}).values()) or 1
        console.print(f"racing {len(selected)} cells on {slots} Dask worker threads at {scheduler}", highlight=False)
        run_id = f"{time.time_ns():x}"
        futures = [
            client.submit(
                race_worker_task,
                config.text,
                str(base) if base else None,
                str(folder),
                options.settings(),
                threads,
                key=f"bbrl-{run_id}-race-{k}",
                pure=False,
            )
            for k in range(slots)
        ]
        client.gather(futures)
    finally:
        client.close()
    return race_outcome(folder, selected, skipped, time.perf_counter() - started, console)
