"""``bbrl grid``: run a benchmark grid from a TOML configuration (resumable), tell what is done; its
cluster subcommands (plan, submit, task) are :mod:`bbrl.cli.cluster`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import cluster
from .options import add_out, add_race, add_threads, check_output_dir, output_dir, race_options

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["CELLS_KEPT", "register"]

#: What a stopped grid keeps (``bbrl.cli.app`` prints it on Ctrl-C or SIGTERM).
CELLS_KEPT = "finished cells are kept in {out} (each whole); the same command runs the rest"


def register(commands: Any) -> None:
    """Adds ``grid`` and its subcommands to the CLI's subcommands."""
    grid = commands.add_parser(
        "grid",
        help="run a benchmark grid from a TOML configuration (resumable), or tell what is done",
        description="Grids of experiments x agents x parameters (TOML; see examples/*.toml). Every finished cell "
        "is one Parquet file under OUT/cells; rerunning skips finished cells, so an interrupted run resumes.",
    )
    grid_commands = grid.add_subparsers(dest="grid_command", required=True, metavar="GRID_COMMAND")
    grid_run = grid_commands.add_parser("run", help="run every unfinished cell of a configuration")
    grid_run.add_argument(
        "config",
        type=Path,
        help="the grid configuration (TOML), or a shipped one: quick, paper-accurate, paper-inaccurate",
    )
    add_out(grid_run, "output folder (results and trained agents)", required=True)
    grid_run.add_argument("--shard", default=None, metavar="K/N", help="run only shard K of N (cells K-1, K-1+N, ...)")
    add_threads(grid_run)
    grid_run.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the cells on a Dask cluster: its scheduler's address (tcp://HOST:PORT) or scheduler file",
    )
    add_race(grid_run)
    grid_run.set_defaults(handler=_command_grid_run, kept=CELLS_KEPT)
    grid_status = grid_commands.add_parser("status", help="which cells of a grid are done")
    grid_status.add_argument("target", type=Path, help="an output folder, or a configuration with --out")
    add_out(grid_status, "the output folder when TARGET is a configuration")
    grid_status.set_defaults(handler=_command_grid_status)
    cluster.register(grid_commands)


def _print_failures(failed: Sequence[tuple[Any, str]], console: Console) -> None:
    console.print(f"{len(failed)} cells failed (recorded beside their results; rerun to retry):", highlight=False)
    for cell, error in failed:
        console.print(f"  failed: {cell.id}: {error}", highlight=False, markup=False)


def _command_grid_run(args: argparse.Namespace, console: Console) -> int:
    from .. import grid

    config = grid.load_config(grid.config_path(args.config))
    shard = grid.parse_shard(args.shard) if args.shard else None
    output_dir(args.out)
    race = race_options(args)
    if race is not None and shard is not None:
        raise ValueError(
            "--race shares its batches between runners through claims, not shards: start the same "
            "`bbrl grid run --race` on each machine (or use --scheduler)"
        )
    if race is not None and args.scheduler is not None:
        from ..grid.engines.dask_engine import race_on_dask

        outcome = race_on_dask(config, args.out, args.scheduler, race, threads=args.threads, console=console)
    elif race is not None:
        from ..grid.race import run_raced_grid

        outcome = run_raced_grid(config, args.out, race, threads=args.threads, console=console)
    elif args.scheduler is not None:
        from ..grid.engines.dask_engine import run_on_dask

        outcome = run_on_dask(config, args.out, args.scheduler, shard=shard, threads=args.threads, console=console)
    else:
        outcome = grid.run_grid(config, args.out, shard=shard, threads=args.threads, console=console)
    console.print(
        f"{len(outcome.ran)} cells run in {outcome.seconds:.1f} s, {len(outcome.skipped)} already done, "
        f"{len(outcome.failed)} failed; results in {args.out}/cells",
        highlight=False,
    )
    if outcome.failed:
        _print_failures(outcome.failed, console)
        return 1
    return 0


