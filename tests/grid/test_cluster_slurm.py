"""SLURM job arrays: the packing of cells into tasks, the generated script, resubmission of the
tasks a timeout or a kill left unfinished (against a stand-in sbatch and squeue that record what
they are asked), and the whole path on a real single-node SLURM started by
scripts/slurm-single-node.sh (skipped, with the reason, where it cannot run; BBRL_REQUIRE_SLURM=1
turns the skip into a failure)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from bbrl import grid
from bbrl.grid.engines.slurm import SlurmOptions, job_script, pack, parse_time

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process control as on Linux")

GRID = """\
[defaults]
n_mdps = 30
horizon = 200

[[experiment]]
name = "Grid"
test = "Grid"
prior = "UGrid"

[[agent]]
kind = "bamcp"
k = [20, 21, 22, 23, 24, 25]
depth = 15
"""

DETERMINISTIC = ["cell_id", "cell_index", "params", "details", "mdp", "return"]


def _bbrl() -> list[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 1800), ("5:30", 330), ("01:02:03", 3723), ("2-0", 172800), ("1-02:03", 93780), ("1-00:00:10", 86410)],
)
def test_slurm_time_formats(text: str, seconds: int) -> None:
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["", "1h", "0", "1:2:3:4", "-5"])
def test_bad_slurm_times_are_named(text: str) -> None:
    with pytest.raises(ValueError, match="--time"):
        parse_time(text)


@settings(max_examples=60, deadline=None)
@given(
    costs=st.lists(st.floats(min_value=0.01, max_value=100.0), min_size=1, max_size=40),
    capacity=st.floats(min_value=1.0, max_value=200.0),
)
def test_packing_puts_every_cell_in_one_task_within_capacity(costs: list[float], capacity: float) -> None:
    config = grid.parse_config(GRID.replace("k = [20, 21, 22, 23, 24, 25]", f"k = {list(range(1, len(costs) + 1))}"))
    seconds = {c.id: cost for c, cost in zip(config.cells, costs, strict=True)}
    tasks = pack(list(config.cells), seconds, capacity)
    ids = [c.id for task in tasks for c in task]
    assert sorted(ids) == sorted(seconds)  # every cell exactly once
    # A task exceeds the capacity only when one of its cells alone does (the longest-first
    # makespan is then the longest cell; LPT's bound is within 4/3 of optimal otherwise).
    longest = max(costs)
    for task in tasks:
        load = sum(seconds[c.id] for c in task)
        assert load <= max(capacity, longest) * (1 + 1e-9) or len(task) == 1
    # No fewer tasks than the total work needs.
    assert len(tasks) >= min(len(costs), int(sum(costs) / capacity - 1e-9) + (sum(costs) % capacity > 1e-9))


def test_the_job_script_asks_for_what_was_given(tmp_path: Path) -> None:
    options = SlurmOptions(partition="cpu", time="02:00:00", mem="3G", cpus_per_task=4, max_parallel=7)
    script = job_script(tmp_path / "out dir", 12, options, python="/opt/py/bin/python")
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    for expected in ("--array=0-11%7", "--cpus-per-task=4", "--time=02:00:00", "--partition=cpu", "--mem=3G",
                     "--requeue"):  # fmt: skip
        assert f"#SBATCH {expected}" in lines, expected
    assert lines[-1] == f"exec /opt/py/bin/python -m bbrl grid task '{tmp_path / 'out dir'}' \"$SLURM_ARRAY_TASK_ID\""


FAKE_SBATCH = """#!/usr/bin/env bash
# Stand-in for sbatch: records its arguments, answers the next job id.
echo "$@" >> "$FAKE_SLURM/sbatch.log"
n=$(( $(cat "$FAKE_SLURM/next" 2>/dev/null || echo 100) + 1 ))
echo $n > "$FAKE_SLURM/next"
echo "$n;cluster"
"""

FAKE_SQUEUE = """#!/usr/bin/env bash
# Stand-in for squeue: what the test says SLURM still has ("JOB_TASK STATE" lines).
echo "$@" >> "$FAKE_SLURM/squeue.log"
cat "$FAKE_SLURM/queue" 2>/dev/null || true
"""


def _fake_slurm(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "fake-slurm"
    folder.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("squeue", FAKE_SQUEUE)):
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "FAKE_SLURM": str(folder)}


def _run(command: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def test_submission_and_resubmission_of_unfinished_tasks_with_a_stand_in_slurm(tmp_path: Path) -> None:
    env = _fake_slurm(tmp_path)
    fake = Path(env["FAKE_SLURM"])
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID)
    config = grid.load_config(config_file)
    out = tmp_path / "out"
    # Without a cost plan in the folder: one task per cell, longest first.
    submitted = _run([*_bbrl(), "grid", "submit", str(config_file), "--out", str(out), "--time", "1",
                      "--partition", "debug", "--max-parallel", "2"], env)  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    assert "submitted job 101" in submitted.stdout
    tasks = json.loads((out / "slurm" / "tasks.json").read_text())
    assert sorted(i for t in tasks for i in t) == sorted(c.id for c in config.cells) and len(tasks) == 6
    assert (fake / "sbatch.log").read_text().split() == ["--parsable", str(out.resolve() / "slurm" / "job.sh")]
    script = (out / "slurm" / "job.sh").read_text()
    assert "--array=0-5%2" in script and "--partition=debug" in script and "--time=1" in script
    # Tasks 1 to 4 run to the end; task 0 is killed (SIGKILL, as a lost node) in the middle of its
    # cell, leaving its claim; task 5 never starts (it timed out waiting, or is still pending).
    task_env = {**env, "SLURM_CPUS_PER_TASK": "1"}
    for index in range(1, 5):
        done = _run([*_bbrl(), "grid", "task", str(out), str(index)], task_env)
        assert done.returncode == 0, done.stderr
        assert "ran" in done.stdout
    victim = subprocess.Popen([*_bbrl(), "grid", "task", str(out), "0"], env=task_env, stdout=subprocess.DEVNULL)
    cell = next(c for c in config.cells if c.id == tasks[0][0])
    claim = grid.store.claim_path(out, cell)
    deadline = time.monotonic() + 120
    while not claim.exists() and time.monotonic() < deadline and victim.poll() is None:
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert claim.exists() and not grid.cell_path(out, cell).exists(), "the task finished before the kill"
    # SLURM still has task 5 (pending): only task 0 is resubmitted.
    (fake / "queue").write_text("101_5 PENDING\n101_1 COMPLETED\n")
    again = _run([*_bbrl(), "grid", "submit", str(config_file), "--out", str(out)], env)
    assert again.returncode == 0, again.stderr
    assert (fake / "sbatch.log").read_text().splitlines()[-1].split()[:2] == ["--parsable", "--array=0"]
    assert "-r -j 101 " in (fake / "squeue.log").read_text()
    # Task 5's job ended without running it: now it is resubmitted too (and 0 is queued again).
    (fake / "queue").write_text("102_0 RUNNING\n")
    again = _run([*_bbrl(), "grid", "submit", str(config_file), "--out", str(out)], env)
    assert (fake / "sbatch.log").read_text().splitlines()[-1].split()[:2] == ["--parsable", "--array=5"]
    # Whether or not the kill landed mid-write, a dead writer's temporary file is there to clear.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname().replace(".", "-")
    planted = out / "agents" / f".planted.json.w-{host}-{dead.pid}-abc.tmp"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(b"half")
    for index in (0, 5):  # the resubmitted tasks run; task 0 takes over its dead runner's claim
        done = _run([*_bbrl(), "grid", "task", str(out), str(index)], task_env)
        assert done.returncode == 0 and "ran" in done.stdout, done.stdout + done.stderr
    (fake / "queue").write_text("")
    final = _run([*_bbrl(), "grid", "submit", str(config_file), "--out", str(out)], env)
    assert final.returncode == 0 and len((fake / "sbatch.log").read_text().splitlines()) == 3
    status = _run([*_bbrl(), "grid", "status", str(out)], env)
    assert f"total: {len(config.cells)}/{len(config.cells)} cells done" in status.stdout, status.stdout
    assert "bamcp #0: 6 / 0 / 0 / 0" in status.stdout
    # Task 0 cleared the temporary files of dead writers, the killed task's included.
    assert not list(out.rglob("*.claim")) and not list(out.rglob("*.tmp"))
    local = tmp_path / "local"
    grid.run_grid(config, local, threads=1, console=_quiet())
    for cell in config.cells:
        a, b = pl.read_parquet(grid.cell_path(out, cell)), pl.read_parquet(grid.cell_path(local, cell))
        assert a.select(DETERMINISTIC).equals(b.select(DETERMINISTIC)), cell.id


def test_resubmissions_stop_after_the_limit(tmp_path: Path) -> None:
    env = _fake_slurm(tmp_path)
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID.replace("k = [20, 21, 22, 23, 24, 25]", "k = 20"))
    out = tmp_path / "out"
    command = [*_bbrl(), "grid", "submit", str(config_file), "--out", str(out), "--max-resubmits", "2"]
    for _ in range(5):  # the task never runs: submitted once, resubmitted twice, then no more
        assert _run(command, env).returncode == 0
    assert len((Path(env["FAKE_SLURM"]) / "sbatch.log").read_text().splitlines()) == 3


# ---- A real single-node SLURM -------------------------------------------------------------------


def _slurm_up() -> str | None:
    """``None`` when SLURM answers here (after starting it with the setup script if we may), else why not."""

    def answers() -> bool:
        try:
            return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=20).returncode == 0
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return False

    if answers():
        return None
    setup = Path(__file__).resolve().parents[2] / "scripts" / "slurm-single-node.sh"
    if os.environ.get("BBRL_SLURM_SETUP", "1") == "0" or not setup.is_file():
        return "SLURM is not running and the setup script is disabled or absent"
    started = subprocess.run(["bash", str(setup)], capture_output=True, text=True, timeout=600)
    if started.returncode != 0 or not answers():
        return (
            f"scripts/slurm-single-node.sh could not start SLURM: {(started.stderr or started.stdout).strip()[-300:]}"
        )
    return None


@pytest.fixture(scope="module")
def real_slurm() -> None:
    reason = _slurm_up()
    if reason is not None:
        if os.environ.get("BBRL_REQUIRE_SLURM") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


def _squeue_jobs(out: Path) -> list[str]:
    jobs = json.loads((out / "slurm" / "jobs.json").read_text())
    listed = subprocess.run(
        ["squeue", "-h", "-r", "-j", ",".join(j["job"] for j in jobs), "-o", "%i"], capture_output=True, text=True
    )
    return listed.stdout.split()


def test_a_grid_on_a_real_slurm_with_a_cancelled_task_resubmitted(tmp_path: Path, real_slurm: None) -> None:
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID.replace("k = [20, 21, 22, 23, 24, 25]", "k = [20, 21, 22]"))
    config = grid.load_config(config_file)
    out = tmp_path / "out"
    submitted = subprocess.run(
        [*_bbrl(), "grid", "submit", str(config_file), "--out", str(out), "--time", "10", "--max-parallel", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    job = json.loads((out / "slurm" / "jobs.json").read_text())[0]["job"]
    try:
        # One task at a time (%1): cancel the last one while it waits, as a preemption without requeue.
        cancelled = subprocess.run(["scancel", f"{job}_2"], capture_output=True, text=True, timeout=60)
        assert cancelled.returncode == 0, cancelled.stderr
        watched = subprocess.run(
            [*_bbrl(), "grid", "submit", str(config_file), "--out", str(out), "--watch", "--poll", "1"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert watched.returncode == 0, watched.stdout + watched.stderr
        assert "resubmitted tasks [2]" in watched.stdout, watched.stdout
    finally:
        for listed in _squeue_jobs(out):
            subprocess.run(["scancel", listed.split("_")[0]], capture_output=True, timeout=60)
    assert grid.status(config, out).total == len(grid.status(config, out).done) == len(config.cells)
    logs = sorted((out / "slurm" / "logs").glob("*.out"))
    assert logs and all("done" in log.read_text() or "ran" in log.read_text() for log in logs)
    local = tmp_path / "local"
    grid.run_grid(config, local, threads=1, console=_quiet())
    for cell in config.cells:
        a, b = pl.read_parquet(grid.cell_path(out, cell)), pl.read_parquet(grid.cell_path(local, cell))
        assert a.select(DETERMINISTIC).equals(b.select(DETERMINISTIC)), cell.id


def test_submit_dry_run_prints_the_script_and_the_array_size_and_submits_nothing(tmp_path: Path) -> None:
    env = _fake_slurm(tmp_path)
    fake = Path(env["FAKE_SLURM"])
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID)
    out = tmp_path / "out"
    command = [*_bbrl(), "grid", "submit", str(config_file), "--out", str(out), "--max-parallel", "2", "--dry-run"]
    dry = _run(command, env)
    assert dry.returncode == 0, dry.stderr
    assert "dry run: 6 cells in 6 array tasks (--array=0-5%2)" in dry.stdout, dry.stdout
    assert "Nothing was written or submitted." in dry.stdout
    script = dry.stdout[dry.stdout.index("#!/bin/bash") :]
    # The job runs the interpreter of the `bbrl` command (its environment's python or python3).
    interpreter = script.split("\nexec ", 1)[1].split(" -m bbrl ", 1)[0]
    assert Path(interpreter).parent == Path(sys.executable).parent, interpreter
    assert script == job_script(out.resolve(), 6, SlurmOptions(max_parallel=2), python=interpreter), script
    assert not (fake / "sbatch.log").exists() and not out.exists()
    assert _run([*command, "--watch"], env).returncode == 2  # nothing to watch
    # After a real submission, a dry run says what the command would do instead.
    assert _run(command[:-1], env).returncode == 0
    again = _run(command, env)
    assert again.returncode == 0 and "was submitted already" in again.stdout, again.stdout + again.stderr
    assert len((fake / "sbatch.log").read_text().splitlines()) == 1


def test_a_raced_grid_as_a_job_array_makes_the_local_races_stops(
    tmp_path: Path, raced_grid_toml: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bbrl.analysis.racing import RaceOptions
    from bbrl.grid.engines import slurm
    from bbrl.grid.race import run_raced_grid

    env = _fake_slurm(tmp_path)
    monkeypatch.setenv("FAKE_SLURM", env["FAKE_SLURM"])  # the stand-in sbatch, called from this process
    config_file = tmp_path / "race.toml"
    config_file.write_text(raced_grid_toml)
    config = grid.load_config(config_file)
    out = tmp_path / "out"
    console = Console(file=io.StringIO())
    fake = str(Path(env["FAKE_SLURM"]) / "sbatch")
    assert slurm.submit(config, out, slurm.SlurmOptions(), console, sbatch=fake, race=RaceOptions(batch=10)) == "101"
    tasks = json.loads((out / "slurm" / "tasks.json").read_text())
    assert len(tasks) == len(config.cells)  # no plan: one task per cell, each running the race's loop
    # Two array tasks at once share the race; they end when every race is over.
    runners = [
        subprocess.Popen([sys.executable, "-m", "bbrl", "grid", "task", str(out), str(i)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for i in (0, 1)
    ]  # fmt: skip
    outputs = [r.communicate(timeout=300)[0].decode(errors="replace") for r in runners]
    assert [r.returncode for r in runners] == [0, 0], outputs
    local = tmp_path / "local"
    run_raced_grid(config, local, RaceOptions(batch=10), threads=1, console=console)
    state = (local / "race" / "GC" / "GC.json").read_text()
    assert (out / "race" / "GC" / "GC.json").read_text() == state and '"rule"' in state
    assert not list((out / "batches").rglob("*.parquet")), "a batch run again after its cell was joined"
    assert len(grid.status(config, out).done) == len(config.cells)
    with pytest.raises(ValueError, match="raced with other settings"):
        slurm.submit(config, out, slurm.SlurmOptions(), console, sbatch=fake, race=RaceOptions(batch=20))
