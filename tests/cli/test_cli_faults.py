"""Regression tests for the faults a new user hit: signals, grid status of a copied configuration,
truncated cells, ids and defaults, orphaned workers, early errors, failing cells and messages."""

from __future__ import annotations

import functools
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console

import bbrl
from bbrl import agents, grid
from bbrl.protocol import results

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals and /proc as on Linux")


def _command() -> list[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


SLOW_GRID = """\
[defaults]
n_mdps = 40
horizon = 250

[[experiment]]
name = "Grid"
test = "Grid"
prior = "UGrid"

[[agent]]
kind = "bamcp"
k = [20, 21, 22, 23, 24, 25, 26, 27]
depth = 15
"""


def _cells(out: Path) -> list[Path]:
    return sorted((out / "cells").rglob("*.parquet")) if (out / "cells").is_dir() else []


def _wait_for(predicate, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def _stop_after_a_cell(tmp_path: Path, signum: int, terminal: bool) -> tuple[int, float, str, Path]:
    """Starts `bbrl grid run` on a slow grid, sends ``signum`` once a cell is finished; returns the
    exit code, the seconds from the signal to the exit, the output and the output folder."""
    config = tmp_path / "slow.toml"
    config.write_text(SLOW_GRID)
    out = tmp_path / "out"
    command = [*_command(), "grid", "run", str(config), "--out", str(out), "--threads", "1"]
    if terminal:
        import pty

        leader, follower = pty.openpty()
        process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
        os.close(follower)
    else:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    chunks: list[bytes] = []
    try:
        assert _wait_for(lambda: len(_cells(out)) >= 1, 240), "no cell finished"
        time.sleep(0.3)  # in the middle of the next cell
        sent = time.monotonic()
        process.send_signal(signum)
        if terminal:
            while True:
                try:
                    data = os.read(leader, 4096)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
        if terminal:
            process.wait(timeout=30)
        else:
            chunks.append(process.communicate(timeout=30)[0])
        elapsed = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
        if terminal:
            os.close(leader)
    return process.returncode, elapsed, b"".join(chunks).decode(errors="replace"), out


@pytest.mark.parametrize(
    ("signum", "code", "terminal"),
    [(signal.SIGINT, 130, False), (signal.SIGTERM, 143, False), (signal.SIGINT, 130, True)],
    ids=["sigint-pipe", "sigterm-pipe", "sigint-terminal"],
)
def test_signals_stop_a_grid_within_a_second_and_keep_finished_cells(
    tmp_path: Path, signum: int, code: int, terminal: bool
) -> None:
    returncode, elapsed, output, out = _stop_after_a_cell(tmp_path, signum, terminal)
    assert returncode == code, output
    # The main thread only waits (50 ms polls) and exits at once: a second is the requirement.
    assert elapsed < 1.0, elapsed
    assert "Traceback" not in output and "FATAL" not in output, output
    kept = _cells(out)
    assert kept and len(kept) < 8
    for path in kept:
        grid.check_cell_file(path, 40)  # every kept cell is whole
    # The cell in flight is abandoned without its claim (else status reports a dead runner).
    assert not list(out.rglob("*.claim")), list(out.rglob("*.claim"))
    assert "finished cells are kept in" in output and "the same command runs the rest" in output, output
    assert not list(out.rglob("*.tmp")) or returncode == code  # a temp file may remain; the next run removes it


def test_sigint_stops_bbrl_run_without_a_terminal(tmp_path: Path) -> None:
    command = [*_command(), "run", "--experiment", "Grid", "--prior", "UGrid", "--agent", "bamcp"]
    command += ["--param", "k=200", "--param", "depth=15", "--n-mdps", "200", "--threads", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Signal once the experiment runs in the core (its pool's threads are named), not during the
    # imports, whose length depends on the machine's load.
    _wait_for_thread(process.pid, "bbrl-worker")
    assert process.poll() is None, "the run finished before the signal"
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - sent < 1.0
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    # Nothing was written: the stop says so (not "finished results are kept").
    assert stderr.strip().splitlines()[-1] == "bbrl: interrupted (SIGINT); stopped: no results were written", stderr


SLOW_PYTHON_AGENT = """
import time
from dataclasses import dataclass

from bbrl import agents


@dataclass
class Sleepy(agents.Agent):
    seconds: float = 0.01

    def start_task(self):
        pass

    def act(self, state, rng):
        time.sleep(self.seconds)
        return 0

    def observe(self, state, action, reward, next_state):
        pass
"""


def _wait_for_thread(pid: int, prefix: str, timeout: float = 60.0) -> None:
    """Waits until process ``pid`` has a thread whose name starts with ``prefix``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            names = [(task / "comm").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir()]
        except (FileNotFoundError, ProcessLookupError):
            names = []
        if any(name.startswith(prefix) for name in names):
            return
        time.sleep(0.05)
    raise AssertionError(f"no thread {prefix}* in process {pid} after {timeout} s")


def _descendants(pid: int) -> list[int]:
    """The children of ``pid`` and their children (worker processes and the resource tracker)."""
    level = _children(pid)
    return level + [g for c in level for g in _children(c)]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kill_9_of_a_grid_leaves_no_python_agent_worker_behind(tmp_path: Path) -> None:
    (tmp_path / "sleepy_agent.py").write_text(SLOW_PYTHON_AGENT)
    config = tmp_path / "grid.toml"
    config.write_text(
        '[defaults]\nn_mdps = 8\nhorizon = 200\n\n[[experiment]]\nname = "GC"\ntest = "GC"\n\n'
        '[[agent]]\nkind = "python"\nclass = "sleepy_agent.py:Sleepy"\n'
    )
    command = [*_command(), "grid", "run", str(config), "--out", str(tmp_path / "out"), "--threads", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The pool's workers are grandchildren or children depending on the entry point; collect all.
        workers = functools.partial(_descendants, process.pid)
        assert _wait_for(lambda: len(workers()) >= 2, 60), "no worker processes started"
        time.sleep(1.0)
        started = workers()
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert _wait_for(lambda: not any(_alive(p) for p in started), 5.0), [p for p in started if _alive(p)]
    finally:
        if process.poll() is None:
            process.kill()


def test_status_of_an_output_folder_whose_config_names_a_python_agent(tmp_path: Path) -> None:
    source = tmp_path / "configs"
    source.mkdir()
    (source / "sleepy_agent.py").write_text(SLOW_PYTHON_AGENT)
    (source / "grid.toml").write_text(
        '[defaults]\nn_mdps = 3\nhorizon = 5\n\n[[experiment]]\nname = "GC"\ntest = "GC"\n\n'
        '[[agent]]\nkind = "python"\nclass = "sleepy_agent.py:Sleepy"\nseconds = 0.0\n\n'
        '[[agent]]\nkind = "random"\n'
    )
    out = tmp_path / "out"
    run = subprocess.run(
        [*_command(), "grid", "run", str(source / "grid.toml"), "--out", str(out), "--threads", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    # From another folder: the copied config.toml reads its Python agent from the original's folder.
    status = subprocess.run([*_command(), "grid", "status", str(out)], capture_output=True, text=True, cwd="/")
    assert status.returncode == 0, status.stderr
    assert "total: 2/2 cells done" in status.stdout


SMALL = """\
[defaults]
n_mdps = 6
horizon = 10

[[experiment]]
name = "GC"
test = "GC"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 0.5, 1.0]
"""


def test_a_truncated_cell_is_not_done_and_is_named_when_read(tmp_path: Path) -> None:
    config = grid.parse_config(SMALL)
    out = tmp_path / "out"
    grid.run_grid(config, out, console=_quiet())
    victim = grid.cell_path(out, config.cells[1])
    whole = victim.read_bytes()
    victim.write_bytes(whole[: len(whole) // 2])
    state = grid.status(config, out)
    assert len(state.done) == 2 and [c.id for c, _ in state.broken] == [config.cells[1].id]
    with pytest.raises(grid.CellFileError, match=str(victim)):
        results.load(out)
    again = grid.run_grid(config, out, console=_quiet())
    assert [c.id for c in again.ran] == [config.cells[1].id]
    assert victim.read_bytes() != whole[: len(whole) // 2]
    assert results.load(out).cells.height == 3
    # A whole file with rows missing (another N) is not done either.
    frame = pl.read_parquet(victim)
    frame.head(4).write_parquet(victim)
    assert [c.id for c, _ in grid.status(config, out).broken] == [config.cells[1].id]


def test_cell_ids_name_every_parameter_so_a_changed_default_is_not_reused() -> None:
    block = 'kind = "egreedy"\nepsilon = [0.0, 0.5, 1.0]'
    config = grid.parse_config(SMALL.replace(block, 'kind = "softmax"\ntau = 1'))
    assert [c.id for c in config.cells] == ["GC/GC/softmax/tau=1.0,compat=false"]
    psrl = grid.parse_config(SMALL.replace(block, 'kind = "psrl"'))
    assert [c.id for c in psrl.cells] == ["GC/GC/psrl/k=1,reference=paper"]


def test_early_errors_for_impossible_sizes_and_missing_folders(tmp_path: Path) -> None:
    huge = subprocess.run(
        [*_command(), "run", "--experiment", "GC", "--agent", "random", "--n-mdps", "10000000000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert huge.returncode == 2 and "memory" in huge.stderr and "Traceback" not in huge.stderr, huge.stderr
    started = time.monotonic()
    missing = subprocess.run(
        [*_command(), "run", "--experiment", "GC", "--agent", "bamcp", "--param", "k=500", "--param", "depth=15",
         "--n-mdps", "500", "--csv", str(tmp_path / "missing" / "x.csv")],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert missing.returncode == 2 and "does not exist" in missing.stderr, missing.stderr
    assert "±" not in missing.stdout  # refused before the run, not after it
    assert time.monotonic() - started < 30


FAILING_AGENT = """
from dataclasses import dataclass

from bbrl import agents


@dataclass
class Fragile(agents.Agent):
    fail: bool = False

    def start_task(self):
        pass

    def act(self, state, rng):
        if self.fail:
            raise RuntimeError("this setting always fails")
        return 0

    def observe(self, state, action, reward, next_state):
        pass
"""


def test_a_failing_cell_is_recorded_and_the_grid_goes_on(tmp_path: Path) -> None:
    (tmp_path / "fragile_agent.py").write_text(FAILING_AGENT)
    config_file = tmp_path / "grid.toml"
    config_file.write_text(
        '[defaults]\nn_mdps = 3\nhorizon = 5\n\n[[experiment]]\nname = "GC"\ntest = "GC"\n\n'
        '[[agent]]\nkind = "python"\nclass = "fragile_agent.py:Fragile"\nfail = [false, true]\n\n'
        '[[agent]]\nkind = "random"\n'
    )
    out = tmp_path / "out"
    run = subprocess.run(
        [*_command(), "grid", "run", str(config_file), "--out", str(out), "--threads", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert "1 failed" in run.stdout and "failed: GC/GC/python-fragile/fail=true" in run.stdout
    assert "this setting always fails" in run.stdout
    assert len(_cells(out)) == 2  # the cells before and after the failing one
    config = grid.load_config(config_file)
    state = grid.status(config, out)
    assert len(state.done) == 2 and [c.id for c, _ in state.failed] == ["GC/GC/python-fragile/fail=true"]
    assert "RuntimeError: this setting always fails" in state.failed[0][1]
    assert grid.failure_path(out, state.failed[0][0]).is_file()


def test_messages_a_new_user_reads(tmp_path: Path) -> None:
    # bbrl.protocol.results without importing it first
    code = "import bbrl; print(bbrl.protocol.results.load.__name__)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "load"
    # --help shows a percent sign once
    run_help = subprocess.run([*_command(), "run", "--help"], capture_output=True, text=True).stdout
    assert "95%" in " ".join(run_help.split()) and "%%" not in run_help
    # `bbrl agents`: whole descriptions, defaults and ranges
    listing = subprocess.run([*_command(), "agents"], capture_output=True, text=True).stdout
    assert "compat (bool, default False; true or false)" in listing
    assert "epsilon (float, required; [0, 1]): probability of a uniformly random action" in listing
    assert "upper bound of each root is used." in " ".join(listing.split())
    assert "SPEC" not in listing


def test_quick_runs_every_algorithm_of_the_registry() -> None:
    from bbrl.cli.quick import not_in_quick, quick_agents

    chosen = {a.kind for a in quick_agents()}
    assert chosen | set(not_in_quick()) == set(agents.kinds())
    assert {"bamcp", "bfs3"} <= chosen


def test_latex_durations_have_units_not_tildes() -> None:
    from bbrl.analysis.formatting import format_duration, latex_duration

    assert latex_duration(561e-9) == r"561\,ns"
    assert latex_duration(3.2e-6) == r"3.2\,\textmu{}s"
    assert format_duration(3.2e-6) == "3.2 µs"


def test_a_class_from_an_interactive_session_asks_for_threads_1() -> None:
    script = (
        "import bbrl\nfrom dataclasses import dataclass\nfrom bbrl import agents\n"
        "@dataclass\nclass Stub(agents.Agent):\n"
        "    def start_task(self): pass\n    def act(self, state, rng): return 0\n    def observe(self, *a): pass\n"
        "exp = bbrl.Experiment('GC', n_mdps=4, horizon=5)\n"
        "try:\n    exp.run(Stub(), threads=2)\nexcept TypeError as exc:\n    print('TypeError:', exc)\n"
        "print(exp.run(Stub(), threads=1).n_mdps)\n"
    )
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=120)
    assert "TypeError:" in out.stdout and "pass threads=1" in out.stdout, out.stdout + out.stderr
    assert out.stdout.strip().endswith("4")


def test_action_out_of_range_names_the_valid_actions() -> None:
    from dataclasses import dataclass

    @dataclass
    class Three(agents.Agent):
        def start_task(self) -> None:
            pass

        def act(self, state: int, rng: object) -> int:
            return 3

        def observe(self, *args: object) -> None:
            pass

    with pytest.raises(agents.AgentError, match="returned action 3, not one of the actions 0 to 2"):
        bbrl.Experiment("GC", n_mdps=2, horizon=3).run(Three(), threads=1)


def test_sigint_of_a_grid_with_a_python_agent_leaks_no_semaphore_and_no_claim(tmp_path: Path) -> None:
    """The worker pool is shut down before the process ends: multiprocessing's resource tracker
    has no semaphore left to report, no worker survives, and the cell's claim is gone."""
    (tmp_path / "sleepy_agent.py").write_text(SLOW_PYTHON_AGENT)
    config = tmp_path / "grid.toml"
    config.write_text(
        '[defaults]\nn_mdps = 8\nhorizon = 200\n\n[[experiment]]\nname = "GC"\ntest = "GC"\n\n'
        '[[agent]]\nkind = "python"\nclass = "sleepy_agent.py:Sleepy"\n'
    )
    out = tmp_path / "out"
    command = [*_command(), "grid", "run", str(config), "--out", str(out), "--threads", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        workers = functools.partial(_descendants, process.pid)
        assert _wait_for(lambda: len(workers()) >= 3, 60), "no worker processes started"  # 2 + the tracker
        time.sleep(1.0)
        started = workers()
        assert list(out.rglob("*.claim")), "no cell claimed"
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)  # until the tracker, which shares stderr, is gone too
        assert process.returncode == 130 and time.monotonic() - sent < 3.0, stderr
        assert "leaked semaphore" not in stderr and "resource_tracker" not in stderr, stderr
        assert "Traceback" not in stderr, stderr
        assert not list(out.rglob("*.claim")), list(out.rglob("*.claim"))
        assert _wait_for(lambda: not any(_alive(p) for p in started), 5.0), [p for p in started if _alive(p)]
    finally:
        if process.poll() is None:
            process.kill()


def test_sigint_of_value_error_references_says_nothing_was_written(tmp_path: Path) -> None:
    command = [*_command(), "value-error", "references", "--env", "mountain-car", "--states", "2000"]
    command += ["--epsilon", "0.01", "--threads", "1", "--force", "--out", str(tmp_path / "refs")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3.0)
    assert process.poll() is None, "the command finished before the signal"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "bbrl: interrupted (SIGINT); stopped: no results were written", stderr
    assert not list((tmp_path / "refs").iterdir())


def test_what_a_stop_keeps_is_stated_per_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bbrl import fileio
    from bbrl.cli import app, build_parser

    monkeypatch.setattr(fileio, "_written", [0])  # a fresh process has written nothing
    parser = build_parser()
    replay_args = parser.parse_args(["replay", "log.parquet", "--agent", "psrl", "--out", str(tmp_path / "r")])
    grid_args = parser.parse_args(["grid", "run", "quick", "--out", str(tmp_path / "g")])
    assert app._kept(replay_args) == "no results were written"
    fileio.write_atomic(tmp_path / "a.txt", b"a")
    assert fileio.files_written() == 1
    assert app._kept(replay_args) == "the 1 file(s) written before the stop are kept, each whole"
    assert app._kept(grid_args) == (
        f"finished cells are kept in {tmp_path / 'g'} (each whole); the same command runs the rest"
    )


def test_piped_output_reaches_the_pipe_line_by_line_so_a_stop_loses_none(tmp_path: Path) -> None:
    """On Ctrl-C in `bbrl grid run ... | cat`, the reader gets the signal too: a line still in a
    block buffer is lost. Each line is sent when printed: the first cell's line is readable while
    the run goes on, and after the stop every line printed is there."""
    import select

    config = tmp_path / "slow.toml"
    config.write_text(SLOW_GRID)
    out = tmp_path / "out"
    command = [*_command(), "grid", "run", str(config), "--out", str(out), "--threads", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: len(_cells(out)) >= 1, 240), "no cell finished"
        readable, _, _ = select.select([process.stdout], [], [], 5.0)
        assert readable, "the finished cell's line is still in a buffer"
        first = os.read(process.stdout.fileno(), 65536).decode()  # type: ignore[union-attr]
        assert first.startswith("[1/8] Grid/UGrid/bamcp/") and first.endswith("s wall time)\n"), first
        assert process.poll() is None, "the grid finished before the signal"
        process.send_signal(signal.SIGINT)
        rest, stderr = process.communicate(timeout=30)
        assert process.returncode == 130, stderr
        lines = (first + rest.decode()).splitlines()
        # One line per kept cell (the last may have been renamed into place just before the signal).
        assert len(lines) in (len(_cells(out)) - 1, len(_cells(out))), lines
    finally:
        if process.poll() is None:
            process.kill()


SCRIPT_WITH_POOL = """
import bbrl
from sleepy_agent import Sleepy

if __name__ == "__main__":
    experiment = bbrl.Experiment("GC", n_mdps=8, horizon=200, seed=0)
    experiment.run(Sleepy(), threads=2)
"""


def test_ctrl_c_in_a_script_ends_the_python_agents_workers_at_once(tmp_path: Path) -> None:
    """Outside the command line, a KeyboardInterrupt while Python agents run on worker processes
    ends the workers at once (they ignore SIGINT) and leaks no semaphore."""
    (tmp_path / "sleepy_agent.py").write_text(SLOW_PYTHON_AGENT)
    (tmp_path / "script.py").write_text(SCRIPT_WITH_POOL)
    process = subprocess.Popen(
        [sys.executable, "script.py"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        workers = functools.partial(_descendants, process.pid)
        assert _wait_for(lambda: len(workers()) >= 3, 60), "no worker processes started"  # 2 + the tracker
        time.sleep(1.0)
        started = workers()
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        # Each of the 8 MDPs sleeps 200 x 10 ms in a worker: waiting for the chunks would take seconds.
        assert time.monotonic() - sent < 3.0, stderr
        assert "KeyboardInterrupt" in stderr and "leaked semaphore" not in stderr, stderr
        assert _wait_for(lambda: not any(_alive(p) for p in started), 5.0), [p for p in started if _alive(p)]
    finally:
        if process.poll() is None:
            process.kill()


TINY = '[defaults]\nn_mdps = 3\nhorizon = 5\n\n[[experiment]]\nname = "GC"\ntest = "GC"\n\n[[agent]]\nkind = "random"\n'


def _user_folder(tmp_path: Path) -> Path:
    """What a new user has in a folder: a configuration, a plain file, an empty log and results."""
    (tmp_path / "tiny.toml").write_text(TINY)
    (tmp_path / "afile.txt").write_text("mine\n")
    (tmp_path / "plainfile").write_text("mine\n")
    (tmp_path / "empty.parquet").write_bytes(b"")
    (tmp_path / "empty.json").write_bytes(b"")
    (tmp_path / "RES").mkdir()
    pl.DataFrame(
        {"episode": [0, 0], "t": [0, 1], "state": ["a", "b"], "action": [0, 1], "reward": [1.0, 0.0],
         "next_state": [1, 0]}
    ).write_csv(tmp_path / "strings.csv")  # fmt: skip
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # Four tracebacks before (FileExistsError, FileExistsError, FileExistsError, polars' ComputeError):
        (["grid", "run", "quick", "--out", "afile.txt"], "--out afile.txt: expected a folder, not a .txt file name"),
        (["report", "RES", "--out", "plainfile"], "--out plainfile: is a file, expected a folder"),
        (["grid", "run", "tiny.toml", "--out", "/dev/null"], "--out /dev/null: exists and is not a folder"),
        (["replay", "empty.parquet", "--agent", "psrl", "--out", "rp1"], "log file 'empty.parquet' is empty (0 bytes)"),
        # Unclear messages before:
        (
            ["replay", "strings.csv", "--agent", "psrl", "--out", "rp2"],
            "column 'state' must hold integers, got String",  # was "'>' not supported between 'int' and 'str'"
        ),
        (
            ["grid", "status", "nosuchdir"],  # was "with a configuration, give the output folder"
            "nosuchdir: no such folder, and neither a configuration file nor a shipped configuration",
        ),
        (
            ["report", "nosuchdir"],  # was "no finished cells in 'nosuchdir'"
            "results folder 'nosuchdir' does not exist",
        ),
        (
            ["run", "--experiment", "./empty.json", "--agent", "random"],  # was "expected 'Serializable' at line 1"
            "distribution file 'empty.json' is empty: expected bbrl's JSON distribution format or the original BBRL",
        ),
        (
            ["grid", "run", "tiny.toml", "--out", "/proc/x"],  # was "[Errno 2] No such file or directory: '/proc/x'"
            "--out /proc/x: cannot create the folder: No such file or directory",
        ),
    ],
    ids=[
        "grid-run-out-file",
        "report-out-file",
        "out-dev-null",
        "replay-empty-log",
        "replay-string-states",
        "status-nosuchdir",
        "report-nosuchdir",
        "run-empty-distribution",
        "out-proc",
    ],
)
def test_bad_inputs_a_new_user_tried_get_one_line_errors(tmp_path: Path, argv: list[str], expected: str) -> None:
    folder = _user_folder(tmp_path)
    before = sorted(folder.rglob("*"))
    run = subprocess.run([*_command(), *argv], capture_output=True, text=True, timeout=120, cwd=folder)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.startswith(f"bbrl: error: {expected}") and run.stderr.count("\n") == 1, run.stderr
    assert sorted(folder.rglob("*")) == before  # nothing made, nothing overwritten
    assert (folder / "afile.txt").read_text() == (folder / "plainfile").read_text() == "mine\n"


def test_a_file_that_cannot_be_written_is_named_not_its_temporary_file() -> None:
    # Before: "[Errno 2] No such file or directory: '/proc/.zz.w-host-pid-xxxx.tmp'".
    from bbrl import fileio

    with pytest.raises(FileNotFoundError, match=r"^\[Errno 2\] cannot write '/proc/zz': No such file or directory$"):
        fileio.write_atomic("/proc/zz", b"x")
