"""What must be undone when the command line ends the process at once (Ctrl-C, SIGTERM).

The command line stops with ``os._exit``, which runs no ``finally`` block of the threads it
abandons and no ``atexit`` handler. Whatever must not outlive the process (a grid cell's claim, a
pool of worker processes and its semaphores) registers how to undo it with :func:`register` for as
long as it is held (and :func:`forget` once it undid it itself); :func:`undo_all` runs those
undoings, newest first, just before the exit.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable

__all__ = ["forget", "register", "undo_all"]

_undoings: dict[int, Callable[[], None]] = {}
_lock = threading.Lock()
_keys = itertools.count()


def register(undo: Callable[[], None]) -> int:
    """Runs ``undo`` if the process is stopped at once before :func:`forget` of the key returned."""
    key = next(_keys)
    with _lock:
        _undoings[key] = undo
    return key


def forget(key: int) -> None:
    """Withdraws the undoing registered under ``key`` (the holder undid its work itself)."""
    with _lock:
        _undoings.pop(key, None)


def undo_all(timeout: float = 2.0) -> None:
    """Runs every registered undoing once, newest first, in a helper thread given at most
    ``timeout`` seconds in all (a stop must stay prompt); a failing one does not stop the others."""
    with _lock:
        undoings = [_undoings[key] for key in sorted(_undoings, reverse=True)]
        _undoings.clear()
    if not undoings:
        return

    def run() -> None:
        for undo in undoings:
            with contextlib.suppress(Exception):
                undo()

    helper = threading.Thread(target=run, name="bbrl-undo", daemon=True)
    helper.start()
    helper.join(timeout)
