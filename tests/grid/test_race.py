"""A raced grid (``bbrl grid run --race``): the cells that run to N are the full run's cells row for
row, a stopped cell holds the full run's first MDPs, the stops are those the race's simulation
makes on the full run, whatever the thread count, the number of runners or a killed runner."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console

from bbrl import distributions, grid
from bbrl.analysis import racing
from bbrl.analysis.cost import reference_calibration
from bbrl.analysis.racing import RaceOptions
from bbrl.grid.race import race_state, run_raced_grid
from bbrl.protocol import results
from bbrl.protocol.schema import RACE_STOPPED_BY, Col

OPTIONS = RaceOptions(batch=10)
#: The columns that do not depend on the machine, the load or the runner.
DETERMINISTIC = ["cell_id", "cell_index", "kind", "params", "details", "mdp", "return", "online_work", "offline_work"]


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, raced_grid_toml: str) -> grid.GridConfig:
    path = tmp_path_factory.mktemp("config") / "race.toml"
    path.write_text(raced_grid_toml)
    return grid.load_config(path)


@pytest.fixture(scope="module")
def full(config: grid.GridConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("full")
    grid.run_grid(config, out, threads=2, console=_quiet())
    return out


@pytest.fixture(scope="module")
def raced(config: grid.GridConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("raced")
    run_raced_grid(config, out, OPTIONS, threads=2, console=_quiet())
    return out


def _stops(out: Path, config: grid.GridConfig) -> dict[str, racing.Stop]:
    return race_state(out, config.experiments[0]).stops


def test_cells_run_to_n_are_the_full_runs_and_stopped_ones_its_first_mdps(config, full, raced):
    stops = _stops(raced, config)
    assert {s.split("/")[2] for s in stops} == {"bfs3", "softmax"}, stops
    for cell in config.cells:
        here = pl.read_parquet(grid.cell_path(raced, cell))
        there = pl.read_parquet(grid.cell_path(full, cell))
        n = stops[cell.id].n_mdps if cell.id in stops else cell.experiment.n_mdps
        assert here.height == n and here[Col.MDP].to_list() == list(range(n))
        assert here.select(DETERMINISTIC).equals(there.select(DETERMINISTIC).head(n)), cell.id
        assert (RACE_STOPPED_BY in here.columns) == (cell.id in stops)
        if cell.id in stops:
            assert here[RACE_STOPPED_BY][0].startswith(stops[cell.id].by)
    # Nothing left behind: the batches are joined into the cell files, no claim remains.
    assert not list((raced / "batches").rglob("*.parquet")) and not list(raced.rglob("*.claim"))
    state = grid.status(config, raced)
    assert len(state.done) == len(config.cells) and not state.broken


def test_the_stops_are_those_the_simulation_makes_on_the_full_run(config, full, raced):
    loaded = results.load(full)
    cells = loaded.cells.filter(pl.col(Col.KIND) != "optimal")
    contenders = racing.contenders_of(loaded, cells, reference_calibration())
    e = config.experiments[0]
    low, high = racing.return_range(distributions.get(e.test).rewards, e.gamma, e.horizon)
    simulated = racing.simulate_race(contenders, e.n_mdps, low, high, OPTIONS)
    assert {k: v for k, v in simulated.items() if v is not None} == _stops(raced, config)


def test_a_race_gives_the_same_results_on_one_thread_and_two(config, raced, tmp_path):
    one = tmp_path / "one"
    run_raced_grid(config, one, OPTIONS, threads=1, console=_quiet())
    assert (one / "race" / "GC" / "GC.json").read_bytes() == (raced / "race" / "GC" / "GC.json").read_bytes()
    for cell in config.cells:
        a = pl.read_parquet(grid.cell_path(one, cell)).select(DETERMINISTIC)
        assert a.equals(pl.read_parquet(grid.cell_path(raced, cell)).select(DETERMINISTIC)), cell.id


def _race_command(config_file: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bbrl", "grid", "run", str(config_file), "--out", str(out), "--race",
            "--race-batch", "10", "--threads", "1", *extra]  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process control as on Linux")
def test_two_runners_share_a_race_and_a_killed_one_loses_at_most_its_batch(config, raced, tmp_path):
    config_file = tmp_path / "race.toml"
    config_file.write_text(config.text)
    # Two runners on one folder: each takes unclaimed batches; the decisions are the same.
    shared = tmp_path / "shared"
    runners = [
        subprocess.Popen(_race_command(config_file, shared), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(2)
    ]
    outputs = [r.communicate(timeout=300)[0].decode(errors="replace") for r in runners]
    assert [r.returncode for r in runners] == [0, 0], outputs
    assert (shared / "race" / "GC" / "GC.json").read_bytes() == (raced / "race" / "GC" / "GC.json").read_bytes()
    assert not list((shared / "batches").rglob("*.parquet")), "a batch run again after its cell was joined"
    # A runner killed (SIGKILL) once it has written batches: the next run finishes the race.
    killed = tmp_path / "killed"
    victim = subprocess.Popen(_race_command(config_file, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and victim.poll() is None:
        if len(list((killed / "batches").rglob("*.parquet"))) >= 8 if (killed / "batches").is_dir() else False:
            os.kill(victim.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    assert victim.wait(timeout=60) == -signal.SIGKILL, "the race ended before the runner could be killed"
    resumed = subprocess.run(_race_command(config_file, killed), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (killed / "race" / "GC" / "GC.json").read_bytes() == (raced / "race" / "GC" / "GC.json").read_bytes()
    for cell in config.cells:
        a = pl.read_parquet(grid.cell_path(killed, cell)).select(DETERMINISTIC)
        assert a.equals(pl.read_parquet(grid.cell_path(raced, cell)).select(DETERMINISTIC)), cell.id


def test_a_race_refuses_other_settings_a_full_folder_and_shards(config, full, raced, tmp_path):
    with pytest.raises(ValueError, match=r"raced with other settings .*margin 1.0 there, 2.0 here"):
        run_raced_grid(config, raced, RaceOptions(batch=10, margin=2.0), console=_quiet())
    with pytest.raises(ValueError, match="cells of a run without --race"):
        run_raced_grid(config, full, OPTIONS, console=_quiet())
    config_file = tmp_path / "race.toml"
    config_file.write_text(config.text)
    done = subprocess.run(_race_command(config_file, tmp_path / "o", "--shard", "1/2"), capture_output=True, text=True)
    assert done.returncode == 2 and "not shards" in done.stderr, done.stderr
    done = subprocess.run(
        _race_command(config_file, tmp_path / "o", "--race-delta", "2"), capture_output=True, text=True
    )
    assert done.returncode == 2 and "delta must be in (0, 1)" in done.stderr, done.stderr


def test_the_race_record_names_each_stop_with_its_bounds(config, raced):
    document = json.loads((raced / "race" / "GC" / "GC.json").read_text())
    assert document["decided"] == 100
    for stop in document["stops"].values():
        assert stop["rule"] in racing.RULES and stop["n_mdps"] % 10 == 0 and stop["n_mdps"] >= racing.MIN_MDPS
        assert stop["upper"] < 0.0 or (stop["rule"] == "plateau" and stop["upper"] <= stop["margin"])
    settings = json.loads((raced / "race.json").read_text())
    assert settings == {
        **OPTIONS.settings(),
        "calibration": "reference",
        "bounds": "one-sided",
        "cost_order": "sequence",
    }
    assert np.isfinite([s["lower"] for s in document["stops"].values()]).all()


def test_a_race_of_an_earlier_rule_is_not_resumed_under_this_one(config, tmp_path):
    # A folder raced before the sequences became one-sided records no "bounds": resuming it would
    # decide its later rounds by another rule than its first ones.
    old = tmp_path / "old"
    old.mkdir()
    (old / "race.json").write_text(json.dumps({**OPTIONS.settings(), "calibration": "reference"}))
    with pytest.raises(ValueError, match=r"raced with other settings .*bounds None there, 'one-sided' here"):
        run_raced_grid(config, old, OPTIONS, threads=1, console=_quiet())
    # Nor one raced before the race confirmed its cost order with a sequence (no "cost_order").
    older = tmp_path / "older"
    older.mkdir()
    (older / "race.json").write_text(
        json.dumps({**OPTIONS.settings(), "calibration": "reference", "bounds": "one-sided"})
    )
    with pytest.raises(ValueError, match=r"raced with other settings .*cost_order None there, 'sequence' here"):
        run_raced_grid(config, older, OPTIONS, threads=1, console=_quiet())


def test_grid_status_tells_the_race(config, raced):
    done = subprocess.run(
        [sys.executable, "-m", "bbrl", "grid", "status", str(raced)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "raced (delta 0.05, margin 1.0, batch 10" in done.stdout
    assert "GC/GC: 100 of 100 MDPs decided, 2 configurations stopped" in done.stdout
    assert f"total: {len(config.cells)}/{len(config.cells)} cells done" in done.stdout


#: A Python agent whose 26th task in a process fails (the race runs a Python agent's batches in
#: its own process): it fails in its third batch, MDPs 20..29.
FRAGILE = """
from dataclasses import dataclass

