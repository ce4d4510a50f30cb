"""``bbrl export``: a grid's results in the formats of rliable, AdaStop, or one long CSV table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import add_out, new_output_dir

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["register"]


def register(commands: Any) -> None:
    """Adds ``export`` to the CLI's subcommands."""
    from ..analysis.export import FORMATS

    export = commands.add_parser(
        "export",
        help="a grid's results for rliable, AdaStop or as one long CSV table",
        description="rliable: RESULTS/export/rliable.npz, {algorithm: (MDPs x experiments)} normalised scores "
        "(R - R_random) / (R_optimal - R_random) of each algorithm's best setting (no pickles), and "
        "rliable-experiments.csv naming the columns. adastop: export/adastop/<experiment>-<prior>.csv, a column per "
        "algorithm, a row per test MDP. csv: export/returns.csv, one row per cell and test MDP.",
    )
    export.add_argument("results", type=Path, help="the output folder of `bbrl grid run`")
    export.add_argument("--format", required=True, choices=FORMATS, help="the format to write")
    add_out(export, "output folder (default RESULTS/export)")
    export.set_defaults(handler=command)


def command(args: argparse.Namespace, console: Console) -> int:
    """The ``export`` subcommand."""
    from ..analysis.export import export
    from ..protocol.results import check_results_folder, read_experiments

    read_experiments(check_results_folder(args.results))  # before the output folder is made inside it
    out, option = (args.out, "--out") if args.out is not None else (args.results / "export", "export folder")
    with new_output_dir(out, option):
        files = export(args.results, args.format, out)
    for file in files:
        console.print(f"wrote {file}")
    return 0
