"""Result tables: runs to a polars frame, and that frame to the terminal or Markdown."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl
from rich.console import Console
from rich.table import Table

from .experiment import Run

__all__ = ["format_seconds", "print_table", "summary_frame", "to_markdown"]


def summary_frame(runs: Iterable[Run]) -> pl.DataFrame:
    """One row per run: experiment, prior, agent, mean, 95% half-width and times (seconds)."""
    return pl.DataFrame([run.summary() for run in runs])


def format_seconds(seconds: float) -> str:
    """A duration with a readable unit: ns, us, ms, s, min or h."""
    if seconds != seconds:  # NaN
        return "-"
    for unit, size in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _rows(frame: pl.DataFrame) -> list[list[str]]:
    return [
        [
            row["experiment"],
            row["prior"],
            row["agent"] + (f" [{row['learned']}]" if row.get("learned") else ""),
            f"{row['mean']:.2f} ± {row['ci95']:.2f}",
            format_seconds(row["offline_seconds"]),
            format_seconds(row["online_seconds_per_step"]),
        ]
        for row in frame.iter_rows(named=True)
    ]


HEADERS = ["Experiment", "Prior", "Agent", "Score (mean ± 95%)", "Offline time", "Online time / decision"]


def print_table(frame: pl.DataFrame, console: Console | None = None, title: str | None = None) -> None:
    """Prints the summary frame as a table on the terminal."""
    table = Table(title=title)
    for header in HEADERS:
        table.add_column(header, justify="right" if header.startswith(("Score", "Off", "On")) else "left")
    for row in _rows(frame):
        table.add_row(*row)
    (console or Console()).print(table)


def to_markdown(frame: pl.DataFrame) -> str:
    """The summary frame as a Markdown table."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(frame)]
    return "\n".join(lines) + "\n"
