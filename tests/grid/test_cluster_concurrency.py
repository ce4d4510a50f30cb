"""Runners sharing one output folder: claims that exclude and expire, locks, the trained-agent cache
written once, shared files never losing an entry, group-readable files, stale temporary files of
other hosts, and several `bbrl grid run` processes computing every cell exactly once."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console

from bbrl import fileio, grid
from bbrl.grid import claims
from bbrl.grid.plan import longest_first, static_cost
from bbrl.grid.store import claim_path, stale_temp_files

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks as on Linux")

SMALL = """\
[defaults]
n_mdps = 6
horizon = 30

[[experiment]]
name = "A"
test = "GC"
prior = "GC"

[[experiment]]
name = "B"
test = "GC"
prior = "GC"

[[agent]]
kind = "oppsds"
formula_set = 2
n_draws = [300, 400]

[[agent]]
kind = "bamcp"
k = [5, 6, 7, 8]
depth = 10
"""


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def _command() -> list[str]:
    exe = shutil.which("bbrl", path=os.path.dirname(sys.executable))  # the CLI under test, not PATH's
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _write_claim(path: Path, host: str, pid: int, age: float = 0.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": host, "pid": pid, "token": "theirs", "since": 0}))
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))


def test_a_claim_excludes_others_until_released(tmp_path: Path) -> None:
    target, guard = tmp_path / "c.claim", tmp_path / "guard.lock"
    first, second = claims.Claim(target, guard), claims.Claim(target, guard)
    assert first.acquire() is None
    holder = second.acquire()
    assert holder is not None and holder.pid == os.getpid() and not holder.expired
    first.release()
    assert not target.exists()
    assert second.acquire() is None
    first.release()  # not its claim any more: leaves the other's claim alone
    assert target.exists()
    second.release()
    assert not target.exists()


def test_claims_of_dead_or_silent_runners_expire(tmp_path: Path) -> None:
    target, guard = tmp_path / "c.claim", tmp_path / "guard.lock"
    host = socket.gethostname().replace(".", "-")
    # Same host, process gone: expired at once.
    _write_claim(target, host, _dead_pid())
    mine = claims.Claim(target, guard)
    assert mine.acquire() is None
    mine.release()
    # Another host, renewed within the lease: live; not renewed for longer than the lease: expired.
    _write_claim(target, "elsewhere", 1, age=claims.LEASE_SECONDS - 30)
    holder = claims.Claim(target, guard).acquire()
    assert holder is not None and holder.host == "elsewhere"
    _write_claim(target, "elsewhere", 1, age=claims.LEASE_SECONDS + 30)
    assert claims.read_claim(target).expired  # type: ignore[union-attr]
    taker = claims.Claim(target, guard)
    assert taker.acquire() is None
    assert claims.read_claim(target).token == taker.token  # type: ignore[union-attr]
    taker.release()
    # A foreign, unreadable claim file counts as expired.
    target.write_text("{half")
    assert claims.read_claim(target).expired  # type: ignore[union-attr]


def test_a_live_claim_is_renewed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claims, "RENEW_SECONDS", 0.05)
    target = tmp_path / "c.claim"
    claim = claims.Claim(target, tmp_path / "guard.lock")
    assert claim.acquire() is None
    old = time.time() - 1000
    os.utime(target, (old, old))
    deadline = time.monotonic() + 5
    while claims.read_claim(target).age > 100 and time.monotonic() < deadline:  # type: ignore[union-attr]
        time.sleep(0.02)
    assert claims.read_claim(target).age < 100  # type: ignore[union-attr]
    claim.release()


RACE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from bbrl.grid.claims import Claim
    target, guard, flags, me = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    (flags / f"ready-{me}").touch()
    while not (flags / "go").exists():  # every racer imported and waiting: they start together
        time.sleep(0.001)
    claim = Claim(target, guard)
    won = claim.acquire() is None
    print("won" if won else "lost", flush=True)
    while not (flags / "release").exists():  # hold the claim until every racer has answered
        time.sleep(0.01)
    if won:
        claim.release()
    """
)


