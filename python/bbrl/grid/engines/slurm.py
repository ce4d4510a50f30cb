"""Running a grid as a SLURM job array: ``bbrl grid submit CONFIG --out DIR``.

We generate a plain ``sbatch`` script rather than use submitit: the script is a file a user can
read, edit and resubmit by hand, each task is one ordinary ``bbrl grid task DIR I`` command (no
pickled Python functions, so the login node and the compute nodes need not share an interpreter
state), and it adds no dependency.

The cells are packed into array tasks by predicted cost (the plan of :mod:`bbrl.grid.plan`,
longest first onto the least loaded task), so that each task fits the time limit with a margin.
``DIR/slurm/tasks.json`` lists each task's cells; ``DIR/slurm/jobs.json`` each submission.
A task runs its cells through :func:`~bbrl.grid.runner.run_claimed`; a preempted task is requeued
by SLURM (``--requeue``); a task that timed out, failed or was cancelled leaves cells missing, and
:func:`resubmit` (``bbrl grid submit`` again, or ``--watch``) submits the tasks that still have
missing cells and are neither pending nor running, at most ``max_resubmits`` times each.

A raced grid (``bbrl grid submit --race``, see :mod:`bbrl.grid.race`) is packed the same way, but
each task runs the race's loop on the whole folder (:func:`~bbrl.grid.race.run_raced_grid`: it takes
any unclaimed batch and decides finished rounds) until every race is over, so the tasks share the
batches whatever their packing; a task that timed out loses at most its batch.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...fileio import check_kind, json_field, read_json_document, write_atomic
from ..model import Cell, GridConfig, check_runnable
from ..plan import longest_first, lpt_makespan, read_plan, static_cost
from ..race import record_race, recorded_race, retry_failures, run_raced_grid
from ..runner import cores_given, prepare_folder, run_claimed
from ..store import config_for_folder, folder_lock, load_output_config, remove_stale_temp_files, status

__all__ = [
    "SlurmOptions",
    "job_script",
    "pack",
    "parse_time",
    "queued_tasks",
    "resubmit",
    "run_task",
    "submit",
    "watch",
]

#: A task is packed to this fraction of its time limit (predictions are not exact).
SAFETY = 0.6


@dataclass(frozen=True)
class SlurmOptions:
    """The job's resources: ``time`` is SLURM's ``[D-]HH:MM:SS`` (or minutes), ``mem`` e.g. ``4G``."""

    partition: str | None = None
    time: str = "04:00:00"
    mem: str | None = None
    cpus_per_task: int = 1
    max_parallel: int | None = None
    max_resubmits: int = 3
    extra: tuple[str, ...] = ()


def parse_time(text: str) -> float:
    """SLURM's time formats (``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``) in seconds.

    Raises:
        ValueError: naming the text when it is not one of them.
    """
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not match:
        raise ValueError(f"--time expects minutes, H:M:S or D-H:M:S, got {text!r}")
    days, a, b, c = match.groups()
    numbers = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:
        h, m, s = ([*numbers, 0, 0])[:3]
        seconds = int(days) * 86400 + h * 3600 + m * 60 + s
    elif len(numbers) == 1:
        seconds = numbers[0] * 60
    elif len(numbers) == 2:
        seconds = numbers[0] * 60 + numbers[1]
    else:
        seconds = numbers[0] * 3600 + numbers[1] * 60 + numbers[2]
    if seconds <= 0:
        raise ValueError(f"--time must be positive, got {text!r}")
    return float(seconds)


def _predicted(cells: list[Cell], out: Path) -> tuple[dict[str, float], bool]:
    """Predicted core-seconds per cell id from ``out``'s plan, else relative static costs (False)."""
    seconds = read_plan(out)
    if seconds is not None and all(c.id in seconds for c in cells):
        return {c.id: seconds[c.id] for c in cells}, True
    return {c.id: static_cost(c) for c in cells}, False


