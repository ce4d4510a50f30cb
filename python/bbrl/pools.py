"""Pools of worker processes that a stop leaves nothing behind of.

Python agents run on spawned worker processes (the parent may run rayon threads, which a fork
would not carry over). A command line stopped at once (Ctrl-C, SIGTERM: :mod:`bbrl.stopping`)
runs no ``finally`` block, so a pool must be ended by the stop itself, or multiprocessing's
resource tracker reports its queues' semaphores as leaked. :func:`worker_pool` registers that
before the pool exists (its constructor makes the semaphores) and withdraws it only once the pool
is shut down (a shutdown waits for the workers to exit: a stop during that wait used to leak one
pool's five semaphores).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import stopping
from .modules import import_files, imported_files

__all__ = ["stop_pool", "worker_pool"]


@contextmanager
def worker_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> Iterator[Any]:
    """A ``ProcessPoolExecutor`` of ``workers`` spawned processes, shut down on leaving the block
    (pending work cancelled) and ended at once (:func:`stop_pool`) by a stop of the command line."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pools: list[Any] = []
    undo = stopping.register(lambda: [_end_before_exit(pool) for pool in pools])
    try:
        pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(imported_files(), initializer, initargs),
        )
        pools.append(pool)
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        stopping.forget(undo)


def _start_worker(
    files: list[tuple[str, str]], initializer: Callable[..., None] | None, initargs: tuple[Any, ...]
) -> None:
    """A worker's first step: the user's agent files its parent imported (``sys.path`` is not
    carried over for them), then the pool's own initializer."""
    import_files(files)
    if initializer is not None:
        initializer(*initargs)


def stop_pool(pool: Any) -> None:
    """Ends the workers at once (they may ignore SIGINT or be inside a long call) and shuts the pool
    down, which closes its queues and so unlinks their semaphores."""
    import gc

    for process in list((pool._processes or {}).values()):
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)
    gc.collect()


def _end_before_exit(pool: Any) -> None:
    """What a stop of the command line does just before ``os._exit``: ends the workers and runs
    multiprocessing's own exit finalizers, which unlink the queues' semaphores and tell the
    resource tracker (a normal exit runs them from ``atexit``, which ``os._exit`` skips). It does
    not wait for the pool's threads: under load that wait outlasted the stop's time limit and the
    semaphores were reported as leaked."""
    import threading
    from multiprocessing import util

    # The pool's own threads may fail as its queues close under them; the process ends in a moment
    # and their tracebacks would only confuse the stop's one line.
    threading.excepthook = lambda _args: None
    for process in list((pool._processes or {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    util._run_finalizers(0)
