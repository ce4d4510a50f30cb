"""How many threads (or, for a Python agent, worker processes) a parallel call starts: one rule for
every entry point that takes ``threads=`` (``--threads`` on the command line).

* ``threads`` is ``None`` (every core: ``RAYON_NUM_THREADS`` when set, else the cores this process
  may run on) or a whole number >= 1; anything else is a ``ValueError`` naming the argument.
* Never more threads than work items (the MDPs of an experiment, the runs of an episodic
  experiment or a replay evaluation, the states of a value-error reference): a thread with no item
  would only be started and joined.
* More threads than the cores this process may run on (its CPU affinity: ``taskset``, cgroups, a
  SLURM allocation) is allowed, with a :class:`ThreadCountWarning`: the threads share the cores,
  and the run proceeds. The message does not depend on the work, so the default warnings filter
  shows it once per process for one count (the command line prints it as one line on stderr).

Results never depend on the count: every parallel loop gives item ``i`` its own streams. The core
applies the same cap to the pools it builds (``platform/threads.rs``), so a count that reaches it
some other way starts no more threads than items either.
"""

from __future__ import annotations

import numbers
import os
import warnings
from typing import Any

__all__ = ["ThreadCountWarning", "default_threads", "usable_cores", "worker_threads"]


class ThreadCountWarning(UserWarning):
    """More threads were asked for than the cores this process may run on."""


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (``os.process_cpu_count`` on Python
    3.13+, ``os.sched_getaffinity`` before), else every core of the machine."""
    if hasattr(os, "process_cpu_count"):
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1  # pragma: no cover - neither (not Linux, Python < 3.13)


def default_threads() -> int:
    """The count ``threads=None`` stands for: ``RAYON_NUM_THREADS`` when it is a whole number >= 1
    (rayon's own setting, honoured as rayon would), else :func:`usable_cores`."""
    text = os.environ.get("RAYON_NUM_THREADS", "").strip()
    if text.isdigit() and int(text) >= 1:
        return int(text)
    return usable_cores()


def worker_threads(threads: Any, items: int, name: str = "threads") -> int:
    """The threads a parallel call over ``items`` work items starts for ``threads`` (the module's rule):
    ``min(threads, items)``, or ``min(default_threads(), items)`` for ``None``; at least 1.

    Raises:
        ValueError: ``threads`` is not ``None`` or a whole number >= 1 (a bool, a float, a string, 0).

    Warns:
        ThreadCountWarning: ``threads`` is more than :func:`usable_cores`.
    """
    if threads is None:
        return max(1, min(default_threads(), int(items)))
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise ValueError(f"{name} must be a whole number >= 1 (or None for every core), got {threads!r}")
    if threads < 1:
        raise ValueError(f"{name} must be >= 1 (or None for every core), got {threads}")
    threads = int(threads)
    cores = usable_cores()
    if threads > cores:
        # stacklevel=1: one place, so the default filter shows the warning once per count.
        warnings.warn(
            f"{threads} threads asked for, more than the {cores} cores this process may run on: the run "
            "proceeds with at most one thread per work item, the threads sharing the cores (results do "
            "not depend on the count)",
            ThreadCountWarning,
            stacklevel=1,
        )
    return max(1, min(threads, int(items)))