@pytest.mark.parametrize("stale", [False, True], ids=["free", "expired-claim-taken-over"])
def test_of_many_processes_racing_for_a_claim_exactly_one_wins(tmp_path: Path, stale: bool) -> None:
    target, guard = tmp_path / "c.claim", tmp_path / "guard.lock"
    for round_ in range(3):
        flags = tmp_path / f"flags{round_}"
        flags.mkdir()
        if stale:
            _write_claim(target, socket.gethostname().replace(".", "-"), _dead_pid())
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", RACE, str(target), str(guard), str(flags), str(i)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(6)
        ]
        try:
            deadline = time.monotonic() + 120
            while len(list(flags.glob("ready-*"))) < len(racers) and time.monotonic() < deadline:
                time.sleep(0.01)
            (flags / "go").touch()
            answers = [r.stdout.readline().strip() for r in racers]  # type: ignore[union-attr]
            (flags / "release").touch()
            for r in racers:
                assert r.wait(timeout=60) == 0
        finally:
            for r in racers:
                if r.poll() is None:
                    r.kill()
                r.wait()
                r.stdout.close()  # type: ignore[union-attr]
        assert sorted(answers) == ["lost"] * 5 + ["won"], (round_, answers)
        assert not target.exists()


COUNTER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from bbrl.grid.claims import file_lock
    counter, lock, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    for _ in range(n):
        with file_lock(lock):
            value = int(counter.read_text())
            counter.write_text(str(value + 1))
    """
)


def test_a_file_lock_serialises_read_modify_write_across_processes_and_threads(tmp_path: Path) -> None:
    counter, lock = tmp_path / "counter", tmp_path / "locks" / "counter.lock"
    counter.write_text("0")
    processes = [subprocess.Popen([sys.executable, "-c", COUNTER, str(counter), str(lock), "40"]) for _ in range(4)]

    def bump() -> None:
        for _ in range(40):
            with claims.file_lock(lock):
                value = int(counter.read_text())
                counter.write_text(str(value + 1))

    threads = [threading.Thread(target=bump) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in processes:
        assert p.wait(timeout=120) == 0
    # Without the lock, concurrent read-modify-writes lose increments: the count is exact only with it.
    assert int(counter.read_text()) == 7 * 40


SETTINGS = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from bbrl import grid
    from bbrl.grid.store import check_settings
    out, name, start = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    config = grid.parse_config(
        f'[[experiment]]\\nname = "{name}"\\ntest = "GC"\\n[[agent]]\\nkind = "random"\\n'
    )
    while time.time() < start:
        pass
    for _ in range(20):
        check_settings(out, config)
    """
)


def test_runners_starting_together_never_lose_an_experiment_of_experiments_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    start = time.time() + 1.0
    names = [f"E{i}" for i in range(6)]
    processes = [subprocess.Popen([sys.executable, "-c", SETTINGS, str(out), n, str(start)]) for n in names]
    for p in processes:
        assert p.wait(timeout=120) == 0
    recorded = json.loads((out / "experiments.json").read_text())
    assert sorted(recorded) == sorted(f"{n}/GC" for n in names)


