"""Ctrl-C cancels a built-in agent's run in the core: the benchmark protocol's and the episodic
protocol's, both through bbrl.cancellable. Each run below would take minutes; its units of work
(a trajectory, an episodic run) take about 1.5 s each, so a cancelled run ends within seconds and
the core is no longer running once the KeyboardInterrupt leaves the call."""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import bbrl
from bbrl import agents

#: Seconds a cancelled run may take at the most (the unit in flight ends first).
BOUND = 20.0


def _protocol() -> Callable[..., Any]:
    experiment = bbrl.Experiment("GC", n_mdps=50, horizon=600, seed=0)
    return lambda **kw: experiment.run(agents.BAMCP(k=1000, depth=30), threads=1, **kw)


def _episodic() -> Callable[..., Any]:
    experiment = bbrl.EpisodicExperiment("GC", episodes=30, n_runs=50, horizon=20, seed=0)
    return lambda **kw: experiment.run(agents.BAMCP(k=1000, depth=30), threads=1, **kw)


def _core_still_running() -> bool:
    """Whether a worker thread of bbrl.cancellable lives 0.3 s after the call left (well below a unit)."""
    time.sleep(0.3)
    return any(t.name in ("bbrl-run", "bbrl-episodic") for t in threading.enumerate())


@pytest.mark.parametrize("make", [_protocol, _episodic], ids=["protocol", "episodic"])
def test_ctrl_c_cancels_the_core_run_and_waits_for_it(make: Callable[[], Callable[..., Any]]) -> None:
    run = make()
    timer = threading.Timer(0.5, _thread.interrupt_main)  # what Ctrl-C does: KeyboardInterrupt in the main thread
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run()
    finally:
        timer.cancel()
    assert time.monotonic() - started < BOUND
    assert not _core_still_running()


def test_a_failing_on_progress_cancels_the_run() -> None:
    run = _protocol()
    seen: list[int] = []

    def on_progress(done: int) -> None:
        seen.append(done)
        raise RuntimeError("display gone")

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="display gone"):
        run(on_progress=on_progress)
    assert time.monotonic() - started < BOUND
    assert seen == [0] and not _core_still_running()
