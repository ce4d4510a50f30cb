"""Benchmark grids: configuration, expansion, errors, the resumable runner and the results frames."""

from __future__ import annotations

import io
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console

from bbrl import grid
from bbrl.grid import SHIPPED_CONFIGS, shipped_config
from bbrl.protocol import results

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SMALL = """\
[defaults]
n_mdps = 12
horizon = 20
seed = 3

[[experiment]]
name = "GC"
test = "GC"

[[experiment]]
name = "GC"
test = "GC"
prior = "UGC"
n_mdps = 10

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
block = "e-Greedy"
epsilon = [0.0, 1]

[[agent]]
kind = "sboss"
epsilon = [0.1, 0.01]
delta = [1.0, 2.0, 3.0]
"""


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_expansion_is_a_cartesian_product_with_the_last_parameter_fastest() -> None:
    config = grid.parse_config(SMALL)
    assert len(config.cells) == 2 * (1 + 2 + 6)
    sboss = [c.params for c in config.cells if c.kind == "sboss" and c.experiment.prior == "GC"]
    assert sboss == [
        {"epsilon": e, "delta": d} for e in (0.1, 0.01) for d in (1.0, 2.0, 3.0)
    ]  # the last parameter varies fastest
    ids = [c.id for c in config.cells]
    assert len(set(ids)) == len(ids)
    assert ids[:4] == [
        "GC/GC/random",
        "GC/GC/egreedy/epsilon=0.0",
        "GC/GC/egreedy/epsilon=1.0",
        "GC/GC/sboss/epsilon=0.1,delta=1.0,compat=false",
    ]
    assert ids[9] == "GC/UGC/random"
    assert [c.index for c in config.cells] == list(range(len(ids)))
    first, second = config.experiments
    assert (first.n_mdps, first.horizon, first.seed, first.gamma, first.prior) == (12, 20, 3, 0.95, "GC")
    assert (second.n_mdps, second.prior) == (10, "UGC")
    assert config.cells[1].algorithm == "e-Greedy" and config.cells[1].block == "e-Greedy"


def test_ids_do_not_depend_on_spelling_or_key_order() -> None:
    a = grid.parse_config(SMALL.replace("epsilon = [0.1, 0.01]\ndelta = [1.0, 2.0, 3.0]", "epsilon = 0.1\ndelta = 1"))
    b = grid.parse_config(SMALL.replace("epsilon = [0.1, 0.01]\ndelta = [1.0, 2.0, 3.0]", "delta = 1.0\nepsilon = 0.1"))
    assert [c.id for c in a.cells] == [c.id for c in b.cells]
    path = grid.cell_path(Path("out"), a.cells[3])
    assert path == Path("out/cells/GC/GC/sboss/epsilon=0.1,delta=1.0,compat=false.parquet")


def test_minus_zero_and_zero_are_one_cell() -> None:
    from bbrl.grid.ids import format_value

    assert format_value(-0.0) == format_value(0.0) == "0.0"
    egreedy = '[[agent]]\nkind = "egreedy"\nepsilon = {}\n'
    head = SMALL.split("[[agent]]")[0]
    ids = [grid.parse_config(head + egreedy.format(v)).cells[0].id for v in ("-0.0", "0.0", "0")]
    assert len(set(ids)) == 1, ids


