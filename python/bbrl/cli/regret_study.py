"""``bbrl regret-study``: the episodic regret comparisons (RiverSwim, DeepSea scaling) into a report folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import add_out, add_seed, add_threads, output_dir

__all__ = ["register"]


def register(commands: Any) -> None:
    """Adds ``regret-study`` to the CLI's subcommands."""
    parser = commands.add_parser(
        "regret-study",
        help="regret over episodes: PSRL, the Bayes-adaptive planners and the baselines on RiverSwim and DeepSea",
        description="Osband, Russo & Van Roy 2013's RiverSwim comparison (RiverSwim-Osband, episodes of 20 steps): "
        "the cumulative regret over episodes of PSRL, BEB, BAMCP, BFS3, SBOSS and every agent kind registered as "
        "an episodic baseline, with 95% bands over runs and a regret table; and, when the problem registry has "
        "DeepSea, the episode from which 90% of episodes reach its treasure for N = 4 to 20. Without --quick: "
        "500 episodes x 20 runs. Writes README.md (the report), riverswim-regret.csv/.png/.svg, the per-episode "
        "results folder riverswim/, deepsea-scaling.csv/.png/.svg and summary.json.",
    )
    parser.add_argument("--quick", action="store_true", help="fewer episodes, runs and sizes (under 2 minutes)")
    add_out(parser, "output folder (default bbrl-regret-study or bbrl-regret-study-quick)")
    add_seed(parser, "seed of every MDP, start state and agent stream (default 0)")
    add_threads(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Any) -> int:
    """The ``regret-study`` subcommand."""
    from ..episodic.study import StudyConfig, run_study

    out = args.out or Path("bbrl-regret-study-quick" if args.quick else "bbrl-regret-study")
    output_dir(out)
    config = (StudyConfig.quick() if args.quick else StudyConfig()).smoke_sized()
    report = run_study(out, config, seed=args.seed, threads=args.threads, say=console.print)
    console.print(f"regret study ({'quick' if args.quick else 'full'}, seed {args.seed}): report in {report}")
    return 0
