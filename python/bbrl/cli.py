"""The ``bbrl`` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from . import __version__, agents, distributions
from .experiment import Experiment
from .formulas import parse as parse_formula
from .tables import print_table, summary_frame

#: Subcommands defined in their own modules: each module has ``register(commands)``, which adds its
#: parser to ``commands`` (the ``add_subparsers`` object) with ``set_defaults(handler=f)``, where
#: ``f(args, console)`` runs the command. A new command adds one line here.
SUBCOMMAND_MODULES: tuple[str, ...] = ("bbrl.cli_value_error", "bbrl.cli_replay")
#: The same for subcommands of ``bbrl grid``: ``register(grid_commands)``.
GRID_SUBCOMMAND_MODULES: tuple[str, ...] = ("bbrl.grid.cluster_cli",)

EXAMPLES = """\
examples:
  bbrl run --experiment GC --prior GC --agent egreedy --param epsilon=0.1 --n-mdps 500 --seed 0
  bbrl run --experiment Grid --prior UGrid --agent beb --param beta=1 --param compat=true --horizon 250
  bbrl run --experiment GC --prior UGC --agent oppsds --param formula_set=F3 --param n_draws=1000 --save-agent opps.json
  bbrl run --experiment GC --agent-file opps.json --n-mdps 500
  bbrl paper --quick                      # the paper's study, small: runs examples/quick.toml and its report
  bbrl grid run examples/quick.toml --out results --shard 1/2
  bbrl grid status results
  bbrl grid run examples/quick.toml --out results --scheduler tcp://10.0.0.5:8786   # on a Dask cluster
  bbrl grid plan paper-accurate --target-hours 12 --out results
  bbrl grid submit paper-accurate --out results --partition cpu --time 04:00:00 --watch   # SLURM
  bbrl report results --out report
  bbrl quick --out bbrl-quick
  bbrl formulas --max-size 6 --seed 0
  bbrl agents
