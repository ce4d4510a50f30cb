"""``bbrl agents convert OLD NEW --allow-pickle``: rewrites an agent file of bbrl's earlier format
(a Python agent as pickles) as data, once, so that it can then be loaded without running code."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import add_agent_file_options, load_agent_file

__all__ = ["add_convert", "convert"]


def add_convert(actions: Any) -> None:
    """Adds ``convert`` under ``bbrl agents``."""
    parser = actions.add_parser(
        "convert",
        help="rewrite an agent file of bbrl's earlier format (pickles) as data",
        description="Reads OLD (unpickling its Python agent, which runs whatever code it holds: only with "
        "--allow-pickle, for a file you trust) and writes NEW in the current format, which holds data only. "
        "The agent's class must be importable (or named with --agent-class), and its state must be data.",
    )
    parser.add_argument("old", type=Path, help="the agent file to read")
    parser.add_argument("new", type=Path, help="the agent file to write (must not exist)")
    add_agent_file_options(parser)
    parser.set_defaults(handler=convert)


def convert(args: argparse.Namespace, console: Any) -> int:
    """The ``agents convert`` subcommand."""
    if args.new.exists():
        raise ValueError(f"{args.new} exists: give a new file name")
    if args.new.resolve() == args.old.resolve():
        raise ValueError("OLD and NEW must differ: the old file stays as it is")
    trained = load_agent_file(args.old, args)
    trained.save(args.new)
    console.print(f"{args.old} -> {args.new}: {trained.label}, saved as data", highlight=False, markup=False)
    return 0
