"""``bbrl paper``: the paper's experiments (SPEC 6) in one command, with their reports."""

from __future__ import annotations

import argparse
import dataclasses
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import add_out, add_race, add_seed, add_threads, finite, output_dir, race_options

if TYPE_CHECKING:
    from rich.console import Console

    from .. import grid

__all__ = ["register", "run_paper"]


def register(commands: Any) -> None:
    """Adds ``paper`` to the CLI's subcommands."""
    paper = commands.add_parser(
        "paper",
        help="the paper's experiments in one command (--quick: a small version in about a minute)",
        description="Runs the paper's grids and writes their reports. --quick runs the shipped quick.toml "
        "(every algorithm at a few settings on GC, GDL and Grid, accurate and inaccurate priors, N = 100, T = 250). "
        "Without --quick: paper-accurate.toml and paper-inaccurate.toml (198 settings x 3 problems each, N = 500): "
        "hundreds of core-hours. It first states its plan (the work of a pilot of a few minutes priced with the "
        "shipped calibration, so the same on any machine under any load, kept in each study's plan.json; the ratio "
        "of the CPU time this machine took to the calibrated one is printed) "
        "and starts only below --max-core-hours or with --yes; share it out with --shard, --scheduler or "
        "`bbrl grid submit`. Interrupted runs resume. With --race, each experiment runs as a race (configurations "
        "that cheaper ones beat stop early) and the plan states the core-hours with and without racing: the race "
        "pilot runs every cell on the MDPs before the race's first decision (the race's own first batches) and the "
        "limit applies to the raced prediction.",
    )
    paper.add_argument("--quick", action="store_true", help="the small version (examples/quick.toml)")
    add_out(paper, "output folder (default bbrl-paper-quick or bbrl-paper)")
    paper.add_argument("--shard", default=None, metavar="K/N", help="run only shard K of N of each grid")
    add_seed(paper, "seed of every experiment (default 0, the paper's grids' own)")
    add_threads(paper)
    paper.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the cells on a Dask cluster: its scheduler's address (tcp://HOST:PORT) or scheduler file",
    )
    paper.add_argument(
        "--max-core-hours",
        type=finite,
        default=DEFAULT_MAX_CORE_HOURS,
        help="without --yes, stop after the plan when the unfinished cells need more core-hours "
        f"(default {DEFAULT_MAX_CORE_HOURS:g})",
    )
    paper.add_argument("--yes", action="store_true", help="run even when the plan exceeds --max-core-hours")
    add_race(paper)
    paper.set_defaults(handler=command, kept="finished cells are kept (each whole); the same command runs the rest")


def command(args: argparse.Namespace, console: Console) -> int:
    """The ``paper`` subcommand."""
    if not (args.max_core_hours > 0):
        raise ValueError(f"--max-core-hours must be positive, got {args.max_core_hours}")
    reports = run_paper(
        quick=args.quick,
        out=args.out,
        shard=args.shard,
        threads=args.threads,
        console=console,
        seed=args.seed,
        scheduler=args.scheduler,
        max_core_hours=None if args.yes else args.max_core_hours,
        race=race_options(args),
    )
    return 0 if reports is not None else 2


#: Core-hours above which ``bbrl paper`` stops after its plan unless told ``--yes``: the quick study
#: needs about a core-minute, the full one hundreds of core-hours.
DEFAULT_MAX_CORE_HOURS = 2.0

#: The line of the shipped configurations' ``[defaults]`` that sets every experiment's seed.
_SEED_LINE = re.compile(r"^seed = \d+$", re.MULTILINE)


def _config(name: str, seed: int = 0) -> grid.GridConfig:
    """A shipped configuration; with another ``seed`` than its own, every experiment's seed replaced
    (in the text too, so that the output folder's copy says which seed its cells used)."""
    from .. import grid

    path = grid.shipped_config(name)
    if path is None:
        raise FileNotFoundError(f"the shipped configuration {name}.toml is missing from the installed package")
    config = grid.load_config(path)
    if all(e.seed == seed for e in config.experiments):
        return config
    text = path.read_text(encoding="utf-8")
    if len(_SEED_LINE.findall(text)) != 1:
        raise ValueError(f"{path}: cannot set the seed (expected one 'seed = N' line in [defaults])")
    text = _SEED_LINE.sub(f"seed = {int(seed)}", text)
    return dataclasses.replace(grid.parse_config(text, str(path), path.resolve().parent), path=path)


@dataclass
class _StudyPlan:
    """One study's cost plan: predicted core-seconds and offline part per cell, the unfinished cells."""

    config: grid.GridConfig
    folder: Path
    seconds: dict[str, float]
    offline: dict[str, float] | None
    todo: list[grid.Cell]

    @property
    def todo_seconds(self) -> float:
        return float(sum(self.seconds[c.id] for c in self.todo))