from bbrl import agents

TASKS = [0]


@dataclass
class Fragile(agents.Agent):
    action: int = 0

    def start_task(self):
        TASKS[0] += 1
        if TASKS[0] > 25:
            raise RuntimeError("fragile: broke on its 26th task")

    def act(self, state, rng):
        return self.action

    def observe(self, state, action, reward, next_state):
        pass
"""


def test_a_cell_that_fails_drops_out_and_the_race_goes_on(config, raced, tmp_path):
    (tmp_path / "fragile.py").write_text(FRAGILE)
    config_file = tmp_path / "race.toml"
    config_file.write_text(config.text + '\n[[agent]]\nkind = "python"\nclass = "fragile.py:Fragile"\n')
    out = tmp_path / "out"
    done = subprocess.run(_race_command(config_file, out), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "failed: GC/GC/python-fragile" in done.stdout
        and "fragile: broke"
        in (out / "cells").joinpath("GC", "GC", "python-fragile", "action=0.failed.json").read_text()
    )
    # The others raced as without it: the same stops, the same rows.
    assert (out / "race" / "GC" / "GC.json").read_bytes() == (raced / "race" / "GC" / "GC.json").read_bytes()
    for cell in config.cells:
        a = pl.read_parquet(grid.cell_path(out, cell)).select(DETERMINISTIC)
        assert a.equals(pl.read_parquet(grid.cell_path(raced, cell)).select(DETERMINISTIC)), cell.id
    # Its batches are kept for a retry: the next run (agent fixed) catches it up to N and joins it.
    kept = sorted(p.name for p in (out / "batches").rglob("*.parquet"))
    assert kept == ["0000000-0000010.parquet", "0000010-0000020.parquet"], kept
    (tmp_path / "fragile.py").write_text(FRAGILE.replace("> 25", "> 10**9"))
    again = subprocess.run(_race_command(config_file, out), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    fixed = pl.read_parquet(out / "cells" / "GC" / "GC" / "python-fragile" / "action=0.parquet")
    assert fixed["mdp"].to_list() == list(range(100)) and RACE_STOPPED_BY not in fixed.columns
    assert not list((out / "batches").rglob("*.parquet")) and not list(out.rglob("*.failed.json"))


def test_a_batch_removed_while_it_is_read_reads_as_missing(raced, tmp_path, monkeypatch):
    # Another runner may join a cell and remove its batches between a runner's look and its read
    # (seen once in ten runs of two runners on a loaded machine: the runner stopped with the error).
    from bbrl.grid import race

    path = tmp_path / "batch.parquet"
    pl.read_parquet(next((raced / "cells").rglob("*.parquet"))).head(10).write_parquet(path)
    read = pl.read_parquet

    def removed_then_read(p, *args, **kwargs):
        Path(p).unlink(missing_ok=True)
        return read(p, *args, **kwargs)

    monkeypatch.setattr(pl, "read_parquet", removed_then_read)
    assert race.read_rows(path, 0, 10) is None