"""


def _parse_value(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param expects NAME=VALUE, got {pair!r}")
        params[key.strip()] = _parse_value(value)
    return params


def _add_protocol_options(parser: argparse.ArgumentParser, n_mdps: int) -> None:
    parser.add_argument("--n-mdps", type=int, default=n_mdps, help=f"test MDPs per experiment (default {n_mdps})")
    parser.add_argument("--gamma", type=float, default=0.95, help="discount factor in [0, 1) (default 0.95)")
    parser.add_argument(
        "--horizon",
        type=int,
        default=None,
        help="decisions per trajectory; default: the paper's formula with epsilon = 0.01 (193 on GC, 161 on GDL); "
        "the paper's experiments use 250",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of every random stream (default 0)")
    parser.add_argument("--threads", type=int, default=None, help="worker threads (default: every core)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bbrl",
        description="Benchmark Bayesian RL agents on Dirichlet (FDM) distributions of MDPs (BBRL protocol).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"bbrl {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="train one agent on a prior and test it on N MDPs; print its score and times",
        description="Train one agent offline on a prior, run one trajectory on each of N test MDPs drawn from "
        "the test distribution, and print the mean discounted return with its 95% interval, the offline time "
        "and the online time.",
    )
    run.add_argument("--experiment", required=True, help="test distribution: GC, GDL, Grid or a file path")
    run.add_argument("--prior", default=None, help="prior: GC, UGC, ... or a file (default: the test distribution)")
    who = run.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help=f"agent: {', '.join(agents.kinds())}")
    who.add_argument("--agent-file", type=Path, help="a trained agent saved with --save-agent (no retraining)")
    run.add_argument("--save-agent", type=Path, default=None, help="save the trained agent to this file")
    run.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="agent parameter (repeat)")
    run.add_argument(
        "--paper-names",
        action="store_true",
        help="read an infix formula=... with the paper's variable names: Q0 = QUniform, Q1 = QSelf, Q2 = QMean",
    )
    run.add_argument("--csv", type=Path, default=None, help="also write the per-MDP results to this CSV file")
    _add_protocol_options(run, 500)
    run.set_defaults(handler=_command_run)

    quick = commands.add_parser(
        "quick",
        help="a small real benchmark: every algorithm, one setting each, on GC, GDL and Grid, two priors",
        description="Runs every built-in algorithm at one representative setting (bbrl.quick.QUICK_SETTINGS) on "
        "the three problems with the accurate and the uniform prior, prints the table and writes it (CSV, "
        "Markdown) with a figure.",
    )
    quick.add_argument("--out", type=Path, default=Path("bbrl-quick"), help="output folder (default bbrl-quick)")
    _add_protocol_options(quick, 100)
    quick.set_defaults(handler=_command_quick)

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
    grid_run.add_argument("--out", type=Path, required=True, help="output folder (results and trained agents)")
    grid_run.add_argument("--shard", default=None, metavar="K/N", help="run only shard K of N (cells K-1, K-1+N, ...)")
    grid_run.add_argument("--threads", type=int, default=None, help="worker threads (default: every core)")
    grid_run.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the cells on a Dask cluster: its scheduler's address (tcp://HOST:PORT) or scheduler file",
    )
    grid_run.set_defaults(handler=_command_grid_run)
    grid_status = grid_commands.add_parser("status", help="which cells of a grid are done")
    grid_status.add_argument("target", type=Path, help="an output folder, or a configuration with --out")
    grid_status.add_argument("--out", type=Path, default=None, help="the output folder when TARGET is a configuration")
    grid_status.set_defaults(handler=_command_grid_status)
    for module in GRID_SUBCOMMAND_MODULES:
        importlib.import_module(module).register(grid_commands)

    report = commands.add_parser(
        "report",
        help="figures, tables and an HTML report of a grid's results",
        description="Per experiment: score vs offline time, score vs online time per decision, the best algorithms "
        "under offline/online time bounds (PNG and SVG), the results table (Markdown, LaTeX, CSV), and one "
        "self-contained HTML report.",
    )
    report.add_argument("results", type=Path, help="the output folder of `bbrl grid run`")
    report.add_argument("--out", type=Path, default=None, help="report folder (default RESULTS/report)")
    report.add_argument("--one-sided", action="store_true", help="paired test at 1.645 instead of 1.96 (two-sided)")
    report.add_argument(
        "--holm", action="store_true", help="Holm-correct the paired tests of each map cell for their number"
    )
    report.set_defaults(handler=_command_report)

    paper = commands.add_parser(
        "paper",
        help="the paper's experiments in one command (--quick: a small version in about a minute)",
        description="Runs the paper's grids and writes their reports. --quick runs the shipped quick.toml "
        "(every algorithm at a few settings on GC, GDL and Grid, accurate and inaccurate priors, N = 100, T = 250). "
        "Without --quick: paper-accurate.toml and paper-inaccurate.toml (198 settings x 3 problems each, N = 500): "
        "days of computation; use --shard on several machines. Interrupted runs resume.",
    )
    paper.add_argument("--quick", action="store_true", help="the small version (examples/quick.toml)")
    paper.add_argument("--out", type=Path, default=None, help="output folder (default bbrl-paper-quick or bbrl-paper)")
    paper.add_argument("--shard", default=None, metavar="K/N", help="run only shard K of N of each grid")
    paper.add_argument("--threads", type=int, default=None, help="worker threads (default: every core)")
    paper.set_defaults(handler=_command_paper)

    formulas = commands.add_parser(
        "formulas",
        help="generate a formula set F_n for OPPS-DS (reproducibly, from a seed)",
        description="Generates F_n, every valid formula of at most n tokens reduced by equivalence on random "
        "points, and writes one RPN formula per line. The shipped sets are F2..F6 with seed 0.",
    )
    formulas.add_argument("--max-size", type=int, required=True, help="n: the largest number of tokens")
    formulas.add_argument("--seed", type=int, required=True, help="seed of the random points")
    formulas.add_argument("--n-points", type=int, default=1000, help="number of points (default 1000)")
    formulas.add_argument("--out", type=Path, default=None, help="output file (default: F<n>.txt)")
    formulas.set_defaults(handler=_command_formulas)

    commands.add_parser("agents", help="list the agents, their parameters, defaults and ranges").set_defaults(
        handler=_command_agents
    )
    commands.add_parser("distributions", help="list the built-in distributions").set_defaults(
        handler=_command_distributions
    )
    for module in SUBCOMMAND_MODULES:
        importlib.import_module(module).register(commands)
    return parser


def _check_output_file(path: Path | None, option: str) -> None:
    """Fails before a run, not after it, when an output file cannot be written where asked."""
    if path is None:
        return
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"{option} {path}: folder {str(folder)!r} does not exist")
    if path.is_dir():
        raise ValueError(f"{option} {path}: is a folder, expected a file name")


def _command_run(args: argparse.Namespace, console: Console) -> int:
    _check_output_file(args.csv, "--csv")
    _check_output_file(args.save_agent, "--save-agent")
    test = distributions.get(args.experiment)
    experiment = Experiment(test, n_mdps=args.n_mdps, gamma=args.gamma, horizon=args.horizon, seed=args.seed)
    if args.agent_file is not None:
        if args.param or args.prior:
            raise ValueError("--agent-file brings its parameters and prior: drop --param and --prior")
        agent: agents.AgentSpec | agents.TrainedAgent = agents.load(args.agent_file)
    else:
        params = _parse_params(args.param)
        if args.paper_names and isinstance(params.get("formula"), str):
            params["formula"] = parse_formula(params["formula"], paper_names=True).rpn
        spec = agents.create(args.agent, params)
        prior = test if args.prior is None else distributions.get(args.prior)
        agent = spec.train(prior, experiment.gamma, experiment.horizon, experiment.seed)
        if args.save_agent is not None:
            agent.save(args.save_agent)
            console.print(f"trained agent saved to {args.save_agent}")
    result = experiment.run(agent, threads=args.threads, progress=console.is_terminal)
    print_table(summary_frame([result]), console, title=f"{experiment!r}")
    if args.csv is not None:
        from ._fileio import write_atomic

        write_atomic(args.csv, result.to_polars().write_csv().encode())
        console.print(f"per-MDP results written to {args.csv}")
    return 0


def _command_quick(args: argparse.Namespace, console: Console) -> int:
    from .quick import run_quick

    run_quick(args, console)
    return 0


def _command_formulas(args: argparse.Namespace, console: Console) -> int:
    from .formulas import write_formula_set

    out = args.out or Path(f"F{args.max_size}.txt")
    started = time.perf_counter()
    path = write_formula_set(out, args.max_size, args.seed, args.n_points)
    count = sum(1 for line in path.read_text().splitlines() if line and not line.startswith("#"))
    console.print(f"F{args.max_size}: {count} formulas written to {path} in {time.perf_counter() - started:.2f} s")
    return 0


def _config_path(value: Path) -> Path:
    from .paper import shipped_config

    if value.is_file():
        return value
    shipped = shipped_config(str(value))
    return shipped if shipped is not None else value


def _print_failures(failed: Sequence[tuple[Any, str]], console: Console) -> None:
    console.print(f"{len(failed)} cells failed (recorded beside their results; rerun to retry):", highlight=False)
    for cell, error in failed:
        console.print(f"  failed: {cell.id}: {error}", highlight=False, markup=False)


def _command_grid_run(args: argparse.Namespace, console: Console) -> int:
    from . import grid

    config = grid.load_config(_config_path(args.config))
    shard = grid.parse_shard(args.shard) if args.shard else None
    if args.scheduler is not None:
        from .grid.engines.dask_engine import run_on_dask

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
    from . import grid

    target: Path = args.target
    if target.is_dir():
        if args.out is not None:
            raise ValueError("give either an output folder, or a configuration with --out")
        out = target
        config = grid.load_output_config(target, check_agents=False)
    else:
        if args.out is None:
            raise ValueError("with a configuration, give the output folder: bbrl grid status CONFIG --out DIR")
        out = args.out
        config = grid.load_config(_config_path(target), check_agents=False)
    state = grid.status(config, out)
    by_experiment: dict[str, list[int]] = {}
    for cell in state.done:
        by_experiment.setdefault(cell.experiment.key, [0, 0])[0] += 1
    for cell in config.cells:
        by_experiment.setdefault(cell.experiment.key, [0, 0])[1] += 1
    for key, (done, total) in by_experiment.items():
        console.print(f"{key}: {done}/{total} cells done", highlight=False)
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


def _command_report(args: argparse.Namespace, console: Console) -> int:
    from .report import write_report

    out = args.out or args.results / "report"
    html = write_report(args.results, out, one_sided=args.one_sided, correction="holm" if args.holm else None)
    console.print(f"report written to {out} (open {html})")
    return 0


def _command_paper(args: argparse.Namespace, console: Console) -> int:
    from .paper import run_paper

    run_paper(quick=args.quick, out=args.out, shard=args.shard, threads=args.threads, console=console)
    return 0


def describe_agent(cls: type) -> tuple[str, list[str]]:
    """The description of an agent class (its docstring up to ``Args:``, on one line) and one line
    per parameter: name, default (or "required") and the docstring's words on it (its range)."""
    import dataclasses
    import inspect

    doc = inspect.getdoc(cls) or ""
    text, _, args_text = doc.partition("Args:")
    # The docstrings cite sections of a specification that is not part of the package.
    summary = re.sub(r"\s*\(SPEC [0-9.]+\)|;\s*SPEC [0-9.]+", "", " ".join(text.split()))
    explained: dict[str, str] = {}
    current = None
    for line in args_text.splitlines():
        stripped = line.strip()
        name, sep, rest = stripped.partition(":")
        if sep and name.isidentifier() and line.startswith("    ") and not line.startswith("     "):
            current = name
            explained[name] = rest.strip()
        elif current and stripped:
            explained[current] += " " + stripped
    lines = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f"default {f.default!r}"
        elif f.default_factory is not dataclasses.MISSING:
            default = f"default {f.default_factory()!r}"
        else:
            default = "required"
        lines.append(f"{f.name} ({default}): {explained.get(f.name, '')}".rstrip(": "))
    return summary, lines