def test_written_files_are_readable_by_the_group(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        path = fileio.write_atomic(tmp_path / "x.bin", b"data")
        assert path.stat().st_mode & 0o777 == 0o664
    finally:
        os.umask(old)
    old = os.umask(0o022)
    try:
        config = grid.parse_config(SMALL.replace("k = [5, 6, 7, 8]", "k = 5"))
        out = tmp_path / "out"
        grid.run_grid(config, out, console=_quiet())
        files = [p for p in out.rglob("*") if p.is_file() and "locks" not in p.parts]
        assert files and all(p.stat().st_mode & 0o777 == 0o644 for p in files), [
            (str(p), oct(p.stat().st_mode)) for p in files
        ]
    finally:
        os.umask(old)


def test_stale_temporary_files_of_other_hosts_are_found_by_age(tmp_path: Path) -> None:
    out = tmp_path / "out"
    folder = out / "cells" / "GC" / "GC"
    folder.mkdir(parents=True)
    host = socket.gethostname().replace(".", "-")
    old_foreign = folder / ".x.parquet.w-otherhost-123-abc.tmp"
    fresh_foreign = folder / ".y.parquet.w-otherhost-123-abd.tmp"
    mine_alive = folder / f".z.parquet.w-{host}-{os.getpid()}-abe.tmp"
    mine_dead = folder / f".w.parquet.w-{host}-{_dead_pid()}-abf.tmp"
    for path in (old_foreign, fresh_foreign, mine_alive, mine_dead):
        path.write_bytes(b"half")
    stamp = time.time() - grid.store.STALE_TEMP_SECONDS - 60
    os.utime(old_foreign, (stamp, stamp))
    assert sorted(stale_temp_files(out)) == sorted([old_foreign, mine_dead])


def test_status_tells_running_cells_from_claims_of_dead_runners(tmp_path: Path) -> None:
    config = grid.parse_config(SMALL)
    out = tmp_path / "out"
    live, dead = config.cells[0], config.cells[1]
    claim = grid.store.cell_claim(out, live)
    assert claim.acquire() is None
    _write_claim(claim_path(out, dead), socket.gethostname().replace(".", "-"), _dead_pid())
    try:
        state = grid.status(config, out)
        assert [c.id for c, _ in state.running] == [live.id]
        assert state.expired_claims == [claim_path(out, dead)]
        # A local run leaves the live runner's cell to it and takes over the dead runner's cell.
        run = grid.run_grid(config, out, console=_quiet())
        assert [c.id for c, _ in run.busy] == [live.id]
        assert dead.id in {c.id for c in run.ran}
        assert not claim_path(out, dead).exists()
    finally:
        claim.release()
    assert [c.id for c in grid.run_grid(config, out, console=_quiet()).ran] == [live.id]


def test_cells_run_longest_first() -> None:
    config = grid.parse_config(SMALL)
    ordered = longest_first(list(config.cells))
    costs = [static_cost(c) for c in ordered]
    assert costs == sorted(costs, reverse=True)
    # OPPS-DS's 400 x 30 offline units and BAMCP's 8 x 10 per decision x 180 decisions lead.
    assert ordered[0].kind == "bamcp" and ordered[0].params["k"] == 8


def _ran_ids(output: str) -> list[str]:
    # The plain display prints "[i/N] <cell id>: mean ± half (seconds)" for each cell it ran.
    return [line.split("] ", 1)[1].rsplit(": ", 1)[0] for line in output.splitlines() if line.startswith("[")]


def test_concurrent_runners_compute_every_cell_once_and_train_each_agent_once(tmp_path: Path) -> None:
    config_file = tmp_path / "grid.toml"
    config_file.write_text(SMALL)
    config = grid.load_config(config_file)
    shared, alone = tmp_path / "shared", tmp_path / "alone"
    command = [*_command(), "grid", "run", str(config_file), "--threads", "1", "--out"]
    runners = [subprocess.Popen([*command, str(shared)], stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [r.communicate(timeout=600)[0] for r in runners]
    assert all(r.returncode == 0 for r in runners), outputs
    ran = [cell_id for output in outputs for cell_id in _ran_ids(output)]
    assert sorted(ran) == sorted(c.id for c in config.cells), outputs  # each cell by exactly one runner
    assert grid.run_grid(config, alone, threads=1, console=_quiet()).ran
    assert not list(shared.rglob("*.claim")) and not list(shared.rglob("*.tmp"))
    deterministic = ["cell_id", "mdp", "return", "details", "params"]
    for cell in config.cells:
        a = pl.read_parquet(grid.cell_path(shared, cell))
        b = pl.read_parquet(grid.cell_path(alone, cell))
        assert a.select(deterministic).equals(b.select(deterministic)), cell.id
    # Experiments A and B share the prior GC: each agent was trained once (under its lock) and
    # both cells carry that one training's measured offline time; two trainings would differ.
    by_setting: dict[str, set[float]] = {}
    for cell in config.cells:
        seconds = pl.read_parquet(grid.cell_path(shared, cell), columns=["offline_seconds"])["offline_seconds"][0]
        by_setting.setdefault(cell.params_id + cell.kind, set()).add(seconds)
    assert all(len(s) == 1 for s in by_setting.values()), by_setting


def test_a_killed_process_not_yet_reaped_counts_as_dead() -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert claims.pid_alive(process.pid)
        os.kill(process.pid, 9)
        deadline = time.monotonic() + 10
        while claims.pid_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        # A zombie until it is waited for: kill(pid, 0) still succeeds on it, /proc tells the truth.
        assert not claims.pid_alive(process.pid)
    finally:
        process.kill()
        process.wait()
