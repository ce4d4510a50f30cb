"""A grid's results as data: the cell files of ``bbrl grid run`` read into polars frames."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from .schema import CELL_COLUMNS as _FILE_COLUMNS
from .schema import REWARDS_COLUMN, rewards_array
from .stats import ci95_halfwidth

__all__ = ["CELL_COLUMNS", "Results", "load", "returns_matrix", "rewards_matrix"]

#: Per-MDP columns of a cell file; every other column is constant within a cell.
_PER_MDP = ("mdp", "return", "online_seconds")
#: Columns that are constant within a cell file (everything but the per-MDP ones).
CELL_COLUMNS = tuple(c for c in _FILE_COLUMNS if c not in _PER_MDP)


class Results(NamedTuple):
    """``cells``: one row per finished cell with its statistics; ``returns``: one row per
    (cell, test MDP) with ``return`` and ``online_seconds`` (the long frame), and ``rewards`` (the
    MDP's T per-step rewards, null for cells that did not record them) when any cell recorded them."""

    cells: pl.DataFrame
    returns: pl.DataFrame


def load(out: str | os.PathLike[str]) -> Results:
    """Reads every finished cell of the output folder of ``bbrl grid run``.

    ``cells`` has, besides the cell's identifiers and settings (``experiment``, ``prior``,
    ``kind``, ``algorithm``, ``label``, ``params`` and ``details`` as JSON, ``n_mdps``, ``gamma``,
    ``horizon``, ``seed``, ``bbrl_version``, the host and thread columns): ``mean``, ``ci95``
    (half-width, 1.96 s / sqrt(N)), ``offline_seconds`` and ``offline_cpu_seconds``, the means over
    the MDPs ``online_seconds_per_trajectory``, ``online_cpu_seconds_per_trajectory`` (and per
    step), ``online_cpu_ci95_per_trajectory`` (the interval of that mean), and the times the maps
    and figures compare: ``online_time_per_trajectory``, ``online_time_per_step`` and
    ``offline_time``, CPU times where recorded, else wall times (``time_basis`` says which), and
    ``has_rewards`` (the cell recorded per-step rewards: :func:`rewards_matrix` gives them).
    Rows are in the order of the configuration (``cell_index``).

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
    if "online_cpu_seconds" not in returns.columns:  # every file predates CPU times
        returns = returns.with_columns(
            pl.lit(None, dtype=pl.Float64).alias("online_cpu_seconds"),
            pl.lit(None, dtype=pl.Float64).alias("offline_cpu_seconds"),
        )
    if REWARDS_COLUMN not in returns.columns:  # no cell recorded per-step rewards
        returns = returns.with_columns(pl.lit(None, dtype=pl.List(pl.Float64)).alias(REWARDS_COLUMN))
    constant = [c for c in CELL_COLUMNS if c != "cell_id" and c in returns.columns]
    cells = (
        returns.group_by("cell_id", maintain_order=True)
        .agg(
            *[pl.col(c).first() for c in constant],
            pl.col("return").alias("_returns"),
            pl.col("online_seconds").mean().alias("online_seconds_per_trajectory"),
            pl.col("online_cpu_seconds").fill_nan(None).mean().alias("online_cpu_seconds_per_trajectory"),
            pl.col("online_cpu_seconds").fill_nan(None).alias("_cpu"),
            pl.col(REWARDS_COLUMN).is_not_null().all().alias("has_rewards"),
        )
        .sort("cell_index")
    )
    # One interval function for every 95% interval (stats.ci95_halfwidth).
    cells = cells.with_columns(
        pl.Series("mean", [float(np.mean(r)) for r in cells["_returns"].to_list()], dtype=pl.Float64),
        pl.Series("ci95", [ci95_halfwidth(np.asarray(r)) for r in cells["_returns"].to_list()], dtype=pl.Float64),
        pl.Series(
            "online_cpu_ci95_per_trajectory",
            [ci95_halfwidth(np.asarray([x for x in c if x is not None])) for c in cells["_cpu"].to_list()],
            dtype=pl.Float64,
        ),
    ).drop("_returns", "_cpu")
    # The times the comparisons use: CPU time where it was recorded, else wall time.
    cpu_known = pl.col("online_cpu_seconds_per_trajectory").is_not_null()
    cells = cells.with_columns(
        (pl.col("online_seconds_per_trajectory") / pl.col("horizon")).alias("online_seconds_per_step"),
        (pl.col("online_cpu_seconds_per_trajectory") / pl.col("horizon")).alias("online_cpu_seconds_per_step"),
        pl.when(cpu_known)
        .then(pl.col("online_cpu_seconds_per_trajectory"))
        .otherwise(pl.col("online_seconds_per_trajectory"))
        .alias("online_time_per_trajectory"),
        pl.when(cpu_known).then(pl.lit("cpu")).otherwise(pl.lit("wall")).alias("time_basis"),
        pl.col("offline_cpu_seconds").fill_nan(None).fill_null(pl.col("offline_seconds")).alias("offline_time"),
    ).with_columns((pl.col("online_time_per_trajectory") / pl.col("horizon")).alias("online_time_per_step"))
    return Results(cells=cells, returns=returns)


def returns_matrix(results: Results, cell_ids: list[str]) -> list[np.ndarray]:
    """The per-MDP returns of the given cells, in MDP order (for paired tests)."""
    by_cell = results.returns.partition_by("cell_id", as_dict=True, maintain_order=True)
    return [by_cell[(cid,)].sort("mdp")["return"].to_numpy() for cid in cell_ids]


def rewards_matrix(results: Results, cell_id: str) -> np.ndarray:
    """The per-step rewards of cell ``cell_id``: an (n_mdps, T) float64 array, MDP ``i`` in row
    ``i``, in reward units per step.

    Raises:
        KeyError: no such cell.
        ValueError: the cell did not record rewards (its experiment lacks ``record_rewards = true``).
    """
    rows = results.returns.filter(pl.col("cell_id") == cell_id).sort("mdp")
    if rows.height == 0:
        raise KeyError(f"no cell {cell_id!r} in the results")
    if rows[REWARDS_COLUMN].null_count():
        raise ValueError(
            f"cell {cell_id!r} did not record per-step rewards (set record_rewards = true for its experiment)"
        )
    return rewards_array(rows[REWARDS_COLUMN])
