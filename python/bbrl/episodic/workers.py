"""Running a trained Python agent in the episodic protocol: in this process, or over worker processes.

As in the benchmark protocol (:mod:`bbrl.protocol.workers`): a Python agent holds the GIL, so runs
go to worker *processes* (``threads=`` of :meth:`bbrl.EpisodicExperiment.run` is their number).
Each worker rebuilds the experiment from the arguments it was made with (the same MDPs, start
states and streams), unpickles the trained agent and plays chunks of run indices; every run starts
from a fresh ``copy.deepcopy`` of the trained agent and owns its streams, so results are
bit-identical whatever the number of workers. A daemonic process (a pool's worker) runs them
itself, in order.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..pools import worker_pool
from ..protocol.workers import (
    contiguous_chunks,
    die_with_parent,
    gather_chunks,
    n_workers,
    pickled_agent,
    unpickled_agent,
)

__all__ = ["run_python_agent"]

#: The arrays of the core's ``run_python``: (runs, K) returns, regret, expected regret, steps, CPU
#: seconds; per run the wall seconds and the (runs, units) work counts.
_ARRAYS = 7

#: How to build an experiment again: (constructor, positional arguments, keyword arguments).
Recipe = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def run_python_agent(experiment: Any, recipe: Recipe, agent: Any, label: str, threads: int) -> tuple[Any, ...]:
    """The core's ``run_python`` arrays of ``agent`` on every run of ``experiment`` (built by
    ``recipe``), over ``threads`` worker processes (resolved by :func:`bbrl.threads.worker_threads`;
    1: this process)."""
    runs = range(experiment.n_runs)
    workers = n_workers(threads, len(runs))
    if workers == 1:
        return tuple(experiment._core.run_python(agent, label))
    rows: dict[int, tuple[Any, ...]] = {}

    def store(chunk: list[int], *arrays: Any) -> None:
        rows[chunk[0]] = arrays

    payload = pickled_agent(agent, workers)
    with worker_pool(workers, _worker_init, (recipe, payload, label, os.getpid())) as pool:
        parts = contiguous_chunks(runs, 2 * workers)
        gather_chunks(pool, parts, lambda chunk: pool.submit(_worker_run, chunk), store, label)
    # Chunks are contiguous and in order: their rows, stacked by first run, are the runs in order.
    ordered = [rows[first] for first in sorted(rows)]
    return tuple(np.concatenate([part[k] for part in ordered]) for k in range(_ARRAYS))


_WORKER: dict[str, Any] = {}


def _worker_init(recipe: Recipe, payload: bytes, label: str, parent: int) -> None:
    die_with_parent(parent)
    _WORKER.update(recipe=recipe, payload=payload, label=label)


def _worker_run(runs: list[int]) -> tuple[Any, ...]:
    if "experiment" not in _WORKER:
        build, args, kwargs = _WORKER["recipe"]
        _WORKER["experiment"] = build(*args, **kwargs)
    if "agent" not in _WORKER:
        _WORKER["agent"] = unpickled_agent(_WORKER["payload"], _WORKER["label"])
    return tuple(_WORKER["experiment"]._core.run_python(_WORKER["agent"], _WORKER["label"], runs))
