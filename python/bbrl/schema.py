"""The one schema of per-MDP results: what :meth:`bbrl.Run.to_polars` returns and what every grid
cell file holds (one row per test MDP), defined once so that the two never drift apart.

A run's frame has the :data:`RUN_COLUMNS`; a grid cell's file has those and the
:data:`CELL_EXTRA_COLUMNS` that name the cell in its grid. Times are in seconds. A run or cell that
recorded per-step rewards has one more column, :data:`REWARDS_COLUMN` (last): the T rewards of the
MDP's trajectory, a list of floats per row (reward per step, in the problem's reward units); results
without it are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "CELL_COLUMNS",
    "CELL_EXTRA_COLUMNS",
    "REWARDS_COLUMN",
    "RUN_COLUMNS",
    "SCHEMA",
    "describe_host",
    "host_columns",
    "host_line",
    "per_mdp_frame",
    "rewards_array",
]

#: Every column a per-MDP result frame may have, with its type.
SCHEMA: dict[str, Any] = {
    # Identifiers of the run.
    "experiment": pl.String,
    "prior": pl.String,
    "agent": pl.String,
    # One row per test MDP.
    "mdp": pl.Int64,
    "return": pl.Float64,
    #: Wall time of the MDP's trajectory (reset and T decisions).
    "online_seconds": pl.Float64,
    #: Wall time of offline learning (the same on every row).
    "offline_seconds": pl.Float64,
    # The protocol.
    "gamma": pl.Float64,
    "horizon": pl.Int64,
    "seed": pl.UInt64,
    #: CPU time of the trajectory on the thread that ran it.
    "online_cpu_seconds": pl.Float64,
    #: CPU time of offline learning, every thread of the process (NaN: unknown).
    "offline_cpu_seconds": pl.Float64,
    # The machine and the run's parallelism (the same on every row).
    "host_cpu": pl.String,
    "host_vector_extensions": pl.String,
    "host_logical_cores": pl.Int64,
    "host_load_average": pl.Float64,
    "cpu_clock_resolution_seconds": pl.Float64,
    "threads": pl.Int64,
    # Grid cells only.
    "cell_id": pl.String,
    "cell_index": pl.Int64,
    "test": pl.String,
    "block": pl.String,
    "kind": pl.String,
    "algorithm": pl.String,
    "label": pl.String,
    "params": pl.String,
    "details": pl.String,
    "n_mdps": pl.Int64,
    "bbrl_version": pl.String,
    # Only where per-step rewards were recorded: the MDP's T rewards, step 0 first.
    "rewards": pl.List(pl.Float64),
}

#: The optional column of recorded per-step rewards (see the module docstring).
REWARDS_COLUMN = "rewards"

#: The columns of :meth:`bbrl.Run.to_polars`, in order.
RUN_COLUMNS: tuple[str, ...] = (
    "experiment",
    "prior",
    "agent",
    "mdp",
    "return",
    "online_seconds",
    "offline_seconds",
    "gamma",
    "horizon",
    "seed",
    "online_cpu_seconds",
    "offline_cpu_seconds",
    "host_cpu",
    "host_vector_extensions",
    "host_logical_cores",
    "host_load_average",
    "cpu_clock_resolution_seconds",
    "threads",
)

#: What a grid cell adds to a run's columns.
CELL_EXTRA_COLUMNS: tuple[str, ...] = (
    "cell_id",
    "cell_index",
    "test",
    "block",
    "kind",
    "algorithm",
    "label",
    "params",
    "details",
    "n_mdps",
    "bbrl_version",
)

#: The columns of a grid cell file, in order.
CELL_COLUMNS: tuple[str, ...] = CELL_EXTRA_COLUMNS[:1] + RUN_COLUMNS + CELL_EXTRA_COLUMNS[1:]


def describe_host() -> dict[str, Any]:
    """The machine, now: ``cpu_model``, ``vector_extensions`` (a list), ``logical_cores``,
    ``load_average`` (1 minute), ``cpu_clock_resolution_seconds`` and ``vector_path`` (the
    solvers' path in this process: ``scalar``, ``avx2`` or ``avx512``; ``BBRL_SIMD`` forces one)."""
    from . import _core

    return dict(_core.host())


def host_line(host: dict[str, Any] | None = None) -> str:
    """One line naming the machine (for benches and logs): CPU model, logical cores, vector
    extensions and load, from :func:`describe_host` (now, when ``host`` is not given)."""
    host = describe_host() if host is None else host
    extensions = " ".join(host.get("vector_extensions", [])) or "none detected"
    return (
        f"machine: {host.get('cpu_model', 'unknown CPU')}, {host.get('logical_cores', 0)} logical CPUs, "
        f"vector extensions {extensions}, solvers on the {host.get('vector_path', 'unknown')} path, "
        f"load average {host.get('load_average', float('nan')):.1f}"
    )


def host_columns(host: dict[str, Any], threads: int) -> dict[str, Any]:
    """The host and thread-count columns of a result frame, from :func:`describe_host`'s dict."""
    return {
        "host_cpu": host.get("cpu_model", ""),
        "host_vector_extensions": " ".join(host.get("vector_extensions", [])),
        "host_logical_cores": host.get("logical_cores", 0),
        "host_load_average": host.get("load_average", float("nan")),
        "cpu_clock_resolution_seconds": host.get("cpu_clock_resolution_seconds", float("nan")),
        "threads": threads,
    }


def per_mdp_frame(columns: Sequence[str], values: Mapping[str, Any], n_mdps: int) -> pl.DataFrame:
    """A frame of ``n_mdps`` rows with exactly ``columns``, typed by :data:`SCHEMA`.

    ``values`` maps each column to an array of ``n_mdps`` values or to one value for every row;
    the list column :data:`REWARDS_COLUMN` takes an (n_mdps, T) array, one row per MDP.

    Raises:
        ValueError: a column is missing from ``values``, unknown to the schema, or of another length.
    """
    unknown = [c for c in columns if c not in SCHEMA]
    missing = [c for c in columns if c not in values]
    if unknown or missing:
        raise ValueError(f"result columns: unknown {unknown}, missing {missing}")
    data: dict[str, pl.Series] = {}
    for name in columns:
        value = values[name]
        dtype = SCHEMA[name]
        if isinstance(dtype, pl.List):
            if not (isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] == n_mdps):
                shape = getattr(value, "shape", type(value).__name__)
                raise ValueError(f"column {name!r} has shape {shape}, expected ({n_mdps}, T)")
            # A 2-D array becomes a fixed-width array column without a per-row loop; stored as a list.
            data[name] = pl.Series(name, np.ascontiguousarray(value, dtype=np.float64)).cast(dtype)
        elif isinstance(value, np.ndarray):
            if value.shape != (n_mdps,):
                raise ValueError(f"column {name!r} has shape {value.shape}, expected ({n_mdps},)")
            data[name] = pl.Series(name, value).cast(dtype)
        else:
            data[name] = pl.Series(name, [value], dtype=dtype).extend_constant(value, n_mdps - 1)
    return pl.DataFrame(data)


def rewards_array(column: pl.Series) -> np.ndarray:
    """The (rows, T) float64 array of a :data:`REWARDS_COLUMN` (rows in the column's order).

    Raises:
        ValueError: a row has no rewards, or rows of different lengths.
    """
    if column.null_count():
        raise ValueError(f"{column.null_count()} of {column.len()} rows have no recorded rewards")
    lengths = column.list.len()
    if column.len() == 0 or lengths.min() != lengths.max():
        raise ValueError(f"recorded rewards of unequal lengths ({lengths.min()} to {lengths.max()} steps)")
    flat = column.explode().to_numpy().astype(np.float64, copy=False)
    return flat.reshape(column.len(), int(lengths[0]))