def plan_studies(
    configs: list[tuple[grid.GridConfig, Path]],
    shard: tuple[int, int] | None,
    console: Any,
) -> float:
    """The predicted core-seconds of the unfinished cells of each study (of this shard), printed
    with the wall time on this machine's cores. Each study's plan is the one kept in its folder
    (``plan.json``, from an earlier run or ``bbrl grid plan --out``) or a new pilot, kept there (the
    runners then take the longest cells first)."""
    return sum(plan.todo_seconds for plan in _cost_plans(configs, shard, console, with_offline=False))


def _cost_plans(
    configs: list[tuple[grid.GridConfig, Path]],
    shard: tuple[int, int] | None,
    console: Any,
    with_offline: bool,
) -> list[_StudyPlan]:
    """:func:`plan_studies`'s plans; ``with_offline``: a kept plan without each cell's offline part
    (kept before it was recorded) is measured again, since a race's prediction needs it."""
    from .. import grid
    from ..analysis.cost import reference_calibration
    from ..grid.plan import (
        lpt_makespan,
        pilot,
        pilot_ratio_line,
        read_plan,
        read_plan_calibration,
        read_plan_offline,
        write_plan,
    )
    from ..grid.shards import select_shard
    from ..protocol.schema import describe_host

    cores = int(describe_host()["logical_cores"]) or 1
    calibration = reference_calibration()
    plans = []
    for config, folder in configs:
        cells = select_shard(config.cells, shard)
        kept = read_plan(folder)
        offline = read_plan_offline(folder)
        if (
            kept is None
            or read_plan_calibration(folder) != calibration.name
            or not all(c.id in kept for c in cells)
            or (with_offline and (offline is None or not all(c.id in offline for c in cells)))
        ):
            # A kept plan priced otherwise (measured CPU times, an older bbrl) is measured again:
            # the plan must not depend on the load of the machine that made it.
            console.print(f"{config.path.stem if config.path else 'grid'}: measuring its work on a pilot first")
            folder.mkdir(parents=True, exist_ok=True)
            plan = pilot(config, console=console, calibration=calibration)
            write_plan(folder, plan)
            kept, offline = plan.seconds, plan.offline_seconds
            console.print(pilot_ratio_line(plan, calibration), highlight=False)
        done = {cell.id for cell in grid.status(config, folder).done}
        study = _StudyPlan(config, folder, kept, offline, [c for c in cells if c.id not in done])
        todo = [kept[c.id] for c in study.todo]
        wall = lpt_makespan(todo, cores) if todo else 0.0
        console.print(
            f"  {len(todo)} of {len(cells)} cells to run into {folder}: {study.todo_seconds / 3600:.3g} core-hours, "
            f"about {_span(wall)} of wall time on this machine's {cores} cores (longest first)",
            highlight=False,
        )
        plans.append(study)
    return plans


def _plan_races(plans: list[_StudyPlan], race: Any, threads: int | None, console: Any) -> float:
    """Each study's predicted core-seconds under racing (its unfinished cells), from a race pilot
    into its folder (:func:`bbrl.grid.race_plan.plan_race`: the race's first batches, which the
    race then reuses), printed; the prediction is kept in the folder's ``race-plan.json``."""
    from ..grid.race_plan import plan_race, write_race_plan

    total = 0.0
    for study in plans:
        assert study.offline is not None
        name = study.config.path.stem if study.config.path else "grid"
        predicted = plan_race(
            study.config, study.seconds, study.offline, study.folder, race, threads=threads, console=console
        )
        write_race_plan(study.folder, predicted)
        raced = float(sum(predicted.raced[c.id] for c in study.todo))
        forecasts = [f for by_cell in predicted.forecasts.values() for f in by_cell.values()]
        stopping = sum(1 for f in forecasts if f.stops)
        share = f" ({raced / study.todo_seconds:.0%} of {study.todo_seconds / 3600:.3g})" if study.todo_seconds else ""
        console.print(
            f"  {name} raced: {raced / 3600:.3g} core-hours{share}; {stopping} of {len(forecasts)} configurations "
            f"predicted to stop early (race pilot {predicted.pilot_seconds:.3g} s; details in "
            f"{study.folder / 'race-plan.json'})",
            highlight=False,
        )
        total += raced
    return total


def _span(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.2g} minutes"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} hours"
    return f"{seconds / 86400:.3g} days"


