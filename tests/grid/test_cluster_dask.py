"""The grid on a real Dask cluster on loopback: a `dask scheduler` and two `dask worker` processes,
one of them killed with SIGKILL in the middle of a cell. The grid completes, every cell is written
exactly once, and the results are those of a local run (the returns bit for bit)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console

import bbrl
from bbrl import agents, distributions, grid

distributed = pytest.importorskip("distributed", reason="the cluster extra (dask[distributed]) is not installed")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process control as on Linux")

STUBBORN = """
from dataclasses import dataclass
from bbrl import agents

@dataclass
class Stubborn(agents.Agent):
    action: int = 0

    def start_task(self):
        pass

    def act(self, state, rng):
        return self.action

    def observe(self, state, action, reward, next_state):
        pass
"""

GRID = """\
[defaults]
n_mdps = 60
horizon = 250

[[experiment]]
name = "Grid"
test = "Grid"
prior = "UGrid"

[[agent]]
kind = "bamcp"
k = [20, 21, 22, 23, 24, 25, 26, 27]
depth = 15

[[agent]]
kind = "python"
class = "stubborn_agent.py:Stubborn"
action = [0, 1]
"""

#: Every deterministic column of a cell file (the timings differ from run to run by nature).
DETERMINISTIC = ["cell_id", "cell_index", "experiment", "prior", "agent", "kind", "params", "details", "mdp", "return"]


def _dask(*args: str) -> list[str]:
    exe = Path(sys.executable).parent / "dask"
    return [str(exe), *args] if exe.is_file() else [sys.executable, "-m", "dask", *args]


def _bbrl() -> list[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Path, list[subprocess.Popen[bytes]]]]:
    """A scheduler on 127.0.0.1 (its address in a scheduler file) and two single-thread workers
    without nannies (so that a killed worker stays dead); every process is killed at the end."""
    scheduler_file = tmp_path / "scheduler.json"
    logs = tmp_path / "logs"
    logs.mkdir()
    processes: list[subprocess.Popen[bytes]] = []
    files = contextlib.ExitStack()
    log = {name: files.enter_context((logs / f"{name}.log").open("wb")) for name in ("scheduler", "w0", "w1")}
    try:
        processes.append(
            subprocess.Popen(
                _dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                      "--scheduler-file", str(scheduler_file)),
                stdout=log["scheduler"], stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not scheduler_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert scheduler_file.is_file(), (logs / "scheduler.log").read_text()
        for i in range(2):
            processes.append(
                subprocess.Popen(
                    _dask("worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1", "--no-nanny",
                          "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "60", "--name", f"w{i}"),
                    stdout=log[f"w{i}"], stderr=subprocess.STDOUT,
                )
            )  # fmt: skip
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield scheduler_file, processes[1:]
    finally:
        for process in reversed(processes):
            _stop(process)
        files.close()


def test_a_grid_on_dask_survives_a_killed_worker_with_every_cell_once(
    tmp_path: Path, cluster: tuple[Path, list[subprocess.Popen[bytes]]]
) -> None:
    scheduler_file, workers = cluster
    (tmp_path / "stubborn_agent.py").write_text(STUBBORN)
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID)
    config = grid.load_config(config_file)
    out = tmp_path / "dask-out"
    driver = subprocess.Popen(
        [*_bbrl(), "grid", "run", str(config_file), "--out", str(out), "--scheduler", str(scheduler_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    victim = workers[0]
    killed_cell = None
    try:
        # Kill the first worker while it holds a claim (in the middle of computing that cell).
        deadline = time.monotonic() + 240
        while killed_cell is None and time.monotonic() < deadline and driver.poll() is None:
            for claim in (out / "cells").rglob("*.claim") if (out / "cells").is_dir() else []:
                try:
                    holder = json.loads(claim.read_text())
                except (OSError, ValueError):
                    continue
                if holder["pid"] == victim.pid:
                    os.kill(victim.pid, signal.SIGKILL)
                    killed_cell = claim
                    break
            time.sleep(0.01)
        output = driver.communicate(timeout=300)[0].decode(errors="replace")
    finally:
        _stop(driver)
    assert killed_cell is not None, "the worker to kill never held a claim"
    assert victim.wait(timeout=30) == -signal.SIGKILL
    assert driver.returncode == 0, output
    assert workers[1].poll() is None  # the other worker carried on
    # Every cell once, nothing left behind: no claims, no temporary files, no failure records.
    files = sorted((out / "cells").rglob("*.parquet"))
    assert len(files) == len(config.cells) == len({grid.cell_path(out, c) for c in config.cells})
    # The killed worker may have died while writing a file: its temporary file must be one that
    # the store knows to be stale (removed by the next run), never a live one.
    from bbrl.grid.store import stale_temp_files

    assert not list(out.rglob("*.claim")) and not list(out.rglob("*.failed.json"))
    assert set(out.rglob("*.tmp")) <= set(stale_temp_files(out))
    # The same results as a local run: every deterministic column equal, the returns bit for bit.
    local = tmp_path / "local-out"
    assert len(grid.run_grid(config, local, threads=1, console=Console(file=io.StringIO())).ran) == len(config.cells)
    for cell in config.cells:
        on_dask = pl.read_parquet(grid.cell_path(out, cell))
        here = pl.read_parquet(grid.cell_path(local, cell))
        assert on_dask.select(DETERMINISTIC).equals(here.select(DETERMINISTIC)), cell.id
        assert on_dask["return"].to_numpy().tobytes() == here["return"].to_numpy().tobytes()
    assert np.all(grid.status(config, out).total == len(config.cells))


def test_a_worker_that_cannot_see_a_python_agent_file_says_what_to_do(tmp_path: Path) -> None:
    from bbrl.grid.engines.dask_engine import worker_task

    (tmp_path / "stubborn_agent.py").write_text(STUBBORN)
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID)
    config = grid.load_config(config_file)
    elsewhere = tmp_path / "not-shared"
    elsewhere.mkdir()
    text = GRID.replace("stubborn_agent.py", "stubborn_agent_elsewhere.py")
    with pytest.raises(
        ValueError, match=r"cannot read the grid's configuration: .*stubborn_agent_elsewhere\.py.*shared"
    ):
        worker_task(text, str(elsewhere), str(tmp_path / "out"), 8, config.cells[8].id, 1)
    # A worker that expands the grid differently (another bbrl version) is refused by id.
    with pytest.raises(ValueError, match="same bbrl version"):
        worker_task(GRID, str(tmp_path), str(tmp_path / "out"), 0, "Grid/UGrid/bamcp/k=99,depth=15", 1)


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID.split('[[agent]]\nkind = "python"')[0])
    started = time.monotonic()
    done = subprocess.run(
        [*_bbrl(), "grid", "run", str(config_file), "--out", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "cannot reach the Dask scheduler" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 90


@dataclass
class RandomInPython(agents.Agent):
    """A Python agent whose actions are draws of its stream: any change of order or stream shows."""

    def start_task(self):
        pass

    def act(self, state, rng):
        return int(rng.integers(self.n_actions))

    def observe(self, state, action, reward, next_state):
        pass


def test_a_python_agent_in_a_daemonic_process_runs_its_mdps_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Dask worker under a nanny (and any pool's worker) is a daemonic process, which
    # multiprocessing forbids to start processes: asking for 2 worker processes there runs the
    # MDPs in the process itself, with the results of a local run.
    import multiprocessing

    experiment = bbrl.Experiment(distributions.generalized_chain(), n_mdps=8, gamma=0.95, horizon=30, seed=3)
    here = experiment.run(RandomInPython(), threads=1)
    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", True)
    there = experiment.run(RandomInPython(), threads=2)
    assert there.returns.tobytes() == here.returns.tobytes()
    assert there.threads == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_documented_example_runs_a_python_agent_on_nanny_workers(tmp_path: Path) -> None:
    # docs/cluster-dask.md's example, as written: nanny workers (daemonic processes) run a grid
    # with a Python agent; only the port is a free one (tests may run side by side).
    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs" / "cluster-dask.md").read_text()
    section = doc.split("## A complete example on one machine", 1)[1]
    block = section.split("```bash\n", 1)[1].split("\n```", 1)[0]
    assert "--nworkers 2" in block and "--no-nanny" not in block
    (tmp_path / "examples").mkdir()
    shutil.copy(repo / "examples" / "my_agent.py", tmp_path / "examples" / "my_agent.py")
    script = "set -e\n" + block.replace("8786", str(_free_port())) + "\n"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log_path = tmp_path / "example.log"
    with log_path.open("wb") as log:
        # Its own process group: the block's scheduler and workers run in the background, and the
        # whole group is ended at the end.
        shell = subprocess.Popen(
            ["bash", "-c", script], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = shell.wait(timeout=180)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGKILL)
            shell.wait(timeout=30)
    output = log_path.read_text(errors="replace")
    assert code == 0, output
    config = grid.load_config(tmp_path / "small.toml")
    assert any(cell.kind.startswith("python") for cell in config.cells)
    out, local = tmp_path / "results", tmp_path / "local"
    assert not list(out.rglob("*.failed.json")) and not list(out.rglob("*.claim"))
    assert len(grid.run_grid(config, local, threads=1, console=Console(file=io.StringIO())).ran) == len(config.cells)
    for cell in config.cells:
        on_dask = pl.read_parquet(grid.cell_path(out, cell))
        here = pl.read_parquet(grid.cell_path(local, cell))
        assert on_dask.select(DETERMINISTIC).equals(here.select(DETERMINISTIC)), cell.id
        assert on_dask["return"].to_numpy().tobytes() == here["return"].to_numpy().tobytes()


def test_a_race_on_dask_makes_the_local_races_stops_and_results(
    tmp_path: Path, cluster: tuple[Path, list[subprocess.Popen[bytes]]], raced_grid_toml: str
) -> None:
    scheduler_file, _ = cluster
    config_file = tmp_path / "race.toml"
    config_file.write_text(raced_grid_toml)
    config = grid.load_config(config_file)
    out = tmp_path / "dask-race"
    race = ["--race", "--race-batch", "10"]
    done = subprocess.run(
        [*_bbrl(), "grid", "run", str(config_file), "--out", str(out), "--scheduler", str(scheduler_file), *race],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    from bbrl.analysis.racing import RaceOptions
    from bbrl.grid.race import run_raced_grid

    local = tmp_path / "local-race"
    run_raced_grid(config, local, RaceOptions(batch=10), threads=1, console=Console(file=io.StringIO()))
    state = (local / "race" / "GC" / "GC.json").read_text()
    assert (out / "race" / "GC" / "GC.json").read_text() == state and '"rule"' in state
    assert not list((out / "batches").rglob("*.parquet")), "a batch run again after its cell was joined"
    for cell in config.cells:
        on_dask = pl.read_parquet(grid.cell_path(out, cell))
        here = pl.read_parquet(grid.cell_path(local, cell))
        assert on_dask.select(DETERMINISTIC).equals(here.select(DETERMINISTIC)), cell.id
