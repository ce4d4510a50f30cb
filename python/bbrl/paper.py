"""``bbrl paper``: the paper's experiments (SPEC 6) in one command, with their reports."""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import Any

from . import grid
from .report import write_report

__all__ = ["SHIPPED_CONFIGS", "run_paper", "shipped_config"]

#: The configurations shipped with the package (the same files as the checkout's examples/).
SHIPPED_CONFIGS = ("quick", "paper-accurate", "paper-inaccurate")


def shipped_config(name: str) -> Path | None:
    """The installed copy of a shipped configuration (``quick``, ``paper-accurate``,
    ``paper-inaccurate``, with or without ``.toml``), or ``None``."""
    stem = name[:-5] if name.endswith(".toml") else name
    if stem not in SHIPPED_CONFIGS:
        return None
    path = Path(str(resources.files("bbrl") / "data" / "configs" / f"{stem}.toml"))
    return path if path.is_file() else None


def _config(name: str) -> grid.GridConfig:
    path = shipped_config(name)
    if path is None:
        raise FileNotFoundError(f"the shipped configuration {name}.toml is missing from the installed package")
    return grid.load_config(path)


def run_paper(
    quick: bool,
    out: Path | None = None,
    shard: str | None = None,
    threads: int | None = None,
    console: Any = None,
) -> list[Path]:
    """Runs the paper's grids and writes their reports; returns the HTML reports.

    ``quick``: ``quick.toml`` into ``out`` (default ``bbrl-paper-quick``), report in ``out/report``.
    Otherwise ``paper-accurate.toml`` and ``paper-inaccurate.toml`` into ``out/accurate`` and
    ``out/inaccurate`` (default ``out`` = ``bbrl-paper``), each with its ``report``. Both resume.
    """
    from rich.console import Console

    console = console or Console()
    parsed_shard = grid.parse_shard(shard) if shard else None
    if quick:
        studies = [("quick", out or Path("bbrl-paper-quick"))]
    else:
        base = out or Path("bbrl-paper")
        studies = [("paper-accurate", base / "accurate"), ("paper-inaccurate", base / "inaccurate")]
    configs = [(_config(name), folder) for name, folder in studies]  # validate both before running either
    reports = []
    for (config, folder), (name, _) in zip(configs, studies, strict=True):
        started = time.perf_counter()
        console.print(f"[bold]{name}[/bold]: {len(config.cells)} cells into {folder}")
        grid.run_grid(config, folder, shard=parsed_shard, threads=threads, console=console)
        state = grid.status(config, folder)
        if state.missing:
            console.print(f"{len(state.missing)} cells of {name} remain (other shards); report of the finished ones")
        html = write_report(folder, folder / "report")
        console.print(f"{name}: done in {time.perf_counter() - started:.1f} s; report: {html}")
        reports.append(html)
    return reports
