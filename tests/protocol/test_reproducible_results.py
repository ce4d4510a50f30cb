"""What two runs of the same grid share: bit-identical scores on any thread count, offline times of
zero by declaration, and the machine and thread count recorded in every result file."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import polars as pl
from rich.console import Console

import bbrl
from bbrl import agents, grid
from bbrl.protocol import results, schema

GRID = """\
[defaults]
n_mdps = 16
horizon = 40
seed = 7

[[experiment]]
name = "GDL"
test = "GDL"
prior = "UGDL"

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 0.3]

[[agent]]
kind = "bamcp"
k = 5
depth = 5

[[agent]]
kind = "oppsds"
formula_set = 2
n_draws = 20
"""


def _run(out: Path, threads: int) -> results.Results:
    grid.run_grid(grid.parse_config(GRID), out, threads=threads, console=Console(file=io.StringIO()))
    return results.load(out)


def test_two_runs_share_every_score_and_declared_time(tmp_path: Path) -> None:
    one = _run(tmp_path / "one", threads=1)
    two = _run(tmp_path / "two", threads=2)
    a = one.returns.sort("cell_index", "mdp")
    b = two.returns.sort("cell_index", "mdp")
    assert np.array_equal(a["return"].to_numpy(), b["return"].to_numpy())  # bit-identical
    for loaded, threads in ((one, 1), (two, 2)):
        cells = loaded.cells
        assert cells["threads"].to_list() == [threads] * cells.height
        learners = cells.filter(pl.col("kind") == "oppsds")
        others = cells.filter(pl.col("kind") != "oppsds")
        # Declared, not measured: exactly zero, wall and CPU.
        assert others["offline_seconds"].to_list() == [0.0] * others.height
        assert others["offline_cpu_seconds"].to_list() == [0.0] * others.height
        assert learners["offline_seconds"][0] > 0.0 and learners["offline_cpu_seconds"][0] >= 0.0
        assert (cells["time_basis"] == "cpu").all()
        host = schema.describe_host()
        assert cells["host_cpu"].to_list() == [host["cpu_model"]] * cells.height
        assert cells["host_logical_cores"].to_list() == [host["logical_cores"]] * cells.height
        assert cells["host_vector_extensions"].to_list() == [" ".join(host["vector_extensions"])] * cells.height
        cpu = loaded.returns["online_cpu_seconds"].to_numpy()
        assert np.all(np.isfinite(cpu)) and np.all(cpu >= 0.0)
        # A cell's row carries no single MDP's value of a per-MDP column (it kept the first MDP's
        # CPU time), only the summaries.
        assert not set(schema.PER_MDP_COLUMNS) & set(cells.columns)
        assert "online_cpu_seconds_per_trajectory" in cells.columns


def test_the_host_line_names_the_machine_and_the_solvers_vector_path() -> None:
    host = schema.describe_host()
    assert host["vector_path"] in ("scalar", "neon", "avx2", "avx512")
    line = schema.host_line(host)
    assert line.startswith("machine: ") and host["cpu_model"] in line
    assert f"solvers on the {host['vector_path']} path" in line
    # Given a host dict, the line is made from it alone.
    fake = {"cpu_model": "Test CPU", "logical_cores": 3, "vector_extensions": [], "vector_path": "scalar"}
    assert schema.host_line(fake).startswith("machine: Test CPU, 3 logical CPUs, vector extensions none detected")


def test_a_run_and_its_frame_share_the_grid_schema() -> None:
    run = bbrl.Experiment("GC", n_mdps=5, horizon=10).run(agents.EGreedy(0.1), threads=1)
    frame = run.to_polars()
    assert tuple(frame.columns) == schema.RUN_COLUMNS
    assert set(schema.RUN_COLUMNS) <= set(schema.CELL_COLUMNS)
    assert dict(frame.schema) == {c: schema.SCHEMA[c] for c in schema.RUN_COLUMNS}
    assert run.offline_seconds == 0.0 and run.offline_cpu_seconds == 0.0
    assert frame["threads"].to_list() == [1] * 5


def test_a_python_agent_declares_that_it_learns_nothing_offline() -> None:
    from dataclasses import dataclass

    @dataclass
    class Keeps(agents.Agent):
        learns_offline = False

        def learn_offline(self, prior, gamma, horizon, rng):  # type: ignore[no-untyped-def]
            super().learn_offline(prior, gamma, horizon, rng)

        def act(self, state: int, rng: object) -> int:
            return 0

    @dataclass
    class Learns(Keeps):
        learns_offline = True

    assert Keeps().train("GC").offline_seconds == 0.0 and Keeps().train("GC").offline_cpu_seconds == 0.0
    assert Learns().train("GC").offline_seconds > 0.0
