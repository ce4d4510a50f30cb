"""The cluster subcommands of ``bbrl grid``: ``plan`` (cost planning), ``submit`` (a SLURM job
array, resubmitted until done) and ``task`` (one array task, what the job script runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import add_out, add_race, check_output_dir, finite, output_dir, race_options, whole

__all__ = ["register"]


def register(grid_commands: Any) -> None:
    """Adds ``plan``, ``submit`` and ``task`` to the ``bbrl grid`` subcommands."""
    plan = grid_commands.add_parser(
        "plan",
        help="measure each kind of cell on a small pilot and predict the grid's core-hours",
        description="Runs each (experiment, agent kind) of the grid at its cheapest and its dearest setting on a "
        "few MDPs and decisions (one thread), prices the work they count with the shipped calibration (so the "
        "plan does not depend on the machine's load; the ratio of the CPU time measured to the calibrated one is "
        "printed), fits the cost per decision and per training, and prints the "
        "predicted core-hours per cell, per agent block and in total, the longest cell, and the number of "
        "workers for a target wall time. With --out, the plan is kept in OUT/plan.json: runners then start "
        "the longest cells first and `bbrl grid submit` packs tasks by it. With --compare DIR, the prediction "
        "is checked against the cells done in DIR. With --race, it also predicts the core-hours under racing: a "
        "race pilot runs every cell on the MDPs before the race's first decision (kept in OUT for the race to "
        "reuse), the race is replayed on resampled streams of them, and the configurations predicted to stop "
        "are listed.",
    )
    plan.add_argument("config", type=Path, help="the grid configuration (TOML), or quick, paper-accurate, ...")
    add_out(plan, "keep the plan in DIR/plan.json")
    plan.add_argument("--target-hours", type=finite, default=24.0, help="target wall time in hours (default 24)")
    plan.add_argument("--pilot-mdps", type=whole(1), default=2, help="test MDPs per pilot run (default 2)")
    plan.add_argument(
        "--pilot-decisions", type=whole(1), default=10, help="decisions per pilot trajectory (default 10)"
    )
    plan.add_argument(
        "--pilot-budget",
        type=finite,
        default=120.0,
        help="calibrated seconds of pilot work (the work counted, priced by the shipped calibration) before it "
        "stops adding points (default 120)",
    )
    plan.add_argument(
        "--every-cell",
        action="store_true",
        help="measure every cell on the pilot (no interpolation between settings; the budget does not apply)",
    )
    plan.add_argument("--cells", type=whole(1), default=10, help="how many of the longest cells to list (default 10)")
    plan.add_argument("--compare", type=Path, default=None, help="an output folder whose done cells to check against")
    add_race(plan)
    plan.add_argument(
        "--race-pilot-mdps",
        type=whole(1),
        default=None,
        help="with --race: test MDPs per cell of the race pilot, rounded up to a batch end (default: up to the "
        "race's first decision)",
    )
    plan.add_argument(
        "--race-resamples",
        type=whole(1),
        default=None,
        help="with --race: resampled streams the race is replayed on (default 21)",
    )
    plan.set_defaults(handler=_command_plan)

    submit = grid_commands.add_parser(
        "submit",
        help="run a grid as a SLURM job array (resubmits tasks that timed out or failed)",
        description="Packs the unfinished cells into array tasks by their predicted cost (OUT/plan.json, from "
        "`bbrl grid plan CONFIG --out OUT`), writes OUT/slurm/job.sh and submits it with sbatch. Run it again "
        "(or with --watch) to resubmit the tasks that still have missing cells and that SLURM no longer has.",
    )
    submit.add_argument("config", type=Path, help="the grid configuration (TOML), or quick, paper-accurate, ...")
    add_out(submit, "output folder, on a file system the nodes share", required=True)
    submit.add_argument("--partition", default=None, help="SLURM partition")
    submit.add_argument("--time", default="04:00:00", help="time limit per task, SLURM format (default 04:00:00)")
    submit.add_argument("--mem", default=None, help="memory per task, e.g. 4G")
    submit.add_argument("--cpus-per-task", type=whole(1), default=1, help="cores per task (default 1)")
    submit.add_argument("--max-parallel", type=whole(1), default=None, help="at most K tasks at once (--array ...%%K)")
    submit.add_argument("--max-resubmits", type=whole(0), default=3, help="resubmissions per task (default 3)")
    submit.add_argument("--watch", action="store_true", help="stay and resubmit until every cell is done")
    submit.add_argument("--poll", type=finite, default=60.0, help="seconds between checks with --watch (default 60)")
    submit.add_argument(
        "--dry-run",
        action="store_true",
        help="print the sbatch script and the array size; write and submit nothing",
    )
    add_race(submit)
    submit.set_defaults(handler=_command_submit)

    task = grid_commands.add_parser("task", help="run one array task of a submitted grid (what job.sh runs)")
    task.add_argument("out", type=Path, help="the output folder of `bbrl grid submit`")
    task.add_argument("index", type=whole(0), help="the array task index ($SLURM_ARRAY_TASK_ID)")
    task.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the grid's configuration, needed when it names Python agents (a folder's copy never imports code)",
    )
    task.set_defaults(handler=_command_task, kept="finished cells are kept in {out} (each whole)")


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.3g} core-h" if seconds >= 36 else f"{seconds:.3g} core-s"


def _command_plan(args: argparse.Namespace, console: Any) -> int:
    from ..analysis.cost import reference_calibration
    from ..grid import config_path, load_config
    from ..grid.plan import (
        check_pilot_size,
        compare,
        lpt_makespan,
        pilot,
        pilot_ratio_line,
        read_plan,
        suggest_workers,
        write_plan,
    )

    if args.target_hours <= 0:
        raise ValueError(f"--target-hours must be positive, got {args.target_hours}")
    check_pilot_size(args.pilot_mdps, args.pilot_decisions, args.pilot_budget)
    race = race_options(args)
    if race is None and (args.race_pilot_mdps is not None or args.race_resamples is not None):
        raise ValueError("--race-pilot-mdps and --race-resamples apply to --race: add --race")
    if race is not None:
        from ..grid.race_plan import DEFAULT_RESAMPLES, check_race_pilot

        check_race_pilot(
            2 if args.race_pilot_mdps is None else args.race_pilot_mdps,
            DEFAULT_RESAMPLES if args.race_resamples is None else args.race_resamples,
        )
    config = load_config(config_path(args.config))
    if args.out is not None:
        output_dir(args.out)  # before the pilot: it keeps its plan there
    if args.compare is not None:
        kept = read_plan(args.compare)
        if kept is not None and all(c.id in kept for c in config.cells):
            # The prediction made before the run, not a new pilot: what the check is about.
            _print_comparison(compare(kept, config, args.compare), args.compare, "the plan kept there", console)
            return 0
    size = f"{args.pilot_mdps} MDPs x {args.pilot_decisions} decisions"
    bound = "every cell measured" if args.every_cell else f"budget {args.pilot_budget:.0f} s"
    console.print(f"pilot: {len(config.cells)} cells, {size} per point, {bound}")
    plan = pilot(config, args.pilot_mdps, args.pilot_decisions, args.pilot_budget, console, args.every_cell)
    console.print(f"pilot cost: {plan.pilot_seconds:.3g} s wall for {plan.pilot_points} runs", highlight=False)
    console.print(pilot_ratio_line(plan, reference_calibration()), highlight=False)
    seconds = plan.seconds
    cells = sorted(config.cells, key=lambda c: -seconds[c.id])
    console.print(f"longest {min(args.cells, len(cells))} cells (predicted core time):")
    for cell in cells[: args.cells]:
        console.print(f"  {_hours(seconds[cell.id]):>14}  {cell.id}", highlight=False)
    blocks: dict[str, float] = {}
    for cell in config.cells:
        blocks[cell.block] = blocks.get(cell.block, 0.0) + seconds[cell.id]
    console.print("per agent block:")
    for block, total in sorted(blocks.items(), key=lambda item: -item[1]):
        console.print(f"  {_hours(total):>14}  {block}", highlight=False)
    total = sum(seconds.values())
    longest = cells[0]
    target = args.target_hours * 3600
    workers = suggest_workers(list(seconds.values()), target)
    console.print(f"total: {total / 3600:.4g} core-hours over {len(cells)} cells", highlight=False)
    console.print(f"longest cell: {longest.id} ({_hours(seconds[longest.id])})", highlight=False)
    wall = lpt_makespan(list(seconds.values()), workers)
    console.print(
        f"for {args.target_hours:g} h of wall time: {workers} single-core workers "
        f"(predicted wall time {wall / 3600:.3g} h, longest first)",
        highlight=False,
    )
    if seconds[longest.id] > target:
        console.print("  the longest cell alone exceeds the target: give it more cores (--threads / --cpus-per-task)")
    if args.out is not None:
        path = write_plan(args.out, plan)
        console.print(f"plan kept in {path}")
    if race is not None:
        _plan_race(args, config, plan, race, console)
    if args.compare is not None:
        _print_comparison(compare(plan.seconds, config, args.compare), args.compare, "this pilot", console)
    return 0


def _plan_race(args: argparse.Namespace, config: Any, plan: Any, race: Any, console: Any) -> None:
    """``grid plan --race``: the race pilot (in OUT, or a scratch folder), the prediction, printed."""
    import tempfile

    from ..grid.race_plan import DEFAULT_RESAMPLES, pilot_cost, plan_race, write_race_plan

    resamples = DEFAULT_RESAMPLES if args.race_resamples is None else args.race_resamples
    cost = pilot_cost(config, plan.seconds, plan.offline_seconds, race, args.race_pilot_mdps)
    with tempfile.TemporaryDirectory(prefix="bbrl-race-pilot-") as scratch:
        folder = args.out if args.out is not None else Path(scratch)
        reuse = "; a race into that folder starts from them" if args.out is not None else ", a scratch folder"
        console.print(
            f"race pilot: every cell on the MDPs before the race's first decision, in {folder} "
            f"(predicted {_hours(cost)}{reuse})",
            highlight=False,
        )
        predicted = plan_race(
            config,
            plan.seconds,
            plan.offline_seconds,
            folder,
            race,
            args.race_pilot_mdps,
            resamples,
            threads=1,
            console=console,
        )
    print_race_plan(predicted, resamples, console)
    if args.out is not None:
        console.print(f"race prediction kept in {write_race_plan(args.out, predicted)}")


def print_race_plan(predicted: Any, resamples: int, console: Any) -> None:
    """The predicted core-hours without and with racing, per experiment and in total, and the
    configurations predicted to stop."""
    console.print(
        f"race pilot and prediction: {predicted.pilot_seconds:.3g} s wall; each race replayed on {resamples} "
        "resampled streams of the pilot's MDPs",
        highlight=False,
    )
    console.print("predicted core time without and with racing, per experiment:")
    full_total = raced_total = 0.0
    for key, forecasts in predicted.forecasts.items():
        full = sum(predicted.seconds[c] for c in forecasts)
        raced = sum(predicted.raced[c] for c in forecasts)
        full_total, raced_total = full_total + full, raced_total + raced
        stopping = sorted((f for f in forecasts.values() if f.stops), key=lambda f: (f.n_mdps, f.cell_id))
        share = f" ({raced / full:.0%})" if full > 0 else ""
        console.print(
            f"  {key}: {_hours(full)} in full, {_hours(raced)} raced{share}; {len(stopping)} of {len(forecasts)} "
            f"configurations predicted to stop (pilot of {predicted.pilot_mdps[key]} MDPs)",
            highlight=False,
        )
        for f in stopping:
            console.print(
                f"    after {f.n_mdps} of {f.n_total} MDPs ({f.stopped_share:.0%} of streams): {f.cell_id}, "
                f"by {f.by.split('/', 2)[-1] if f.by else None} ({f.rule})",
                highlight=False,
            )
    share = f" ({raced_total / full_total:.0%})" if full_total > 0 else ""
    console.print(
        f"total: {full_total / 3600:.4g} core-hours in full, {raced_total / 3600:.4g} core-hours raced{share}",
        highlight=False,
    )


def _print_comparison(rows: list[tuple[Any, float, float]], folder: Path, which: str, console: Any) -> None:
    if not rows:
        raise ValueError(f"{folder} has no finished cell of this configuration to compare with")
    predicted = sum(p for _, p, _ in rows)
    measured = sum(m for _, _, m in rows)
    ratios = sorted(p / m for _, p, m in rows if m > 0)
    console.print(
        f"{which} compared with {len(rows)} cells done in {folder}: predicted {predicted:.4g} core-s, measured "
        f"{measured:.4g} core-s (ratio {predicted / measured:.3f}); per cell predicted/measured: median "
        f"{ratios[len(ratios) // 2]:.3f}, from {ratios[0]:.3f} to {ratios[-1]:.3f}",
        highlight=False,
    )
    for cell, p, m in sorted(rows, key=lambda row: -row[2])[:5]:
        console.print(f"  {cell.id}: predicted {p:.3g} s, measured {m:.3g} s", highlight=False)


def _command_submit(args: argparse.Namespace, console: Any) -> int:
    from ..grid import config_path, load_config
    from ..grid.engines.slurm import SlurmOptions, resubmit, submit, watch

    if args.cpus_per_task < 1 or (args.max_parallel is not None and args.max_parallel < 1):
        raise ValueError("--cpus-per-task and --max-parallel must be at least 1")
    if args.dry_run and args.watch:
        raise ValueError("--dry-run submits nothing, so there is nothing to --watch: drop one of them")
    options = SlurmOptions(
        partition=args.partition,
        time=args.time,
        mem=args.mem,
        cpus_per_task=args.cpus_per_task,
        max_parallel=args.max_parallel,
        max_resubmits=args.max_resubmits,
    )
    config = load_config(config_path(args.config))
    if args.dry_run:
        check_output_dir(args.out)  # a dry run creates nothing
    else:
        output_dir(args.out)
    tasks = args.out / "slurm" / "tasks.json"
    if tasks.is_file():
        if args.dry_run:
            console.print(
                f"dry run: {args.out} was submitted already ({tasks}, script {tasks.parent / 'job.sh'}); without "
                "--dry-run, this command resubmits the array tasks that have unfinished cells and that SLURM no "
                "longer has (bbrl grid status lists the cells). Nothing was submitted.",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
            return 0
        from ..grid.race import recorded_race

        if race_options(args) is not None and recorded_race(args.out) is None:
            raise ValueError(f"{args.out} was submitted without --race: its cells run in full; drop --race")
        resubmit(args.out, console)  # a raced folder stays raced (race.json)
    else:
        submit(config, args.out, options, console, dry_run=args.dry_run, race=race_options(args))
    if args.watch:
        return 1 if watch(args.out, console, args.poll) else 0
    return 0


def _command_task(args: argparse.Namespace, console: Any) -> int:
    from ..grid.engines.slurm import run_task

    return 1 if run_task(args.out, args.index, console, args.config) else 0
