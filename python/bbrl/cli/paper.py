"""``bbrl paper``: the paper's experiments (SPEC 6) in one command, with their reports."""

from __future__ import annotations

import argparse
import dataclasses
import re
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from .. import grid
from ..analysis.report import write_report
from .options import add_out, add_seed, add_threads

__all__ = ["register", "run_paper"]


def register(commands: Any) -> None:
    """Adds ``paper`` to the CLI's subcommands."""
    paper = commands.add_parser(
        "paper",
        help="the paper's experiments in one command (--quick: a small version in about a minute)",
        description="Runs the paper's grids and writes their reports. --quick runs the shipped quick.toml "
        "(every algorithm at a few settings on GC, GDL and Grid, accurate and inaccurate priors, N = 100, T = 250). "
        "Without --quick: paper-accurate.toml and paper-inaccurate.toml (198 settings x 3 problems each, N = 500): "
        "days of computation; use --shard on several machines. Interrupted runs resume.",
    )
    paper.add_argument("--quick", action="store_true", help="the small version (examples/quick.toml)")
    add_out(paper, "output folder (default bbrl-paper-quick or bbrl-paper)")
    paper.add_argument("--shard", default=None, metavar="K/N", help="run only shard K of N of each grid")
    add_seed(paper, "seed of every experiment (default 0, the paper's grids' own)")
    add_threads(paper)
    paper.set_defaults(handler=command, kept="finished cells are kept (each whole); the same command runs the rest")


def command(args: argparse.Namespace, console: Console) -> int:
    """The ``paper`` subcommand."""
    run_paper(quick=args.quick, out=args.out, shard=args.shard, threads=args.threads, console=console, seed=args.seed)
    return 0


#: The line of the shipped configurations' ``[defaults]`` that sets every experiment's seed.
_SEED_LINE = re.compile(r"^seed = \d+$", re.MULTILINE)


def _config(name: str, seed: int = 0) -> grid.GridConfig:
    """A shipped configuration; with another ``seed`` than its own, every experiment's seed replaced
    (in the text too, so that the output folder's copy says which seed its cells used)."""
    path = grid.shipped_config(name)
    if path is None:
        raise FileNotFoundError(f"the shipped configuration {name}.toml is missing from the installed package")
    config = grid.load_config(path)
    if all(e.seed == seed for e in config.experiments):
        return config
    text = path.read_text(encoding="utf-8")
    if len(_SEED_LINE.findall(text)) != 1:
        raise ValueError(f"{path}: cannot set the seed (expected one 'seed = N' line in [defaults])")
    text = _SEED_LINE.sub(f"seed = {int(seed)}", text)
    return dataclasses.replace(grid.parse_config(text, str(path), path.resolve().parent), path=path)


def run_paper(
    quick: bool,
    out: Path | None = None,
    shard: str | None = None,
    threads: int | None = None,
    console: Any = None,
    seed: int = 0,
) -> list[Path]:
    """Runs the paper's grids and writes their reports; returns the HTML reports.

    ``quick``: ``quick.toml`` into ``out`` (default ``bbrl-paper-quick``), report in ``out/report``.
    Otherwise ``paper-accurate.toml`` and ``paper-inaccurate.toml`` into ``out/accurate`` and
    ``out/inaccurate`` (default ``out`` = ``bbrl-paper``), each with its ``report``. Both resume.
    ``seed``: the seed of every experiment (the shipped grids' is 0).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {seed!r}")
    console = console or Console()
    parsed_shard = grid.parse_shard(shard) if shard else None
    if quick:
        studies = [("quick", out or Path("bbrl-paper-quick"))]
    else:
        base = out or Path("bbrl-paper")
        studies = [("paper-accurate", base / "accurate"), ("paper-inaccurate", base / "inaccurate")]
    configs = [(_config(name, seed), folder) for name, folder in studies]  # validate both before running either
    reports = []
    for (config, folder), (name, _) in zip(configs, studies, strict=True):
        started = time.perf_counter()
        console.print(f"[bold]{name}[/bold]: {len(config.cells)} cells into {folder}")
        grid.run_grid(config, folder, shard=parsed_shard, threads=threads, console=console)
        state = grid.status(config, folder)
        if state.missing:
            console.print(f"{len(state.missing)} cells of {name} remain (other shards); report of the finished ones")
        html = write_report(folder, folder / "report", missing=grid.missing_by_experiment(folder))
        console.print(f"{name}: done in {time.perf_counter() - started:.1f} s; report: {html}")
        reports.append(html)
    return reports
