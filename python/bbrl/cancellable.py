"""A long call into the Rust core that Ctrl-C cancels.

Python runs signal handlers only in the main thread, between bytecodes: a Rust call made from the
main thread would hold a Ctrl-C until it returns. :func:`run_cancellable` makes the call (which
releases the GIL) in a worker thread while this thread only waits, so a KeyboardInterrupt is
raised here at once; it then cancels the call's :class:`bbrl._core.Progress`, which the core
honours between its units of work (runs, trajectories), waits for the call to return and re-raises:
nothing of the call still runs once the exception leaves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from . import _core

__all__ = ["run_cancellable"]

T = TypeVar("T")

#: Seconds between two looks at the worker (and two calls of ``on_poll``).
POLL_SECONDS = 0.1


def run_cancellable(call: Callable[[_core.Progress], T], name: str, on_poll: Callable[[int], None] | None = None) -> T:
    """``call(progress)`` run in a worker thread named ``name``, its result returned, its exception raised.

    Args:
        call: the core call, given the :class:`bbrl._core.Progress` it must report to and honour.
        name: the worker thread's name.
        on_poll: called in this thread about every :data:`POLL_SECONDS` seconds with the units done
            so far (``progress.done()``), e.g. to draw a bar.

    Any exception in this thread while it waits (Ctrl-C's KeyboardInterrupt, or one raised by
    ``on_poll``) cancels the call, waits for it to return (the unit of work in flight ends first)
    and is raised again.
    """
    progress = _core.Progress()
    outcome: dict[str, Any] = {}
    # Waited for through an Event, not Thread.join: on CPython 3.11 a join that Ctrl-C interrupts
    # may mark the thread as stopped while it still runs (bpo-45274's handling releases the lock
    # the live thread holds), and every later join then returns at once.
    finished = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = call(progress)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=work, name=name, daemon=True).start()
    try:
        while not finished.is_set():
            finished.wait(POLL_SECONDS)
            if on_poll is not None:
                on_poll(progress.done())
    except BaseException:
        progress.cancel()
        finished.wait()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
