"""The ``bbrl`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from . import __version__, agents, distributions
from .experiment import Experiment
from .tables import print_table, summary_frame

EXAMPLES = """\
examples:
  bbrl run --experiment GC --prior GC --agent egreedy --param epsilon=0.1 --n-mdps 500 --seed 0
  bbrl run --experiment Grid --prior UGrid --agent beb --param beta=1 --param compat=true --horizon 250
  bbrl run --experiment GC --prior UGC --agent oppsds --param formula_set=F3 --param n_draws=1000 --save-agent opps.json
  bbrl run --experiment GC --agent-file opps.json --n-mdps 500
  bbrl paper --quick                      # the paper's study, small: runs examples/quick.toml and its report
  bbrl grid run examples/quick.toml --out results --shard 1/2
  bbrl grid status results
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
        "the test distribution, and print the mean discounted return with its 95%% interval, the offline time "
        "and the online time.",
    )
    run.add_argument("--experiment", required=True, help="test distribution: GC, GDL, Grid or a file path")
    run.add_argument("--prior", default=None, help="prior: GC, UGC, ... or a file (default: the test distribution)")
    who = run.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", help=f"agent: {', '.join(agents.kinds())}")
    who.add_argument("--agent-file", type=Path, help="a trained agent saved with --save-agent (no retraining)")
    run.add_argument("--save-agent", type=Path, default=None, help="save the trained agent to this file")
    run.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="agent parameter (repeat)")
    run.add_argument("--csv", type=Path, default=None, help="also write the per-MDP results to this CSV file")
    _add_protocol_options(run, 500)

    quick = commands.add_parser(
        "quick",
        help="a small real benchmark: every agent on GC, GDL and Grid, accurate and uniform priors",
        description="Runs each built-in agent at a representative setting on the three problems with the "
        "accurate and the uniform prior, prints the table and writes it (CSV, Markdown) with a figure.",
    )
    quick.add_argument("--out", type=Path, default=Path("bbrl-quick"), help="output folder (default bbrl-quick)")
    _add_protocol_options(quick, 100)

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
    grid_status = grid_commands.add_parser("status", help="which cells of a grid are done")
    grid_status.add_argument("target", type=Path, help="an output folder, or a configuration with --out")
    grid_status.add_argument("--out", type=Path, default=None, help="the output folder when TARGET is a configuration")

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

    formulas = commands.add_parser(
        "formulas",
        help="generate a formula set F_n for OPPS-DS (reproducibly, from a seed)",
        description="Generates F_n, every valid formula of at most n tokens reduced by equivalence on random "
        "points (SPEC 4.9.4), and writes one RPN formula per line. The shipped sets are F2..F6 with seed 0.",
    )
    formulas.add_argument("--max-size", type=int, required=True, help="n: the largest number of tokens")
    formulas.add_argument("--seed", type=int, required=True, help="seed of the random points")
    formulas.add_argument("--n-points", type=int, default=1000, help="number of points (default 1000)")
    formulas.add_argument("--out", type=Path, default=None, help="output file (default: F<n>.txt)")

    commands.add_parser("agents", help="list the agents and their parameters")
    commands.add_parser("distributions", help="list the built-in distributions")
    return parser


def _command_run(args: argparse.Namespace, console: Console) -> None:
    test = distributions.get(args.experiment)
    experiment = Experiment(test, n_mdps=args.n_mdps, gamma=args.gamma, horizon=args.horizon, seed=args.seed)
    if args.agent_file is not None:
        if args.param or args.prior:
            raise ValueError("--agent-file brings its parameters and prior: drop --param and --prior")
        agent: agents.AgentSpec | agents.TrainedAgent = agents.load(args.agent_file)
    else:
        spec = agents.create(args.agent, _parse_params(args.param))
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


def _command_quick(args: argparse.Namespace, console: Console) -> None:
    from .quick import run_quick

    run_quick(args, console)


