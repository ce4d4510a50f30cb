"""Running a trained Python agent on an experiment's test MDPs: in this process, or over worker processes.

Parallelism: a Python agent holds the GIL, so MDPs run in worker *processes* (``threads=`` of
:meth:`bbrl.Experiment.run` is the number of processes). Each worker rebuilds the experiment from
(test distribution, N, gamma, T, seed), which draws the same MDPs, unpickles the trained agent and
runs chunks of MDP indices; every MDP starts from a fresh ``copy.deepcopy`` of the trained agent, so
results are bit-identical whatever the number of workers. A daemonic process (a pool's worker, a
Dask worker under a nanny) cannot have children: there the MDPs run in the process itself, in order.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _core
from ..agents import TrainedPythonAgent
from ..distributions import from_document
from ..pools import stop_pool, worker_pool

__all__ = [
    "contiguous_chunks",
    "die_with_parent",
    "gather_chunks",
    "n_workers",
    "pickled_agent",
    "run_trajectories",
    "unpickled_agent",
]


def n_workers(threads: int, n_mdps: int) -> int:
    """The number of worker processes for ``threads``, a count :func:`bbrl.threads.worker_threads`
    gave (the entry point resolves ``threads=`` once, with its checks and warning): at most one per
    MDP, and one (this process) in a daemonic process, such as a pool's worker or a Dask nanny's
    worker, which may not start processes of its own; it is already one process of a pool, and the
    results do not depend on the number of workers."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return 1
    return max(1, min(int(threads), n_mdps))


def contiguous_chunks(mdps: range, n_chunks: int) -> list[list[int]]:
    """Contiguous chunks of ``mdps``, as even as possible."""
    n = len(mdps)
    n_chunks = max(1, min(n_chunks, n))
    bounds = [round(k * n / n_chunks) for k in range(n_chunks + 1)]
    return [list(mdps[bounds[k] : bounds[k + 1]]) for k in range(n_chunks)]