def pack(cells: list[Cell], seconds: dict[str, float], capacity: float, max_tasks: int = 10_000) -> list[list[Cell]]:
    """Cells in tasks of at most ``capacity`` predicted seconds where possible: longest first onto
    the least loaded task, with as few tasks as the longest-first makespan allows (a cell longer
    than ``capacity`` gets a task of its own)."""
    if not cells:
        return []
    costs = [seconds[c.id] for c in cells]
    n = max(1, math.ceil(sum(costs) / capacity))
    limit = min(len(cells), max_tasks)
    while n < limit and lpt_makespan(costs, n) > max(capacity, max(costs)):
        n += 1
    n = min(n, limit)
    tasks: list[list[Cell]] = [[] for _ in range(n)]
    loads = [0.0] * n
    for cell in sorted(cells, key=lambda c: (-seconds[c.id], c.index)):
        i = loads.index(min(loads))
        tasks[i].append(cell)
        loads[i] += seconds[cell.id]
    return [t for t in tasks if t]


def job_script(
    out: Path, n_tasks: int, options: SlurmOptions, python: str | None = None, config: Path | None = None
) -> str:
    """The sbatch script of the job array: task I runs ``bbrl grid task OUT I`` (with ``--config
    CONFIG`` when given: a configuration naming Python agents, whose classes a task imports only
    from the configuration itself, never from the folder's copy)."""
    python = python or sys.executable
    given = f" --config {shlex.quote(str(config))}" if config is not None else ""
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=bbrl-{out.name}"[:80],
        f"#SBATCH --array=0-{n_tasks - 1}" + (f"%{options.max_parallel}" if options.max_parallel else ""),
        f"#SBATCH --cpus-per-task={options.cpus_per_task}",
        f"#SBATCH --time={options.time}",
        f"#SBATCH --output={out / 'slurm' / 'logs' / '%A_%a.out'}",
        "#SBATCH --requeue",
    ]
    if options.partition:
        lines.append(f"#SBATCH --partition={options.partition}")
    if options.mem:
        lines.append(f"#SBATCH --mem={options.mem}")
    lines += [f"#SBATCH {extra}" for extra in options.extra]
    lines += [
        "# Each array task runs its cells (slurm/tasks.json); finished cells are skipped, so a",
        "# resubmitted task only redoes what is missing.",
        f'exec {shlex.quote(python)} -m bbrl grid task {shlex.quote(str(out))} "$SLURM_ARRAY_TASK_ID"{given}',
        "",
    ]
    return "\n".join(lines)


def _task_config(config: GridConfig) -> Path | None:
    """The configuration file a task must be given: one naming Python agents (see :func:`job_script`)."""
    if config.python_agents and config.path is not None:
        return config.path.resolve()
    return None


def _tasks_file(out: Path) -> Path:
    return out / "slurm" / "tasks.json"


def _jobs_file(out: Path) -> Path:
    return out / "slurm" / "jobs.json"


def read_tasks(out: Path) -> list[list[str]]:
    """The cell ids of each array task (``slurm/tasks.json``; empty before a submission).

    Raises:
        ValueError: naming the file and the task, for a file damaged or of another schema.
    """
    path = _tasks_file(out)
    if not path.is_file():
        return []
    where = f"SLURM task file {str(path)!r}"
    tasks = read_json_document(path, "SLURM task file", "a list")
    for i, ids in enumerate(tasks):
        for cell_id in check_kind(ids, "a list", f"{where}: task {i}"):
            check_kind(cell_id, "a string", f"{where}: task {i}")
    return tasks


def read_jobs(out: Path) -> list[dict[str, Any]]:
    """The jobs submitted for ``out`` (``slurm/jobs.json``: job id and its array task indices).

    Raises:
        ValueError: naming the file and the entry, for a file damaged or of another schema.
    """
    path = _jobs_file(out)
    if not path.is_file():
        return []
    where = f"SLURM job file {str(path)!r}"
    jobs = read_json_document(path, "SLURM job file", "a list")
    for i, job in enumerate(jobs):
        entry = f"{where}: job {i}"
        check_kind(job, "an object", entry)
        json_field(job, "job", "a string", entry)
        for task in json_field(job, "tasks", "a list", entry):
            check_kind(task, "an integer", f"{entry}: field 'tasks'")
    return jobs


def max_resubmits(out: Path) -> int:
    """How many times a task may be resubmitted (``slurm/options.json``; 3 when it does not say).

    Raises:
        ValueError: naming the file, for a file damaged or of another schema.
    """
    path = out / "slurm" / "options.json"
    if not path.is_file():
        return 3
    options = read_json_document(path, "SLURM options file")
    return int(json_field(options, "max_resubmits", "an integer", f"SLURM options file {str(path)!r}", 3))