def run_paper(
    quick: bool,
    out: Path | None = None,
    shard: str | None = None,
    threads: int | None = None,
    console: Any = None,
    seed: int = 0,
    scheduler: str | None = None,
    max_core_hours: float | None = DEFAULT_MAX_CORE_HOURS,
    race: Any = None,
) -> list[Path] | None:
    """Runs the paper's grids and writes their reports; returns the HTML reports.

    ``quick``: ``quick.toml`` into ``out`` (default ``bbrl-paper-quick``), report in ``out/report``.
    Otherwise ``paper-accurate.toml`` and ``paper-inaccurate.toml`` into ``out/accurate`` and
    ``out/inaccurate`` (default ``out`` = ``bbrl-paper``), each with its ``report``. Both resume.
    ``seed``: the seed of every experiment (the shipped grids' is 0). ``scheduler``: run the cells
    on this Dask cluster (as ``bbrl grid run --scheduler``).

    The full study first states its plan (:func:`plan_studies`: core-hours and wall time, from a
    pilot of a few minutes); above ``max_core_hours`` it stops there and returns ``None``
    (``None``: no limit). The quick study needs about a core-minute and has no pilot.

    ``race``: the :class:`~bbrl.analysis.racing.RaceOptions` to race every experiment with (as
    ``bbrl grid run --race``); the full study's plan then states the core-hours with and without
    racing, from a race pilot (:func:`bbrl.grid.race_plan.plan_race`), and ``max_core_hours``
    applies to the raced prediction, and first to the race pilot itself (the race's first batches).
    """
    from rich.console import Console

    from .. import grid
    from ..analysis.report import write_report

    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {seed!r}")
    console = console or Console()
    parsed_shard = grid.parse_shard(shard) if shard else None
    if race is not None and parsed_shard is not None:
        raise ValueError(
            "--race shares its batches between runners through claims, not shards: start the same "
            "`bbrl paper --race` on each machine (or use --scheduler)"
        )
    base = out or Path("bbrl-paper-quick" if quick else "bbrl-paper")
    output_dir(base, "--out" if out is not None else "output folder")
    if quick:
        studies = [("quick", base)]
    else:
        studies = [("paper-accurate", base / "accurate"), ("paper-inaccurate", base / "inaccurate")]
    configs = [(_config(name, seed), folder) for name, folder in studies]  # validate both before running either
    if not quick:
        plans = _cost_plans(configs, parsed_shard, console, with_offline=race is not None)
        core_seconds = sum(plan.todo_seconds for plan in plans)
        without = " without racing" if race is not None else ""
        console.print(f"the study's plan: {core_seconds / 3600:.3g} core-hours in all{without}", highlight=False)
        if race is not None:
            from ..grid.race_plan import pilot_cost

            pilot = sum(pilot_cost(p.config, p.seconds, p.offline or {}, race, cells=p.todo) for p in plans)
            if max_core_hours is not None and pilot > max_core_hours * 3600:
                console.print(
                    f"the race pilot alone (every unfinished cell on the MDPs before the race's first decision, "
                    f"the race's first batches) needs {pilot / 3600:.3g} core-hours, more than --max-core-hours "
                    f"{max_core_hours:g}: nothing started. Pass --yes to race it here, or --scheduler ADDRESS (Dask)",
                    highlight=False,
                )
                return None
            console.print(f"race pilot: {pilot / 3600:.3g} core-hours, part of the race (its first batches)")
            raced = _plan_races(plans, race, threads, console)
            share = f" ({raced / core_seconds:.0%})" if core_seconds else ""
            console.print(
                f"the study's plan with racing: {raced / 3600:.3g} core-hours in all{share}, without racing "
                f"{core_seconds / 3600:.3g}",
                highlight=False,
            )
            core_seconds = raced
        if max_core_hours is not None and core_seconds > max_core_hours * 3600:
            share_out = (
                "--scheduler ADDRESS (Dask), or the same `bbrl paper --race` on several machines sharing the folder"
                if race is not None
                else "--shard K/N on several machines, --scheduler ADDRESS (Dask), or "
                "`bbrl grid submit paper-accurate --out DIR/accurate` and the same for paper-inaccurate (SLURM)"
            )
            console.print(
                f"more than --max-core-hours {max_core_hours:g}{' raced' if race is not None else ''}: nothing "
                f"started. Pass --yes to run it here, or share it out: {share_out}",
                highlight=False,
            )
            return None
    reports = []
    for (config, folder), (name, _) in zip(configs, studies, strict=True):
        started = time.perf_counter()
        console.print(f"[bold]{name}[/bold]: {len(config.cells)} cells into {folder}")
        if race is not None and scheduler is not None:
            from ..grid.engines.dask_engine import race_on_dask

            race_on_dask(config, folder, scheduler, race, threads=threads, console=console)
        elif race is not None:
            from ..grid.race import run_raced_grid

            run_raced_grid(config, folder, race, threads=threads, console=console)
        elif scheduler is not None:
            from ..grid.engines.dask_engine import run_on_dask

            run_on_dask(config, folder, scheduler, shard=parsed_shard, threads=threads, console=console)
        else:
            grid.run_grid(config, folder, shard=parsed_shard, threads=threads, console=console)
        state = grid.status(config, folder)
        if state.missing:
            console.print(f"{len(state.missing)} cells of {name} remain (other shards); report of the finished ones")
        html = write_report(folder, folder / "report", missing=grid.missing_by_experiment(folder))
        console.print(f"{name}: done in {time.perf_counter() - started:.1f} s; report: {html}")
        reports.append(html)
    return reports