def _error(text: str) -> str:
    with pytest.raises(grid.ConfigError) as info:
        grid.parse_config(text, "grid.toml")
    return str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "epsilon = [0.0, 1]",
            "epsilon = [0.0, 2]",
            ("grid.toml:22:", "agent[1].epsilon", "epsilon must be in [0, 1]"),
        ),
        (
            "epsilon = [0.0, 1]",
            "epsilon = [0.0, 1]\nspeed = 3",
            ("grid.toml:23:", "agent[1].speed", "no such parameter"),
        ),
        ('kind = "random"', 'kind = "nope"', ("grid.toml:17:", "agent[0].kind", "unknown agent 'nope'")),
        ("n_mdps = 10", "n_mdps = 0", ("grid.toml:14:", "experiment[1].n_mdps", "must be >= 2")),
        ("horizon = 20", 'horizon = "long"', ("grid.toml:3:", "defaults.horizon", "must be an integer")),
        ('prior = "UGC"', 'prior = "UGDL"', ("grid.toml:13:", "experiment[1].prior", "9 states")),
        ('prior = "UGC"', 'prior = "nowhere"', ("grid.toml:13:", "experiment[1].prior", "unknown distribution")),
        ('prior = "UGC"', 'prior = "GC"', ("grid.toml:11:", "experiment[1].name", "defined twice")),
        ("[defaults]", "[default]", ("grid.toml:1:", "default", "unknown key")),
        ("seed = 3", "seed = 3\nsede = 4", ("grid.toml:5:", "defaults.sede", "unknown key")),
        ("delta = [1.0, 2.0, 3.0]", "delta = []", ("grid.toml:27:", "agent[2].delta", "empty list")),
        ("horizon = 20", "horizon = = 20", ("grid.toml: invalid TOML", "line 3")),
    ],
)
def test_errors_name_the_key_and_its_line(old: str, new: str, expected: tuple[str, ...]) -> None:
    assert old in SMALL
    message = _error(SMALL.replace(old, new, 1))
    for part in expected:
        assert part in message, message


def test_missing_sections_are_errors() -> None:
    assert "at least one [[agent]]" in _error('[[experiment]]\nname = "GC"\ntest = "GC"\n')
    assert "at least one [[experiment]]" in _error('[[agent]]\nkind = "random"\n')
    assert "missing key 'test'" in _error('[[experiment]]\nname = "GC"\n[[agent]]\nkind = "random"\n')


def test_optional_agents_unknown_here_are_skipped_and_unknown_kinds_can_be_expanded() -> None:
    text = SMALL + '\n[[agent]]\nkind = "not-yet"\noptional = true\nk = [1, 2]\n'
    config = grid.parse_config(text)
    assert config.skipped_agents == ("not-yet (line 30)",)
    assert len(config.cells) == 18
    required = SMALL + '\n[[agent]]\nkind = "notyet"\nk = [1, 2]\n'
    assert "unknown agent" in _error(required)
    expanded = grid.parse_config(required, check_agents=False)
    assert [c.id for c in expanded.cells if c.kind == "notyet"][:2] == ["GC/GC/notyet/k=1", "GC/GC/notyet/k=2"]