def _command_agents(args: argparse.Namespace, console: Console) -> int:
    for name, cls in agents.kinds().items():
        summary, parameters = describe_agent(cls)
        console.print(f"[bold]{name}[/bold]: {cls.display}. {summary}", highlight=False)
        if not parameters:
            console.print("    no parameters", highlight=False)
        for parameter in parameters:
            console.print(f"    {parameter}", highlight=False, markup=False)
    return 0


def _command_distributions(args: argparse.Namespace, console: Console) -> int:
    for name in distributions.names():
        fdm = distributions.get(name)
        console.print(f"[bold]{name}[/bold]: {fdm.long_name}, S={fdm.n_states}, A={fdm.n_actions}")
    return 0


class _Stopped(BaseException):
    """SIGTERM turned into an exception in the main thread."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def _run_command(handler: Callable[[argparse.Namespace, Console], int], args: argparse.Namespace, console: Console):
    """Runs the command in a worker thread while the main thread waits for it.

    Python runs signal handlers only in the main thread and only between bytecodes: a long Rust
    call made from the main thread would hold a Ctrl-C until it returns. Here the main thread only
    waits, so SIGINT and SIGTERM are seen at once.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["code"] = handler(args, console)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="bbrl-command", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(timeout=0.05)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("code", 0)


def _stop_now(console: Console, code: int, what: str) -> None:
    """Ends the process at once: finished results are already on disk (each written atomically),
    the work in flight is abandoned. ``os._exit`` does not wait for the worker threads still inside
    a Rust call (waiting for them at interpreter exit is what aborted the process before)."""
    if console.is_terminal:
        console.show_cursor(True)
    print(f"\nbbrl: {what}; stopped (finished results are kept)", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    if not console.is_terminal:
        # Piped or captured output: do not wrap the table at 80 columns.
        console = Console(width=200)
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:
        # Also when the shell started us with SIGINT ignored (a background job of a script), so that
        # `kill -INT` stops a run as Ctrl-C does.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        if not in_main_thread:
            return args.handler(args, console)
        return _run_command(args.handler, args, console)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"bbrl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _stop_now(console, 128 + signal.SIGINT, "interrupted (SIGINT)")
    except _Stopped as stop:
        _stop_now(console, 128 + stop.signum, f"terminated ({signal.Signals(stop.signum).name})")
    return 0  # not reached: _stop_now exits
