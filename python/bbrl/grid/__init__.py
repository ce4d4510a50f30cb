"""Benchmark grids: a TOML configuration of experiments and agent parameter grids, expanded into
cells (experiment x agent x parameters) that a resumable runner turns into one Parquet file each.

One job per module: :mod:`~bbrl.grid.config` (the TOML file parsed and validated),
:mod:`~bbrl.grid.model` (experiments, cells, the parsed grid), :mod:`~bbrl.grid.ids` (cell ids),
:mod:`~bbrl.grid.classes` (loading Python agents' classes), :mod:`~bbrl.grid.shards` (sharding),
:mod:`~bbrl.grid.shipped` (the shipped configurations), :mod:`~bbrl.grid.store` (the output folder:
cell files, failure records, trained-agent cache, status), :mod:`~bbrl.grid.claims` (claims and
locks), :mod:`~bbrl.grid.plan` (cost planning), :mod:`~bbrl.grid.runner` (running the cells),
:mod:`~bbrl.grid.race` (running them as a race, :func:`run_raced_grid`; the rule and its
:class:`~bbrl.analysis.racing.RaceOptions` are :mod:`bbrl.analysis.racing`),
:mod:`~bbrl.grid.display` (progress) and :mod:`~bbrl.grid.engines` (Dask, SLURM).
See :mod:`bbrl.grid.config` for the configuration format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..protocol.results import CellFileError, check_cell_file
    from .classes import load_python_agent_class
    from .config import ConfigError, load_config, parse_config
    from .ids import params_id
    from .model import Cell, ExperimentConfig, GridConfig
    from .race import race_state, run_raced_grid
    from .runner import GridRun, run_cell, run_grid
    from .shards import parse_shard, select_shard
    from .shipped import SHIPPED_CONFIGS, config_path, shipped_config
    from .store import (
        GridStatus,
        agent_path,
        cell_path,
        failure_path,
        load_output_config,
        missing_by_experiment,
        stale_temp_files,
        status,
    )
else:
    from ..lazy import attach as _attach

    # Imported on first use (bbrl.lazy), so that importing the package does not import polars.
    __getattr__, __dir__ = _attach(
        __name__,
        attributes={
            "CellFileError": "..protocol.results",
            "check_cell_file": "..protocol.results",
            "load_python_agent_class": ".classes",
            "ConfigError": ".config",
            "load_config": ".config",
            "parse_config": ".config",
            "params_id": ".ids",
            "Cell": ".model",
            "ExperimentConfig": ".model",
            "GridConfig": ".model",
            "race_state": ".race",
            "run_raced_grid": ".race",
            "GridRun": ".runner",
            "run_cell": ".runner",
            "run_grid": ".runner",
            "parse_shard": ".shards",
            "select_shard": ".shards",
            "SHIPPED_CONFIGS": ".shipped",
            "config_path": ".shipped",
            "shipped_config": ".shipped",
            "GridStatus": ".store",
            "agent_path": ".store",
            "cell_path": ".store",
            "failure_path": ".store",
            "load_output_config": ".store",
            "missing_by_experiment": ".store",
            "stale_temp_files": ".store",
            "status": ".store",
        },
    )

__all__ = [
    "SHIPPED_CONFIGS",
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
    "config_path",
    "failure_path",
    "load_config",
    "load_output_config",
    "load_python_agent_class",
    "missing_by_experiment",
    "params_id",
    "parse_config",
    "parse_shard",
    "race_state",
    "run_cell",
    "run_grid",
    "run_raced_grid",
    "select_shard",
    "shipped_config",
    "stale_temp_files",
    "status",
]
