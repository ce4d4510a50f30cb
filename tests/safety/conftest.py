"""Valid files of every kind bbrl reads, built once per session from tiny experiments: the fuzz
tests damage copies of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _fuzz import TINY_GRID
from rich.console import Console

from bbrl import grid
from bbrl.analysis.racing import RaceOptions


@pytest.fixture(scope="session")
def tiny_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "tiny.toml"
    path.write_text(TINY_GRID)
    return path


@pytest.fixture(scope="session")
def grid_folder(tiny_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished results folder of the tiny grid, with a plan, a claim, a failure record and the
    files of a SLURM submission beside its cells."""
    out = tmp_path_factory.mktemp("grid") / "out"
    config = grid.load_config(tiny_config)
    grid.run_grid(config, out, threads=1, console=Console(quiet=True))
    cells = config.cells
    seconds = {c.id: 0.5 + c.index for c in cells}
    plan = {"cells": seconds, "offline_cells": {c.id: 0.1 for c in cells}, "pilot_seconds": 1.0}
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    claim = grid.cell_path(out, cells[0]).with_suffix(".claim")
    claim.write_text(json.dumps({"host": "elsewhere", "pid": 12, "token": "abc"}))
    failure = grid.failure_path(out, cells[1])
    failure.parent.mkdir(parents=True, exist_ok=True)
    failure.write_text(json.dumps({"cell_id": cells[1].id, "error": "ValueError: boom", "traceback": "..."}))
    slurm = out / "slurm"
    slurm.mkdir()
    (slurm / "tasks.json").write_text(json.dumps([[c.id for c in cells[:2]], [cells[2].id]]))
    (slurm / "jobs.json").write_text(json.dumps([{"job": "101", "tasks": [0, 1]}]))
    (slurm / "options.json").write_text(json.dumps({"time": "1:00:00", "cpus_per_task": 1, "max_resubmits": 3}))
    return out


@pytest.fixture(scope="session")
def race_folder(tiny_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A raced results folder of the tiny grid (batches of 2), whose race record holds one stop."""
    out = tmp_path_factory.mktemp("race") / "out"
    config = grid.load_config(tiny_config)
    grid.run_raced_grid(config, out, RaceOptions(batch=2), threads=1, console=Console(quiet=True))
    first, second = config.cells[1], config.cells[0]
    stop = {"cell_id": first.id, "by": second.id, "n_mdps": 2, "rule": "beaten", "lower": -3.0, "upper": -1.0}
    state = next((out / "race").rglob("*.json"))
    state.write_text(json.dumps({"decided": 4, "stops": {first.id: {**stop, "margin": 0.0}}}, indent=1))
    return out