def _command_grid_status(args: argparse.Namespace, console: Console) -> int:
    from .. import grid

    target: Path = args.target
    if target.is_dir():
        if args.out is not None:
            raise ValueError("give either an output folder, or a configuration with --out")
        out = target
        config = grid.load_output_config(target, check_agents=False)
    else:
        config_file = grid.config_path(target)
        if not config_file.is_file():
            raise FileNotFoundError(
                f"{target}: no such folder, and neither a configuration file nor a shipped configuration "
                f"({', '.join(grid.SHIPPED_CONFIGS)}); give the output folder of `bbrl grid run`, or a configuration "
                "with --out DIR"
            )
        if args.out is None:
            raise ValueError("with a configuration, give the output folder: bbrl grid status CONFIG --out DIR")
        out = check_output_dir(args.out)  # read, not written
        if not out.is_dir():
            raise FileNotFoundError(
                f"--out {out}: no such folder (the output folder of `bbrl grid run CONFIG --out DIR`)"
            )
        config = grid.load_config(config_file, check_agents=False)
    state = grid.status(config, out)
    by_experiment: dict[str, list[int]] = {}
    for cell in state.done:
        by_experiment.setdefault(cell.experiment.key, [0, 0])[0] += 1
    for cell in config.cells:
        by_experiment.setdefault(cell.experiment.key, [0, 0])[1] += 1
    for key, (done, total) in by_experiment.items():
        console.print(f"{key}: {done}/{total} cells done", highlight=False)
    _print_race(Path(out), config, console)
    running_ids = {cell.id for cell, _ in state.running}
    failed_ids = {cell.id for cell, _ in state.failed}
    done_ids = {cell.id for cell in state.done}
    per_agent: dict[str, list[int]] = {}
    for cell in config.cells:
        counts = per_agent.setdefault(cell.block, [0, 0, 0, 0])
        column = 0 if cell.id in done_ids else 1 if cell.id in running_ids else 2 if cell.id in failed_ids else 3
        counts[column] += 1
    console.print("per agent: done / running / failed / to do", highlight=False)
    for block, (done, running, failed, todo) in per_agent.items():
        console.print(f"  {block}: {done} / {running} / {failed} / {todo}", highlight=False, markup=False)
    console.print(f"total: {len(state.done)}/{state.total} cells done in {out}", highlight=False)
    for cell, holder in state.running:
        console.print(f"  running: {cell.id} ({holder})", highlight=False, markup=False)
    waiting = [cell for cell in state.missing if cell.id not in running_ids]
    for cell in waiting[:20]:
        console.print(f"  missing: {cell.id}", highlight=False)
    if len(waiting) > 20:
        console.print(f"  ... and {len(waiting) - 20} more")
    for cell, error in state.failed:
        console.print(f"  failed: {cell.id}: {error}", highlight=False, markup=False)
    for cell, problem in state.broken:
        console.print(f"  broken (run again by the next run): {cell.id}: {problem}", highlight=False, markup=False)
    if state.stale_temp_files:
        console.print(f"{len(state.stale_temp_files)} stale temporary files (removed by the next run)")
    if state.expired_claims:
        console.print(f"{len(state.expired_claims)} claims of runners that died (their cells run again when reached)")
    return 0


def _print_race(out: Path, config: Any, console: Console) -> None:
    """For a raced folder: its settings and, per experiment, the rounds decided and the stops."""
    from ..grid.race import race_state, recorded_race

    race = recorded_race(out)
    if race is None:
        return
    settings = ", ".join(f"{k} {v}" for k, v in race.settings().items())
    console.print(f"raced ({settings}):", highlight=False)
    for experiment in config.experiments:
        state = race_state(out, experiment)
        console.print(
            f"  {experiment.key}: {state.decided} of {experiment.n_mdps} MDPs decided, "
            f"{len(state.stops)} configurations stopped",
            highlight=False,
        )