def _sbatch(script: Path, array: str | None, sbatch: str) -> str:
    command = [sbatch, "--parsable"] + ([f"--array={array}"] if array else []) + [str(script)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise ValueError(f"{sbatch!r} not found: is this a SLURM login node?") from None
    if done.returncode != 0:
        raise ValueError(f"sbatch refused the job ({' '.join(command)}): {done.stderr.strip() or done.stdout.strip()}")
    job = done.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise ValueError(f"sbatch answered {done.stdout.strip()!r}, expected a job id")
    return job


def _record_job(out: Path, job: str, tasks: list[int]) -> None:
    with folder_lock(out):
        jobs = read_jobs(out)
        jobs.append({"job": job, "tasks": tasks, "submitted": time.time()})
        write_atomic(_jobs_file(out), (json.dumps(jobs, indent=1) + "\n").encode())


def submit(
    config: GridConfig,
    out: Path,
    options: SlurmOptions,
    console: Any,
    sbatch: str = "sbatch",
    python: str | None = None,
    dry_run: bool = False,
    race: Any = None,
) -> str | None:
    """Packs the unfinished cells into array tasks, writes the script and submits it. Returns the
    job id (``None`` when every cell is done, or with ``dry_run``: then the script and the array
    size are printed, and nothing is written or submitted). ``race``: the
    :class:`~bbrl.analysis.racing.RaceOptions` of a raced grid (recorded in the folder; each task
    then runs the race's loop)."""
    folder = out.resolve()
    if dry_run:
        check_runnable(config.cells)
        state = status(config, folder)
        skipped = state.done
        todo = longest_first([*state.missing, *(c for c, _ in state.failed), *(c for c, _ in state.broken)], folder)
    else:
        _, todo, skipped = prepare_folder(config, folder, None, console)
        if race is not None:
            record_race(folder, race)
            retry_failures(folder, list(config.cells))
    if not todo:
        console.print(f"all {len(skipped)} cells are done in {out}")
        return None
    seconds, measured = _predicted(todo, folder)
    limit = parse_time(options.time)
    if measured:
        capacity = SAFETY * limit * options.cpus_per_task
        tasks = pack(todo, seconds, capacity)
        longest = max(seconds.values())
        if longest > capacity:
            console.print(
                f"warning: the longest cell is predicted at {longest / 3600:.2f} core-hours, more than "
                f"{SAFETY:.0%} of --time {options.time} x {options.cpus_per_task} cores: "
                "raise --time or --cpus-per-task",
                highlight=False,
            )
    else:
        # No measured plan: one task per cell, longest first (run `bbrl grid plan CONFIG --out DIR` to pack).
        console.print("no cost plan in the output folder (bbrl grid plan CONFIG --out DIR): one task per cell")
        tasks = [[c] for c in todo]
    slurm = folder / "slurm"
    if dry_run:
        array = f"0-{len(tasks) - 1}" + (f"%{options.max_parallel}" if options.max_parallel else "")
        console.print(
            f"dry run: {len(todo)} cells in {len(tasks)} array tasks (--array={array}); this script would be "
            f"written to {slurm / 'job.sh'} and submitted with sbatch. Nothing was written or submitted.",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        script = job_script(folder, len(tasks), options, python, _task_config(config))
        console.print(script, highlight=False, markup=False, soft_wrap=True, end="")
        return None
    (slurm / "logs").mkdir(parents=True, exist_ok=True)
    write_atomic(_tasks_file(folder), (json.dumps([[c.id for c in t] for t in tasks], indent=1) + "\n").encode())
    script = write_atomic(
        slurm / "job.sh", job_script(folder, len(tasks), options, python, _task_config(config)).encode()
    )
    write_atomic(slurm / "options.json", (json.dumps(options.__dict__, indent=1) + "\n").encode())
    job = _sbatch(script, None, sbatch)
    _record_job(folder, job, list(range(len(tasks))))
    console.print(
        f"submitted job {job}: {len(todo)} cells in {len(tasks)} array tasks ({slurm / 'job.sh'})", highlight=False
    )
    return job


def queued_tasks(out: Path, squeue: str = "squeue") -> set[int]:
    """Array task indices of this folder's jobs that SLURM still has (pending, running, requeued)."""
    jobs = read_jobs(out)
    ids = sorted({j["job"] for j in jobs})
    if not ids:
        return set()
    command = [squeue, "-h", "-r", "-j", ",".join(ids), "-o", "%i %T"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ValueError(f"{squeue!r} not found: is this a SLURM login node?") from None
    if done.returncode != 0 and "Invalid job id" not in done.stderr:
        raise ValueError(f"squeue failed ({' '.join(command)}): {done.stderr.strip()}")
    queued = set()
    for line in done.stdout.splitlines():
        match = re.match(r"\s*(\d+)_(\d+)\s+(\S+)", line)
        if match and match.group(3) not in ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY"):
            queued.add(int(match.group(2)))
    return queued


def resubmit(out: Path, console: Any, sbatch: str = "sbatch", squeue: str = "squeue") -> str | None:
    """Resubmits the array tasks with missing cells that SLURM no longer has (timed out, failed,
    cancelled, their node lost), each at most ``max_resubmits`` times. Returns the new job id, or
    ``None`` when nothing needed resubmitting."""
    folder = out.resolve()
    tasks = read_tasks(folder)
    if not tasks:
        raise ValueError(f"{out} has no slurm/tasks.json: submit the grid first (bbrl grid submit CONFIG --out DIR)")
    limit = max_resubmits(folder)
    config = load_output_config(folder, check_agents=False)
    state = status(config, folder)
    open_ids = {c.id for c in state.missing} | {c.id for c, _ in state.broken}
    queued = queued_tasks(folder, squeue)
    submissions: dict[int, int] = {}
    for entry in read_jobs(folder):
        for task in entry["tasks"]:
            submissions[task] = submissions.get(task, 0) + 1
    again = []
    for index, ids in enumerate(tasks):
        if index in queued or not open_ids.intersection(ids):
            continue
        if submissions.get(index, 0) > limit:
            console.print(f"task {index} was resubmitted {limit} times: not again (see slurm/logs)")
            continue
        again.append(index)
    if not again:
        return None
    job = _sbatch(folder / "slurm" / "job.sh", ",".join(map(str, again)), sbatch)
    _record_job(folder, job, again)
    console.print(f"resubmitted tasks {again} as job {job}", highlight=False)
    return job


def run_task(out: Path, index: int, console: Any, config_path: Path | None = None) -> int:
    """One array task: runs the cells of ``slurm/tasks.json[index]`` on the cores SLURM gave it,
    with the folder's configuration (``config_path``, when it names Python agents: see
    :func:`~bbrl.grid.store.config_for_folder`). Returns the number of failed cells."""
    folder = out.resolve()
    tasks = read_tasks(folder)
    if not 0 <= index < len(tasks):
        raise ValueError(f"{out}: no array task {index} (slurm/tasks.json has {len(tasks)})")
    config = config_for_folder(folder, config_path)
    race = recorded_race(folder)
    if race is not None:  # every task runs the race's loop until every race is over
        outcome = run_raced_grid(config, folder, race, threads=cores_given(), console=console, retry_failed=False)
        return len(outcome.failed)
    by_id = {c.id: c for c in config.cells}
    missing = [i for i in tasks[index] if i not in by_id]
    if missing:
        raise ValueError(f"{out}: cells {missing[:3]} of task {index} are not in config.toml (resubmit the grid)")
    # A task killed mid-write (a lost node, a time limit) leaves a temporary file that no other
    # runner removes until the next `bbrl grid run`: each task clears those of dead writers.
    remove_stale_temp_files(folder)
    threads = cores_given()
    failed = 0
    for cell_id in tasks[index]:
        started = time.perf_counter()
        outcome = run_claimed(folder, by_id[cell_id], threads, wait=True)
        console.print(
            f"{cell_id}: {outcome.status} ({time.perf_counter() - started:.2f} s wall time) {outcome.error}".rstrip()
        )
        failed += outcome.status == "failed"
    return failed


def watch(out: Path, console: Any, poll_seconds: float, sbatch: str = "sbatch", squeue: str = "squeue") -> int:
    """Resubmits until every cell is done or failed and nothing is queued. Returns the failures."""
    folder = out.resolve()
    config = load_output_config(folder, check_agents=False)
    while True:
        state = status(config, folder)
        if not state.missing and not state.broken and not queued_tasks(folder, squeue):
            return len(state.failed)
        if not queued_tasks(folder, squeue) and resubmit(folder, console, sbatch, squeue) is None:
            console.print(f"{len(state.missing)} cells missing and no task left to resubmit", highlight=False)
            return len(state.failed) + len(state.missing)
        time.sleep(poll_seconds)
