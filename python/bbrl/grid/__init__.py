"""Benchmark grids: a TOML configuration of experiments and agent parameter grids, expanded into
cells (experiment x agent x parameters) that a resumable runner turns into one Parquet file each.

One job per module: :mod:`~bbrl.grid.config` (parsing, validation, cells and their ids),
:mod:`~bbrl.grid.store` (the output folder: cell files, failure records, trained-agent cache,
status), :mod:`~bbrl.grid.runner` (running the cells) and :mod:`~bbrl.grid.display` (progress).
See :mod:`bbrl.grid.config` for the configuration format.
"""

from __future__ import annotations

from .config import (
    Cell,
    ConfigError,
    ExperimentConfig,
    GridConfig,
    load_config,
    load_python_agent_class,
    params_id,
    parse_config,
    parse_shard,
    select_shard,
)
from .runner import GridRun, run_cell, run_grid
from .store import (
    CellFileError,
    GridStatus,
    agent_path,
    cell_path,
    check_cell_file,
    failure_path,
    load_output_config,
    stale_temp_files,
    status,
)

__all__ = [
    "Cell",
    "CellFileError",
    "ConfigError",
    "ExperimentConfig",
    "GridConfig",
    "GridRun",
    "GridStatus",
    "agent_path",
    "cell_path",
    "check_cell_file",
    "failure_path",
    "load_config",
    "load_output_config",
    "load_python_agent_class",
    "params_id",
    "parse_config",
    "parse_shard",
    "run_cell",
    "run_grid",
    "select_shard",
    "stale_temp_files",
    "status",
]