def test_a_baselines_block_is_the_registrys_baselines_that_no_other_block_names() -> None:
    from bbrl import agents
    from bbrl.grid.config import baseline_blocks

    flagged = [e["kind"] for e in agents.REGISTRY if e["episodic_baseline"]]
    assert "egreedy" in flagged and "ucrl2" in flagged  # the floor and an optimistic baseline
    config = grid.parse_config(SMALL + '\n[[agent]]\nkind = "Baselines"\n')
    added = [c for c in config.cells if c.experiment.key == "GC/GC"][len(grid.parse_config(SMALL).cells) // 2 :]
    # e-Greedy has a block of its own: the others, in the registry's order, at their first example.
    assert [c.kind for c in added] == [k for k in flagged if k != "egreedy"]
    for cell in added:
        assert cell.spec == agents.examples(cell.kind)[0]
        assert cell.block == agents.spec(cell.kind)["display"]
    assert [b["kind"] for b in baseline_blocks()] == flagged
    assert "takes no other key" in _error(SMALL + '\n[[agent]]\nkind = "baselines"\nepsilon = 0.2\n')
    # kind = "quick": every kind `bbrl quick` runs, the same way.
    from bbrl.cli.quick import quick_agents

    every = grid.parse_config(SMALL.split("[[agent]]")[0] + '[[agent]]\nkind = "quick"\n')
    assert [c.spec for c in every.cells if c.experiment.key == "GC/GC"] == list(quick_agents())


def test_the_problems_grid_runs_every_quick_agent_on_three_environments_as_distributions() -> None:
    from bbrl import envs
    from bbrl.agents.registry import quick_kinds

    config = grid.load_config(shipped_config("problems"))
    assert [(e.name, e.prior, e.n_mdps) for e in config.experiments] == [
        ("DeepSea-10", "DeepSea", 20),
        ("FrozenLake-4x4", "FrozenLake-4x4", 20),
        ("Taxi", "Taxi", 20),
    ]
    for e in config.experiments:
        assert e.test_fdm == envs.distribution_of(envs.make(e.prior), name=e.prior) == e.prior_fdm
    assert config.experiments[0].test_fdm.n_states == 10 * 10 + 1  # DeepSea's default size, N = 10
    assert config.experiments[2].test_fdm.start_law is not None  # Taxi's start law
    taxi = [c for c in config.cells if c.experiment.name == "Taxi"]
    assert sorted(c.kind for c in taxi) == sorted(quick_kinds())
    assert [c.params for c in taxi if c.kind == "oppsds"] == [{"formula_set": 2, "n_draws": 20}]
    # An environment name stands for its distribution only where it names no file.
    assert "unknown distribution" in _error(SMALL.replace('test = "GC"', 'test = "NoSuchEnv"', 1))


def test_shipped_configurations() -> None:
    """The paper's grids: 198 settings per experiment (SPEC 6.3, ANN excluded), 3 experiments each;
    the package ships the same files as examples/."""
    for name in SHIPPED_CONFIGS:
        installed = shipped_config(name)
        assert installed is not None, name
        if EXAMPLES.is_dir():
            assert installed.read_text() == (EXAMPLES / f"{name}.toml").read_text()
    for name, priors in (("paper-accurate", ["GC", "GDL", "Grid"]), ("paper-inaccurate", ["UGC", "UGDL", "UGrid"])):
        config = grid.load_config(shipped_config(name), check_agents=False)  # BAMCP/BFS3 may not exist here
        assert [e.prior for e in config.experiments] == priors
        assert all((e.n_mdps, e.gamma, e.horizon) == (500, 0.95, 250) for e in config.experiments)
        per_kind: dict[str, int] = {}
        for cell in config.cells[:198]:
            per_kind[cell.kind] = per_kind.get(cell.kind, 0) + 1
        assert len(config.cells) == 3 * 198
        assert per_kind == {
            "random": 1, "egreedy": 11, "softmax": 10, "oppsds": 32, "bamcp": 21, "bfs3": 72, "sboss": 41, "beb": 10
        }  # fmt: skip
        assert "GC/" + priors[0] + "/bamcp/k=500,depth=15" in {c.id for c in config.cells}
    quick = grid.load_config(shipped_config("quick"))
    assert {e.n_mdps for e in quick.experiments} == {100} and len(quick.experiments) == 6
    # The quick grid benchmarks the Python example agent and every exploration baseline beside the built-ins.
    assert any(c.kind == "python-mypsrl" for c in quick.cells)
    from bbrl.agents.registry import baseline_kinds

    assert set(baseline_kinds()) <= {c.kind for c in quick.cells}
    if EXAMPLES.is_dir():
        assert (shipped_config("quick").parent / "my_agent.py").read_text() == (EXAMPLES / "my_agent.py").read_text()


PYTHON_AGENT = """
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


def test_python_agents_run_in_grids_and_reports(tmp_path: Path) -> None:
    (tmp_path / "stubborn_agent.py").write_text(PYTHON_AGENT)
    config = tmp_path / "grid.toml"
    config.write_text(
        """
[defaults]
n_mdps = 6
horizon = 20

[[experiment]]
name = "Grid"
test = "Grid"
prior = "Grid"

[[agent]]
kind = "softmax"
tau = 1.0
compat = true

[[agent]]
kind = "python"
class = "stubborn_agent.py:Stubborn"
action = [0, 1]
"""
    )
    parsed = grid.load_config(config)
    assert [c.id for c in parsed.cells] == [
        "Grid/Grid/softmax/tau=1.0,compat=true",
        "Grid/Grid/python-stubborn/action=0",
        "Grid/Grid/python-stubborn/action=1",
    ]  # fmt: skip
    out = tmp_path / "out"
    grid.run_grid(parsed, out, threads=1, console=_quiet())
    loaded = results.load(out)
    returns = loaded.returns.sort("cell_index", "mdp")
    by_cell = {
        cid: returns.filter(pl.col("cell_id") == cid)["return"].to_numpy() for cid in returns["cell_id"].unique()
    }
    # Always playing action 0 is what the original soft-max does: same MDPs, same streams, same returns.
    assert np.array_equal(
        by_cell["Grid/Grid/python-stubborn/action=0"], by_cell["Grid/Grid/softmax/tau=1.0,compat=true"]
    )
    assert set(loaded.cells["algorithm"].to_list()) == {"Soft-max", "Stubborn"}
    bad = tmp_path / "bad.toml"
    bad.write_text(config.read_text().replace("stubborn_agent.py:Stubborn", "missing.py:Nope"))
    with pytest.raises(grid.ConfigError, match="not found"):
        grid.load_config(bad)


def test_shards_partition_the_cells() -> None:
    config = grid.parse_config(SMALL)
    assert len(config.cells) == 18
    for n in (1, 3, 4, 18, 25):
        shards = [grid.select_shard(config.cells, (k, n)) for k in range(1, n + 1)]
        ids = [c.id for shard in shards for c in shard]
        assert len(ids) == len(set(ids)) == 18  # disjoint, and every cell in one shard
        assert set(ids) == {c.id for c in config.cells}
        sizes = [len(shard) for shard in shards]
        assert max(sizes) - min(sizes) <= 1, sizes  # round robin: balanced
        for shard in shards:  # each shard keeps the grid's order
            assert [c.index for c in shard] == sorted(c.index for c in shard)
    # The documented rule (shard K of N runs cells K-1, K-1+N, ...), as literal lists.
    assert [c.index for c in grid.select_shard(config.cells, (2, 3))] == [1, 4, 7, 10, 13, 16]
    assert [c.index for c in grid.select_shard(config.cells, (4, 4))] == [3, 7, 11, 15]
    assert grid.select_shard(config.cells, (1, 25)) == [config.cells[0]]
    assert grid.select_shard(config.cells, (19, 25)) == []
    assert grid.select_shard(config.cells, None) == list(config.cells)
    assert grid.parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(ValueError, match="shard"):
            grid.parse_shard(bad)


def test_run_status_results_and_training_cache(tmp_path: Path) -> None:
    config = grid.parse_config(SMALL)
    out = tmp_path / "out"
    first = grid.run_grid(config, out, shard=(1, 2), console=_quiet())
    assert len(first.ran) == 9 and not first.skipped
    state = grid.status(config, out)
    assert len(state.done) == 9 and len(state.missing) == 9
    second = grid.run_grid(config, out, console=_quiet())
    assert len(second.ran) == 9 and len(second.skipped) == 9
    assert grid.run_grid(config, out, console=_quiet()).ran == []
    loaded = results.load(out)
    assert loaded.cells.height == 18 and loaded.cells["cell_id"].to_list() == [c.id for c in config.cells]
    assert loaded.returns.height == 9 * 12 + 9 * 10
    row = loaded.cells.row(3, named=True)
    assert row["kind"] == "sboss" and json.loads(row["params"]) == {"epsilon": 0.1, "delta": 1.0, "compat": False}
    assert row["horizon"] == 20 and row["seed"] == 3 and row["bbrl_version"]
    assert row["online_seconds_per_step"] == pytest.approx(row["online_seconds_per_trajectory"] / 20)
    # One trained agent per cell (every cell here has its own prior/agent/parameters), reused:
    assert len(list((out / "agents").rglob("*.json"))) == 18
    # Results equal a direct run with the same seed: the grid adds no randomness.
    import bbrl
    from bbrl import agents

    direct = bbrl.Experiment("GC", n_mdps=10, horizon=20, seed=3).run(agents.SBOSS(0.1, 1.0), prior="UGC")
    cell = loaded.returns.filter(pl.col("cell_id") == "GC/UGC/sboss/epsilon=0.1,delta=1.0,compat=false").sort("mdp")
    assert cell["return"].to_list() == direct.returns.tolist()
    # Each cell carries its experiment's fingerprint, as the direct run does: their returns pair.
    assert cell["experiment_fingerprint"].unique().to_list() == [direct.fingerprint]
    by_cell = dict(zip(loaded.cells["cell_id"], loaded.cells["experiment_fingerprint"], strict=True))
    assert by_cell["GC/UGC/sboss/epsilon=0.1,delta=1.0,compat=false"] == direct.fingerprint
    assert by_cell["GC/GC/random"] != direct.fingerprint  # 12 test MDPs, not 10


def test_missing_cells_read_from_the_footers_agree_with_the_full_check(tmp_path: Path) -> None:
    config = grid.parse_config(SMALL)
    out = tmp_path / "out"
    grid.run_grid(config, out, shard=(1, 3), console=_quiet())
    done = grid.status(config, out).done
    cut, short = (grid.cell_path(out, cell) for cell in done[:2])
    cut.write_bytes(cut.read_bytes()[:-40])  # a file cut short: its footer is gone
    frame = pl.read_parquet(short)
    frame.head(frame.height - 1).write_parquet(short)  # one row short of its test MDPs
    full = grid.status(config, out)
    assert len(full.broken) == 2 and len(full.done) == len(done) - 2
    expected: dict[str, int] = {}
    for cell in [*full.missing, *(c for c, _ in full.broken)]:
        expected[cell.experiment.key] = expected.get(cell.experiment.key, 0) + 1
    assert grid.missing_by_experiment(out) == expected
    footers = grid.status(config, out, footers_only=True)
    assert [c.id for c in footers.done] == [c.id for c in full.done]
    assert [c.id for c, _ in footers.broken] == [c.id for c, _ in full.broken]


def test_cells_written_before_fingerprints_get_theirs_where_the_distribution_is_built_in(tmp_path: Path) -> None:
    config = grid.parse_config(SMALL.replace("epsilon = [0.1, 0.01]", "epsilon = 0.1"))
    grid.run_grid(config, tmp_path, console=_quiet())
    recorded = results.load(tmp_path)
    files = sorted((tmp_path / "cells").rglob("*.parquet"))
    for file in files:
        pl.read_parquet(file).drop("experiment_fingerprint").write_parquet(file)
    old = results.load(tmp_path)
    for frame in ("cells", "returns"):
        expected = getattr(recorded, frame)["experiment_fingerprint"]
        assert getattr(old, frame)["experiment_fingerprint"].to_list() == expected.to_list()
    assert old.cells["experiment_fingerprint"].null_count() == 0 and old.cells["experiment_fingerprint"].n_unique() == 2
    # A distribution file's content may have changed since: its cells stay without one.
    pl.read_parquet(files[0]).with_columns(pl.lit("mine.dat").alias("test")).write_parquet(files[0])
    mixed = results.load(tmp_path)
    assert mixed.cells["experiment_fingerprint"].null_count() == 1


def test_a_damaged_experiments_file_is_an_error_naming_it(tmp_path: Path) -> None:
    # Before: `grid status`, `report` and results.load ignored it; `grid run` failed with a bare
    # JSON message that did not name the file.
    config = grid.parse_config(SMALL.replace("epsilon = [0.1, 0.01]", "epsilon = 0.1"))
    grid.run_grid(config, tmp_path, console=_quiet())
    file = tmp_path / "experiments.json"
    whole = file.read_bytes()
    for damaged in (whole[: len(whole) // 2], b"", b"[1, 2]", b'{"GC/GC": 3}'):
        file.write_bytes(damaged)
        for read in (
            lambda: results.load(tmp_path),
            lambda: grid.status(config, tmp_path),
            lambda: grid.run_grid(config, tmp_path, console=_quiet()),
        ):
            with pytest.raises(ValueError, match=rf"{re.escape(str(file))}'?: .*restore it from a copy, or remove it"):
                read()
    file.unlink()
    file.mkdir()
    with pytest.raises(ValueError, match=rf"^{re.escape(str(file))}: is a directory, not a regular file; "):
        grid.run_grid(config, tmp_path, console=_quiet())
    file.rmdir()  # removed: the next run records the settings again
    grid.run_grid(config, tmp_path, console=_quiet())
    assert json.loads(file.read_bytes()) == json.loads(whole)


def test_other_settings_under_the_same_name_are_refused(tmp_path: Path) -> None:
    grid.run_grid(
        grid.parse_config(SMALL.replace("epsilon = [0.1, 0.01]", "epsilon = 0.1")), tmp_path, console=_quiet()
    )
    changed = grid.parse_config(SMALL.replace("n_mdps = 12", "n_mdps = 13"))
    with pytest.raises(ValueError, match="other settings"):
        grid.run_grid(changed, tmp_path, console=_quiet())


RESUME = """\
[defaults]
n_mdps = 30
horizon = 200

[[experiment]]
name = "Grid"
test = "Grid"

[[experiment]]
name = "Grid"
test = "Grid"
prior = "UGrid"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
"""


def _bbrl_command() -> list[str]:
    exe = shutil.which("bbrl")
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def test_a_killed_run_resumes_with_nothing_lost_or_duplicated(tmp_path: Path) -> None:
    config_file = tmp_path / "grid.toml"
    config_file.write_text(RESUME)
    out = tmp_path / "out"
    total = len(grid.load_config(config_file).cells)
    command = [*_bbrl_command(), "grid", "run", str(config_file), "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if len(list((out / "cells").rglob("*.parquet"))) >= 3 if (out / "cells").is_dir() else False:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    partial = len(list((out / "cells").rglob("*.parquet")))
    assert 3 <= partial < total
    # A temporary file as a writer killed mid-write leaves it (its process is gone).
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname().replace(".", "-")
    stale = out / "cells" / "Grid" / "Grid" / f".x.parquet.w-{host}-{dead.pid}-abc.tmp"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"half")
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{partial} of {total} cells already done" in rerun.stdout
    files = sorted((out / "cells").rglob("*.parquet"))
    assert len(files) == total
    assert not list(out.rglob("*.tmp"))
    loaded = results.load(out)
    assert loaded.cells.height == total and loaded.cells["cell_id"].n_unique() == total
    assert loaded.returns.group_by("cell_id").len()["len"].to_list() == [30] * total
    status = subprocess.run([*_bbrl_command(), "grid", "status", str(out)], capture_output=True, text=True)
    assert status.returncode == 0 and f"total: {total}/{total} cells done" in status.stdout


def test_each_finished_cell_line_labels_its_time() -> None:
    import re
    import tempfile

    console = Console(file=io.StringIO(), width=200)
    config = grid.parse_config(SMALL.split("[[agent]]")[0] + '[[agent]]\nkind = "random"\n')
    with tempfile.TemporaryDirectory() as out:
        grid.run_grid(config, out, threads=1, console=console)
    lines = [line for line in console.file.getvalue().splitlines() if line.startswith("[")]
    assert len(lines) == 2, lines
    pattern = r"\[\d/2\] GC/U?GC/random: -?\d+\.\d\d ± \d+\.\d\d \(\d+\.\d\d s wall time\)"
    assert all(re.fullmatch(pattern, line) for line in lines), lines
