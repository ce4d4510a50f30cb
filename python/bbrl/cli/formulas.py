"""``bbrl formulas``: generate a formula set F_n for OPPS-DS (reproducibly, from a seed)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import add_out, add_seed, output_file, whole

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["register"]


def register(commands: Any) -> None:
    """Adds ``formulas`` to the CLI's subcommands."""
    formulas = commands.add_parser(
        "formulas",
        help="generate a formula set F_n for OPPS-DS (reproducibly, from a seed)",
        description="Generates F_n, every valid formula of at most n tokens reduced by equivalence on random "
        "points, and writes one RPN formula per line to DIR/F<n>.txt. The shipped sets are F2..F6 with seed 0.",
    )
    formulas.add_argument("--max-size", type=whole(1), required=True, help="n: the largest number of tokens")
    add_seed(formulas, "seed of the random points (default 0)")
    formulas.add_argument("--n-points", type=whole(1), default=1000, help="number of points (default 1000)")
    add_out(formulas, "output folder of F<n>.txt (default: the current folder)")
    formulas.set_defaults(handler=command)


def command(args: argparse.Namespace, console: Console) -> int:
    """The ``formulas`` subcommand."""
    from ..formulas import write_formula_set

    name = f"F{args.max_size}.txt"
    out = output_file(args.out, name, ".txt") if args.out is not None else Path(name)
    started = time.perf_counter()
    path = write_formula_set(out, args.max_size, args.seed, args.n_points)
    count = sum(1 for line in path.read_text().splitlines() if line and not line.startswith("#"))
    console.print(f"F{args.max_size}: {count} formulas written to {path} in {time.perf_counter() - started:.2f} s")
    return 0
