"""How a grid run shows its progress: one line per finished cell, and a progress bar on a terminal."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from ..intervals import mean_ci95
from ..protocol.schema import Col
from .model import Cell

__all__ = ["Plain", "open_display"]


class Plain:
    """One line per finished or failed cell (what is shown when the output is not a terminal):
    its mean return with the half-width of its 95% interval, and the wall time it took (training
    included)."""

    def __init__(self, console: Any, total: int, done: int) -> None:
        self.console, self.total, self.done = console, total, done

    def start(self, cell: Cell) -> None:
        pass

    def mdps(self, done: int) -> None:
        pass

    def finish(self, cell: Cell, path: Path, seconds: float) -> None:
        self.done += 1
        mean, half = mean_ci95(pl.read_parquet(path, columns=[Col.RETURN])[Col.RETURN].to_numpy())
        self.console.print(
            f"[{self.done}/{self.total}] {cell.id}: {mean:.2f} ± {half:.2f} ({seconds:.2f} s wall time)",
            highlight=False,
        )

    def fail(self, cell: Cell, error: str) -> None:
        self.done += 1
        self.console.print(f"[{self.done}/{self.total}] {cell.id}: FAILED: {error}", highlight=False, markup=False)


class _Rich(Plain):
    """A bar over the cells and one over the current cell's MDPs, above the finished lines."""

    def __init__(self, console: Any, total: int, done: int, progress: Any) -> None:
        super().__init__(console, total, done)
        self.progress = progress
        self.cells = progress.add_task("cells", total=total, completed=done)
        self.current = progress.add_task("", total=1, visible=False)

    def start(self, cell: Cell) -> None:
        self.progress.update(
            self.current, description=f"  {cell.id}", total=cell.experiment.n_mdps, completed=0, visible=True
        )

    def mdps(self, done: int) -> None:
        self.progress.update(self.current, completed=done)

    def finish(self, cell: Cell, path: Path, seconds: float) -> None:
        super().finish(cell, path, seconds)
        self.progress.update(self.cells, completed=self.done)

    def fail(self, cell: Cell, error: str) -> None:
        super().fail(cell, error)
        self.progress.update(self.cells, completed=self.done)


@contextlib.contextmanager
def open_display(console: Any, total: int, done: int) -> Iterator[Plain]:
    """The display for ``total`` cells of which ``done`` are finished already."""
    if not console.is_terminal:
        yield Plain(console, total, done)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        yield _Rich(console, total, done, progress)
