"""``bbrl replay-study``: Mandel et al.'s (2016) replay experiments regenerated into a report folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import add_out, add_seed, add_threads, output_dir

__all__ = ["register"]


def register(commands: Any) -> None:
    """Adds ``replay-study`` to the CLI's subcommands."""
    parser = commands.add_parser(
        "replay-study",
        help="Mandel et al.'s replay experiments (Figure 2a, RiverSwim) into a report folder",
        description="Figure 2a (SixArms: PSRS and Queue against the model-based evaluator, MSE against the online "
        "truth per episode with bias, variance and the share of runs reaching it) and the RiverSwim comparison "
        "(episodes evaluated by Queue, PSRS and PERS for logs of 200 and 1,000 episodes). Without --quick: the "
        "paper's sizes (200 logs, 10,000 truth runs; minutes on 2 cores). Writes README.md (the report), "
        "figure2a.csv/.png/.svg, riverswim.csv and summary.json.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer logs, runs and truth runs (under a minute on 2 cores)"
    )
    add_out(parser, "output folder (default bbrl-replay-study or bbrl-replay-study-quick)")
    add_seed(parser, "seed of every log, evaluation and online run (default 0)")
    add_threads(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Any) -> int:
    """The ``replay-study`` subcommand."""
    from ..analysis.replay_study import StudyConfig, run_study

    out = args.out or Path("bbrl-replay-study-quick" if args.quick else "bbrl-replay-study")
    output_dir(out)
    config = StudyConfig.quick() if args.quick else StudyConfig()
    report = run_study(out, config, seed=args.seed, threads=args.threads)
    console.print(f"replay study ({'quick' if args.quick else 'full'}, seed {args.seed}): report in {report}")
    return 0