def run_trajectories(
    experiment: Any,
    trained: TrainedPythonAgent,
    threads: int,
    progress: bool,
    record_rewards: bool,
    mdps: range | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Returns (returns, online wall seconds, online CPU seconds) of ``trained`` on the test MDPs
    ``mdps`` of ``experiment`` (default: every one), with ``record_rewards`` the (n, horizon)
    rewards (else None), and the (n, units) work counts; row ``k`` is MDP ``mdps[k]``."""
    mdps = range(experiment.n_mdps) if mdps is None else mdps
    n = len(mdps)
    workers = n_workers(threads, n)
    returns = np.empty(n, dtype=np.float64)
    online = np.empty(n, dtype=np.float64)
    online_cpu = np.empty(n, dtype=np.float64)
    rewards = np.empty((n, experiment.horizon), dtype=np.float64) if record_rewards else None
    work = np.zeros((n, len(_core.work_units())), dtype=np.uint64)

    def store(
        indices: Sequence[int], r: np.ndarray, s: np.ndarray, c: np.ndarray, w: np.ndarray | None, k: np.ndarray
    ) -> None:
        indices = [i - mdps.start for i in indices]  # rows of this run
        returns[indices] = r
        online[indices] = s
        online_cpu[indices] = c
        work[indices] = k
        if rewards is not None:
            rewards[indices] = w

    if not progress:
        _dispatch(experiment, trained, workers, store, record_rewards, mdps)
        return returns, online, online_cpu, rewards, work
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(f"{trained.label} on {experiment.name}", total=n)

        def store_and_advance(
            indices: Sequence[int], r: np.ndarray, s: np.ndarray, c: np.ndarray, w: np.ndarray | None, k: np.ndarray
        ) -> None:
            store(indices, r, s, c, w, k)
            bar.advance(task, len(indices))

        _dispatch(experiment, trained, workers, store_and_advance, record_rewards, mdps)
    return returns, online, online_cpu, rewards, work


def _dispatch(
    experiment: Any,
    trained: TrainedPythonAgent,
    workers: int,
    store: Callable[[Sequence[int], np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray], None],
    record_rewards: bool,
    mdps: range,
) -> None:
    n = len(mdps)
    if workers == 1:
        for chunk in contiguous_chunks(mdps, max(1, min(n, 50))):
            store(chunk, *_core.run_python_agent(experiment._core, trained.agent, trained.label, chunk, record_rewards))
        return
    payload = pickled_agent(trained.agent, workers)
    setup = (
        experiment.test.to_document(compact=True),
        experiment.n_mdps,
        experiment.gamma,
        experiment.horizon,
        experiment.seed,
    )
    with worker_pool(workers, _worker_init, (setup, payload, trained.label, os.getpid())) as pool:
        parts = contiguous_chunks(mdps, 4 * workers)
        gather_chunks(pool, parts, lambda chunk: pool.submit(_worker_run, chunk, record_rewards), store, trained.label)


def gather_chunks(
    pool: Any, chunks: list[list[int]], submit: Callable[[list[int]], Any], store: Callable[..., None], label: str
) -> None:
    """Submits every chunk to ``pool`` (``submit(chunk)`` returns its future) and stores each result
    (``store(chunk, *result)``) as it comes. On a failure, chunks after the failing one are
    cancelled and earlier ones finish, so the error raised is the one of the lowest failing chunk
    whatever the worker count; a Ctrl-C ends the workers at once."""
    from concurrent.futures import FIRST_EXCEPTION, wait
    from concurrent.futures.process import BrokenProcessPool

    try:
        futures = [submit(chunk) for chunk in chunks]
        failed: int | None = None
        pending = set(range(len(futures)))
        while pending:
            # A short timeout: a wait without one is woken by a finished chunk only, so a Ctrl-C in
            # a script would wait seconds for it.
            finished, _ = wait([futures[k] for k in pending], timeout=0.1, return_when=FIRST_EXCEPTION)
            for future in finished:
                k = futures.index(future)
                pending.discard(k)
                if future.cancelled():
                    continue
                if future.exception() is not None:
                    failed = k if failed is None else min(failed, k)
                    for later in [j for j in pending if j > failed]:
                        futures[later].cancel()
                        pending.discard(later)
                elif failed is None:
                    store(chunks[k], *future.result())
        if failed is not None:
            error = futures[failed].exception()
            if isinstance(error, BrokenProcessPool):
                raise RuntimeError(
                    f"a worker process running agent '{label}' died ({error}); in a script, run the "
                    'experiment under `if __name__ == "__main__":` (each worker imports the script, and without '
                    "the guard runs it again); a class a new process cannot import belongs in a module; or "
                    "pass threads=1"
                ) from None
            raise error  # type: ignore[misc]
    except KeyboardInterrupt:
        # Ctrl-C in a script (the CLI stops through `stopping` instead): the workers ignore SIGINT
        # and would finish their chunks first; end them now, which also frees the semaphores.
        stop_pool(pool)
        raise


def pickled_agent(agent: Any, workers: int) -> bytes:
    """The agent as worker processes receive it, after checking that they can import its class."""
    _check_importable(type(agent), workers)
    try:
        return pickle.dumps(agent, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise TypeError(
            f"agent {type(agent).__name__} cannot run on {workers} worker processes: it is not "
            f"picklable ({exc}); define the class at module level, or pass threads=1"
        ) from exc


def unpickled_agent(payload: bytes, label: str) -> Any:
    """A worker's copy of the agent, or a ``TypeError`` saying how to make its class importable."""
    try:
        return pickle.loads(payload)
    except Exception as exc:
        raise TypeError(
            f"agent '{label}' cannot be loaded in a worker process ({type(exc).__name__}: {exc}); "
            "define its class in an importable module (or a script guarded by if __name__ == '__main__'), "
            "or pass threads=1"
        ) from None


def _check_importable(cls: type, workers: int) -> None:
    """Worker processes are started fresh ('spawn') and import the agent's class by module name: a
    class defined in an interactive session, ``python -c`` or a script read from stdin has no
    module they can import, and they would die on start."""
    import sys

    if cls.__module__ != "__main__":
        return
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file is None or not os.path.isfile(main_file):
        raise TypeError(
            f"agent class {cls.__name__} is defined in an interactive session (module __main__ without a "
            f"file), which the {workers} worker processes cannot import: pass threads=1, or define the class "
            "in a module or a script file"
        )


_WORKER: dict[str, Any] = {}


def die_with_parent(parent: int) -> None:
    """Ends this worker when the process that started it ends, even by ``kill -9`` (which gives it
    no chance to stop its workers): the kernel's parent-death signal on Linux, and a watch on the
    parent's id elsewhere."""
    import signal
    import sys
    import threading
    import time

    # Ctrl-C reaches the whole process group; the parent alone decides what to do with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="bbrl-parent-watch", daemon=True).start()


def _worker_init(setup: tuple[Any, ...], payload: bytes, label: str, parent: int) -> None:
    die_with_parent(parent)
    _WORKER.update(setup=setup, payload=payload, label=label)


def _worker_run(
    indices: list[int], record_rewards: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    if "experiment" not in _WORKER:
        document, n, gamma, horizon, seed = _WORKER["setup"]
        test = from_document(document, "the experiment's test distribution")
        _WORKER["experiment"] = _core.Experiment(test._core, n, gamma, horizon, seed)
    if "agent" not in _WORKER:
        _WORKER["agent"] = unpickled_agent(_WORKER["payload"], _WORKER["label"])
    return _core.run_python_agent(_WORKER["experiment"], _WORKER["agent"], _WORKER["label"], indices, record_rewards)
