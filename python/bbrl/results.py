"""A grid's results as data: the cell files of ``bbrl grid run`` read into polars frames."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from .schema import CELL_COLUMNS as _FILE_COLUMNS
from .stats import Z_95_TWO_SIDED

__all__ = ["CELL_COLUMNS", "Results", "load"]

#: Per-MDP columns of a cell file; every other column is constant within a cell.
_PER_MDP = ("mdp", "return", "online_seconds")
#: Columns that are constant within a cell file (everything but the per-MDP ones).
CELL_COLUMNS = tuple(c for c in _FILE_COLUMNS if c not in _PER_MDP)


class Results(NamedTuple):
    """``cells``: one row per finished cell with its statistics; ``returns``: one row per
    (cell, test MDP) with ``return`` and ``online_seconds`` (the long frame)."""

    cells: pl.DataFrame
    returns: pl.DataFrame


def load(out: str | os.PathLike[str]) -> Results:
    """Reads every finished cell of the output folder of ``bbrl grid run``.

    ``cells`` has, besides the cell's identifiers and settings (``experiment``, ``prior``,
    ``kind``, ``algorithm``, ``label``, ``params`` and ``details`` as JSON, ``n_mdps``, ``gamma``,
    ``horizon``, ``seed``, ``bbrl_version``): ``mean``, ``ci95`` (half-width, 1.96 s / sqrt(N)),
    ``offline_seconds``, ``online_seconds_per_trajectory`` and ``online_seconds_per_step`` (means
    over the MDPs). Rows are in the order of the configuration (``cell_index``).

    Raises:
        FileNotFoundError: no cell file in ``out``.
        bbrl.grid.CellFileError: a cell file is damaged or truncated (the message names it).
    """
    from .grid.store import check_cell_file

    folder = Path(out) / "cells"
    files = sorted(folder.rglob("*.parquet")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no finished cells in {str(Path(out))!r} (run `bbrl grid run CONFIG --out DIR` first)")
    frames = []
    for file in files:
        check_cell_file(file)  # a clear error naming a damaged file, not a bare polars one
        frames.append(pl.read_parquet(file))
    returns = pl.concat(frames, how="diagonal_relaxed").sort(["cell_index", "mdp"])
    cells = (
        returns.group_by("cell_id", maintain_order=True)
        .agg(
            *[pl.col(c).first() for c in CELL_COLUMNS if c != "cell_id"],
            pl.col("return").mean().alias("mean"),
            (Z_95_TWO_SIDED * pl.col("return").std(ddof=1) / pl.len().cast(pl.Float64).sqrt()).alias("ci95"),
            pl.col("online_seconds").mean().alias("online_seconds_per_trajectory"),
        )
        .with_columns((pl.col("online_seconds_per_trajectory") / pl.col("horizon")).alias("online_seconds_per_step"))
        .sort("cell_index")
    )
    return Results(cells=cells, returns=returns)


def returns_matrix(results: Results, cell_ids: list[str]) -> list[np.ndarray]:
    """The per-MDP returns of the given cells, in MDP order (for paired tests)."""
    by_cell = results.returns.partition_by("cell_id", as_dict=True, maintain_order=True)
    return [by_cell[(cid,)].sort("mdp")["return"].to_numpy() for cid in cell_ids]
