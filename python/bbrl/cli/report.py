"""``bbrl report``: figures, tables and an HTML report of a grid's results."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import add_out, new_output_dir

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["register"]


def register(commands: Any) -> None:
    """Adds ``report`` to the CLI's subcommands."""
    report = commands.add_parser(
        "report",
        help="figures, tables and an HTML report of a grid's results",
        description="Per experiment: the best algorithms under offline/online time bounds, score vs online time per "
        "decision, score vs offline time, the distribution of returns (PNG; SVG with --svg), the results table "
        "(Markdown, LaTeX, CSV), and one self-contained HTML report.",
    )
    report.add_argument("results", type=Path, help="the output folder of `bbrl grid run`")
    add_out(report, "report folder (default RESULTS/report)")
    report.add_argument("--one-sided", action="store_true", help="paired test at 1.645 instead of 1.96 (two-sided)")
    report.add_argument(
        "--holm", action="store_true", help="Holm-correct the paired tests of each map cell for their number"
    )
    report.add_argument(
        "--machine",
        default="reference",
        metavar="CALIBRATION",
        help="the calibration that turns work counts into the maps' costs: 'reference' (the shipped reference "
        "machine, default), 'own' (fitted on these results, RESULTS/calibration.json), a calibration file, or "
        "'measured' (the measured CPU times)",
    )
    report.add_argument(
        "--svg", action="store_true", help="write each figure as SVG too (PNG only by default: SVG doubles the time)"
    )
    report.set_defaults(handler=command)


def command(args: argparse.Namespace, console: Console) -> int:
    """The ``report`` subcommand."""
    from ..analysis.report import write_report
    from ..grid import missing_by_experiment
    from ..protocol.results import check_results_folder, read_experiments

    read_experiments(check_results_folder(args.results))  # before the report folder is made inside it
    out, option = (args.out, "--out") if args.out is not None else (args.results / "report", "report folder")
    with new_output_dir(out, option):
        html = write_report(
            args.results,
            out,
            one_sided=args.one_sided,
            correction="holm" if args.holm else None,
            missing=missing_by_experiment(args.results),
            machine=args.machine,
            svg=args.svg,
        )
    console.print(f"report written to {out} (open {html})")
    return 0
