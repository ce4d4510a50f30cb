"""Replay runs of a Python agent on worker processes.

A Python agent holds the GIL, so the core runs its ``runs=`` one after the other in this process.
With several workers, each process runs a contiguous block of run indices through the same core
call (``first_run``): run ``i`` uses the streams of run ``i`` wherever it runs, so the results are
bit-identical whatever the number of workers. Workers are started fresh ('spawn': the parent may
run rayon threads, which ``fork`` would not carry over) and rebuild the trained agent and the log
from pickles; the agent must therefore pickle (a class defined at module level of an importable
module or of a script run as ``__main__``).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from .. import _core
from ..agents import Stepper, TrainedPythonAgent
from ..distributions import from_document
from ..envs import FiniteEnv
from ..pools import worker_pool
from ..protocol.workers import n_workers

__all__ = ["run_blocks"]


def _blocks(n: int, n_blocks: int) -> list[tuple[int, int]]:
    """(first, count) of contiguous blocks of range(n), as even as possible."""
    n_blocks = max(1, min(n_blocks, n))
    bounds = [round(k * n / n_blocks) for k in range(n_blocks + 1)]
    return [(bounds[k], bounds[k + 1] - bounds[k]) for k in range(n_blocks)]


def run_blocks(
    call: str,
    trained: TrainedPythonAgent,
    target: Any,
    options: dict[str, Any],
    asked: bool,
    local: Callable[[dict[str, Any]], Any],
) -> list[Any]:
    """The core call ``call`` for ``options["runs"]`` runs of the Python agent ``trained``:
    ``"evaluate"`` on the :class:`~bbrl.replay.Dataset` ``target``, or ``"online"`` on the
    environment that the :class:`bbrl.envs.FiniteEnv` arguments in the dict ``target`` build. The
    runs are spread in blocks over ``options["threads"]`` worker processes (the count
    :func:`bbrl.threads.worker_threads` gave; ``asked``: the user gave it, else it is the default,
    one per core); this process alone when that is one; ``local(options)`` runs a block here.
    Returns one entry per run, in run order."""
    runs = int(options["runs"])
    workers = n_workers(options["threads"], runs)
    if workers == 1:
        return list(local(options))
    try:
        if not _importable(type(trained.agent)):
            raise TypeError("its class is defined in an interactive session, which new processes cannot import")
        payload = pickle.dumps(
            (
                trained.spec,
                trained.agent,
                trained.prior.to_document(compact=True),
                trained.gamma,
                trained.horizon,
                trained.seed,
            ),
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        target_payload = pickle.dumps(target, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        # (the environment and the log always pickle: a failure here is the agent's)
        if not asked:
            # Not asked for: an agent that cannot travel runs here (same results, more time).
            return list(local(options))
        raise TypeError(
            f"agent {type(trained.agent).__name__} cannot run on {workers} worker processes ({exc}); define the "
            "class at module level of a module or a script file, or pass threads=1"
        ) from exc
    blocks = _blocks(runs, workers)
    with worker_pool(workers) as pool:
        futures = [
            pool.submit(_worker_block, call, payload, target_payload, {**options, "first_run": first, "runs": count})
            for first, count in blocks
        ]
        # In run order: the error reported is the one of the lowest failing block.
        out: list[Any] = []
        for future in futures:
            out.extend(future.result())
        return out


def _importable(cls: type) -> bool:
    """Whether a fresh process can import ``cls`` by name (not a class of ``python -c``, an
    interactive session or a script read from stdin)."""
    import os
    import sys

    if cls.__module__ != "__main__":
        return True
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is not None and os.path.isfile(main_file)


def _worker_block(call: str, payload: bytes, target_payload: bytes, options: dict[str, Any]) -> list[Any]:
    """One block of runs in a worker process."""
    spec, agent, prior, gamma, horizon, seed = pickle.loads(payload)
    trained = TrainedPythonAgent(spec, agent, from_document(prior, "replay worker"), gamma, horizon, seed, 0.0)
    target = pickle.loads(target_payload)
    handle = Stepper(trained)._core
    if call == "evaluate":
        return list(_core.replay_evaluate(handle, True, target._core, options))
    return list(_core.replay_online(handle, True, FiniteEnv(**target)._core, options))
