"""The thread-count rule (bbrl/threads.py): never more threads than work items, a warning above the
cores, a clear error for a count that is not one; the same results whatever the count."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import bbrl
from bbrl import agents, threads
from bbrl.cli import main
from bbrl.episodic import EpisodicExperiment
from bbrl.threads import ThreadCountWarning, worker_threads

TASKS = Path("/proc/self/task")


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process may run on two cores (the warning is tested the same on any machine)."""
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.delenv("RAYON_NUM_THREADS", raising=False)


def _core_workers() -> int:
    """The core's pool threads alive now (they are named bbrl-worker-<i>)."""
    return sum((task / "comm").read_text().startswith("bbrl-worker") for task in TASKS.iterdir())


def test_never_more_threads_than_items_and_a_warning_above_the_cores(two_cores: None) -> None:
    with pytest.warns(ThreadCountWarning, match=r"2000 threads asked for, more than the 2 cores"):
        assert worker_threads(2000, 4) == 4
    assert worker_threads(2, 4) == 2 and worker_threads(2, 1) == 1
    # Every core by default, still one per item at most; rayon's own setting is honoured.
    assert worker_threads(None, 4) == 2 and worker_threads(None, 1) == 1
    assert worker_threads(np.int64(2), 4) == 2


def test_rayon_num_threads_is_the_default(two_cores: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYON_NUM_THREADS", "3")
    assert worker_threads(None, 10) == 3
    monkeypatch.setenv("RAYON_NUM_THREADS", "zero")
    assert worker_threads(None, 10) == 2


@pytest.mark.parametrize("bad", [0, -3, 2.5, 2.0, True, "2", [2]])
def test_a_count_that_is_not_one_is_a_value_error_naming_the_argument(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^threads must be"):
        worker_threads(bad, 4)
    exp = bbrl.Experiment("GC", n_mdps=2, horizon=5)
    with pytest.raises(ValueError, match=r"^threads must be"):
        exp.run(agents.Random(), threads=bad)  # type: ignore[arg-type]


def test_an_experiment_of_4_mdps_asked_for_2000_threads_starts_4_with_a_warning(two_cores: None) -> None:
    exp = bbrl.Experiment("GC", n_mdps=4, horizon=10000, seed=3)
    agent = agents.BAMCP(k=10, depth=8)
    seen: list[int] = []
    observe = (lambda _done: seen.append(_core_workers())) if TASKS.is_dir() else None
    with pytest.warns(ThreadCountWarning, match="2000 threads asked for"):
        many = exp.run(agent, threads=2000, on_progress=observe)
    assert many.threads == 4
    if TASKS.is_dir():
        # Sampled about every 0.1 s while the core runs (and once after): the pool's threads.
        assert seen and max(seen) <= 4, seen
    # Bit-identical to a run on one thread.
    np.testing.assert_array_equal(many.returns, exp.run(agent, threads=1).returns)
    assert exp.run(agents.Random(), threads=None).threads == 2


def test_the_episodic_protocol_caps_at_its_runs(two_cores: None) -> None:
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=3, n_runs=3, horizon=10, seed=1)
    with pytest.warns(ThreadCountWarning):
        many = exp.run(agents.PSRL(), threads=64)
    np.testing.assert_array_equal(many.returns, exp.run(agents.PSRL(), threads=1).returns)
    with pytest.raises(ValueError, match="threads must be"):
        exp.run(agents.PSRL(), threads=0)


def test_the_command_line_warns_in_one_line_and_refuses_a_bad_count(
    two_cores: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--experiment", "GC", "--agent", "random", "--n-mdps", "4", "--horizon", "5"]
    with warnings.catch_warnings():
        warnings.simplefilter("default", ThreadCountWarning)  # as outside pytest (which makes it an error)
        assert main([*argv, "--threads", "2000", "--out", str(tmp_path / "many")]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "ThreadCountWarning" in line]
    assert len(said) == 1
    assert said[0].startswith("bbrl: ThreadCountWarning: 2000 threads asked for, more than the 2 cores")
    for bad, why in (("0", "must be >= 1"), ("-1", "must be >= 1"), ("two", "must be a whole number"), ("1.5", "")):
        with pytest.raises(SystemExit) as stop:
            main([*argv, "--threads", bad, "--out", str(tmp_path / "bad")])
        assert stop.value.code == 2
        message = capsys.readouterr().err
        assert "argument --threads:" in message and why in message, message
    assert not (tmp_path / "bad").exists()