def _command_formulas(args: argparse.Namespace, console: Console) -> None:
    from .formulas import write_formula_set

    out = args.out or Path(f"F{args.max_size}.txt")
    started = time.perf_counter()
    path = write_formula_set(out, args.max_size, args.seed, args.n_points)
    count = sum(1 for line in path.read_text().splitlines() if line and not line.startswith("#"))
    console.print(f"F{args.max_size}: {count} formulas written to {path} in {time.perf_counter() - started:.2f} s")


def _config_path(value: Path) -> Path:
    from .paper import shipped_config

    if value.is_file():
        return value
    shipped = shipped_config(str(value))
    return shipped if shipped is not None else value


def _command_grid(args: argparse.Namespace, console: Console) -> None:
    from . import grid

    if args.grid_command == "run":
        config = grid.load_config(_config_path(args.config))
        shard = grid.parse_shard(args.shard) if args.shard else None
        outcome = grid.run_grid(config, args.out, shard=shard, threads=args.threads, console=console)
        console.print(
            f"{len(outcome.ran)} cells run in {outcome.seconds:.1f} s, {len(outcome.skipped)} already done; "
            f"results in {args.out}/cells"
        )
        return
    target: Path = args.target
    if target.is_dir():
        if args.out is not None:
            raise ValueError("give either an output folder, or a configuration with --out")
        out, config_file = target, target / "config.toml"
        if not config_file.is_file():
            raise FileNotFoundError(f"{target} has no config.toml: is it the output folder of `bbrl grid run`?")
    else:
        if args.out is None:
            raise ValueError("with a configuration, give the output folder: bbrl grid status CONFIG --out DIR")
        out, config_file = args.out, _config_path(target)
    config = grid.load_config(config_file, check_agents=False)
    state = grid.status(config, out)
    by_experiment: dict[str, list[int]] = {}
    for cell in state.done:
        by_experiment.setdefault(cell.experiment.key, [0, 0])[0] += 1
    for cell in config.cells:
        by_experiment.setdefault(cell.experiment.key, [0, 0])[1] += 1
    for key, (done, total) in by_experiment.items():
        console.print(f"{key}: {done}/{total} cells done")
    console.print(f"total: {len(state.done)}/{state.total} cells done in {out}")
    for cell in state.missing[:20]:
        console.print(f"  missing: {cell.id}", highlight=False)
    if len(state.missing) > 20:
        console.print(f"  ... and {len(state.missing) - 20} more")
    if state.stale_temp_files:
        console.print(f"{len(state.stale_temp_files)} stale temporary files (removed by the next run)")


def _command_report(args: argparse.Namespace, console: Console) -> None:
    from .report import write_report

    out = args.out or args.results / "report"
    html = write_report(args.results, out, one_sided=args.one_sided)
    console.print(f"report written to {out} (open {html})")


def _command_paper(args: argparse.Namespace, console: Console) -> None:
    from .paper import run_paper

    run_paper(quick=args.quick, out=args.out, shard=args.shard, threads=args.threads, console=console)


def _command_agents(console: Console) -> None:
    for name, cls in agents.kinds().items():
        doc = (cls.__doc__ or "").strip().splitlines()[0]
        params = [f.name for f in __import__("dataclasses").fields(cls)]
        console.print(f"[bold]{name}[/bold] ({', '.join(params) or 'no parameters'}): {doc}")


def _command_distributions(console: Console) -> None:
    for name in distributions.names():
        fdm = distributions.get(name)
        console.print(f"[bold]{name}[/bold]: {fdm.long_name}, S={fdm.n_states}, A={fdm.n_actions}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    if not console.is_terminal:
        # Piped or captured output: do not wrap the table at 80 columns.
        console = Console(width=200)
    try:
        if args.command == "run":
            _command_run(args, console)
        elif args.command == "quick":
            _command_quick(args, console)
        elif args.command == "grid":
            _command_grid(args, console)
        elif args.command == "report":
            _command_report(args, console)
        elif args.command == "paper":
            _command_paper(args, console)
        elif args.command == "formulas":
            _command_formulas(args, console)
        elif args.command == "agents":
            _command_agents(console)
        elif args.command == "distributions":
            _command_distributions(console)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"bbrl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bbrl: interrupted", file=sys.stderr)
        return 130
    return 0
