"""``bbrl run``: train one agent on a prior, test it on N MDPs, print its score and times."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fileio import write_atomic
from .options import (
    DeprecatedAlias,
    add_agent,
    add_agent_file_options,
    add_out,
    add_params,
    add_protocol_options,
    load_agent_file,
    output_file,
    output_file_path,
    parse_params,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["RESULTS_FILE", "register"]

#: What ``run --out DIR`` writes: the per-MDP results (the schema of :meth:`bbrl.Run.to_polars`).
RESULTS_FILE = "results.csv"


def register(commands: Any) -> None:
    """Adds ``run`` to the CLI's subcommands."""
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
    add_agent(who, required=False)
    who.add_argument("--agent-file", type=Path, help="a trained agent saved with --save-agent (no retraining)")
    add_agent_file_options(run)
    run.add_argument("--save-agent", type=Path, default=None, help="save the trained agent to this file")
    add_params(run)
    run.add_argument(
        "--paper-names",
        action="store_true",
        help="read an infix formula=... with the paper's variable names: Q0 = QUniform, Q1 = QSelf, Q2 = QMean",
    )
    add_out(run, f"also write the per-MDP results to DIR/{RESULTS_FILE} (DIR created if missing)")
    run.add_argument("--csv", type=Path, default=None, action=DeprecatedAlias, new="--out DIR", help=argparse.SUPPRESS)
    add_protocol_options(run, 500)
    run.set_defaults(handler=command)


def command(args: argparse.Namespace, console: Console) -> int:
    """The ``run`` subcommand."""
    from .. import agents, distributions
    from ..analysis.tables import print_table, summary_frame
    from ..formulas import parse as parse_formula
    from ..protocol import Experiment
    from ..protocol.schema import csv_columns

    for path, option in ((args.csv, "--csv"), (args.save_agent, "--save-agent")):
        if path is not None:
            output_file_path(path, option)  # fails before the run, not after it
    results_file = output_file(args.out, RESULTS_FILE, ".csv")
    test = distributions.get(args.experiment)
    experiment = Experiment(test, n_mdps=args.n_mdps, gamma=args.gamma, horizon=args.horizon, seed=args.seed)
    if args.agent_file is not None:
        if args.param or args.prior:
            raise ValueError("--agent-file brings its parameters and prior: drop --param and --prior")
        agent: agents.AgentSpec | agents.TrainedAgent = load_agent_file(args.agent_file, args)
    else:
        params = parse_params(args.param)
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
    for path in (args.csv, results_file):
        if path is not None:
            write_atomic(path, csv_columns(result.to_polars()).write_csv().encode())
            console.print(f"per-MDP results written to {path}")
    return 0
