"""The one schema of per-MDP results: what :meth:`bbrl.Run.to_polars` returns and what every grid
cell file holds (one row per test MDP), defined once so that the two never drift apart.

A run's frame has the :data:`RUN_COLUMNS`; a grid cell's file has those and the
:data:`CELL_EXTRA_COLUMNS` that name the cell in its grid. Times are in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "CELL_COLUMNS",
    "CELL_EXTRA_COLUMNS",
    "RUN_COLUMNS",
    "SCHEMA",
    "describe_host",
    "host_columns",
    "per_mdp_frame",
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
}

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
    ``load_average`` (1 minute) and ``cpu_clock_resolution_seconds``."""
    from . import _core

    return dict(_core.host())


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

    ``values`` maps each column to an array of ``n_mdps`` values or to one value for every row.

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
        if isinstance(value, np.ndarray):
            if value.shape != (n_mdps,):
                raise ValueError(f"column {name!r} has shape {value.shape}, expected ({n_mdps},)")
            data[name] = pl.Series(name, value).cast(dtype)
        else:
            data[name] = pl.Series(name, [value], dtype=dtype).extend_constant(value, n_mdps - 1)
    return pl.DataFrame(data)
