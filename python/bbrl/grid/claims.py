"""Claims and locks that let several runners share one output folder: processes on one machine,
Dask workers, SLURM array tasks, on one host or many (the folder on a shared file system).

* A **claim** (``<cell>.claim`` beside the cell's file) says "this cell is being computed". It is
  created with ``link()``, which fails when the name exists (atomic on local file systems and on
  NFS), so at most one runner holds it. Its holder renews it (touches it) every
  :data:`RENEW_SECONDS`; a claim whose writer is known dead (same host, process gone) or that was
  not renewed for :data:`LEASE_SECONDS` is expired and can be taken over. Taking over happens
  under the folder's claims lock, so two runners never both remove the same expired claim.
* A **lock** (:func:`file_lock`) serialises short critical sections across processes (POSIX
  ``lockf``, which NFS forwards to the server) and across threads of one process (a Dask worker
  runs several tasks in threads, and POSIX locks do not exclude threads of the same process).
  The kernel (or the NFS server's lease) drops the lock of a process that dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import stopping
from ..fileio import writer_tag

__all__ = [
    "LEASE_SECONDS",
    "RENEW_SECONDS",
    "Claim",
    "ClaimInfo",
    "file_lock",
    "pid_alive",
    "read_claim",
]

#: A claim not renewed for this long belongs to a runner presumed dead (another host, or a frozen
#: node). Generous against clock skew between hosts and slow shared file systems.
LEASE_SECONDS = 300.0
#: How often a holder renews its claim (a sixth of the lease: five renewals may be missed).
RENEW_SECONDS = LEASE_SECONDS / 6


def _host() -> str:
    return socket.gethostname().replace(".", "-")


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs. A zombie (killed, not yet reaped by its parent)
    does not: ``kill(pid, 0)`` succeeds on it, so its state is read from ``/proc``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # "pid (command) state ...": the command may hold spaces and parentheses.
            return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on ``path`` (created if needed) for the ``with`` block: one thread
    of one process at a time, on any host that sees the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    key = str(path.resolve())
    with _thread_locks_guard:
        local = _thread_locks.setdefault(key, threading.Lock())
    with local:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class ClaimInfo:
    """What a claim file says: who holds it and since when (``age``: seconds since last renewal)."""

    path: Path
    host: str
    pid: int
    token: str
    age: float

    @property
    def expired(self) -> bool:
        """The holder is known dead (same host, no such process) or missed its renewals."""
        if self.host == _host() and not pid_alive(self.pid):
            return True
        return self.age > LEASE_SECONDS

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}, renewed {self.age:.0f} s ago"


def read_claim(path: Path) -> ClaimInfo | None:
    """The claim at ``path``, or ``None`` if there is none. An unreadable claim (it is written
    before it is linked into place, so only foreign files are) counts as expired at once."""
    try:
        stat = path.stat()
        record: dict[str, Any] = json.loads(path.read_text())
        return ClaimInfo(
            path, str(record["host"]), int(record["pid"]), str(record["token"]), time.time() - stat.st_mtime
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return ClaimInfo(path, "?", -1, "?", float("inf"))


class Claim:
    """The claim of one cell by this process: :meth:`acquire`, run the cell, :meth:`release`.

    ``guard`` is the folder-wide lock file under which expired claims are taken over.
    """

    def __init__(self, path: Path, guard: Path) -> None:
        self.path = path
        self.guard = guard
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._undo_key: int | None = None

    def _link(self) -> bool:
        """Creates the claim file whole, or returns ``False`` if one exists."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {"host": _host(), "pid": os.getpid(), "token": self.token, "since": time.time()}
        prefix = f".{self.path.name}.{writer_tag()}"
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(record, handle)
            os.link(tmp, self.path)
            return True
        except FileExistsError:
            return False
        finally:
            Path(tmp).unlink(missing_ok=True)

    def acquire(self) -> ClaimInfo | None:
        """Takes the claim. Returns ``None`` on success, else the live claim that holds the cell.
        An expired claim is removed (under the guard lock, re-read there) and taken over."""
        if self._link():
            self._start_renewing()
            return None
        with file_lock(self.guard):
            holder = read_claim(self.path)
            if holder is not None and not holder.expired:
                return holder
            if holder is not None:
                self.path.unlink(missing_ok=True)
            if not self._link():  # pragma: no cover - creation does not need the guard; a race lost
                return read_claim(self.path)
        self._start_renewing()
        return None

    def _start_renewing(self) -> None:
        # A process stopped at once (Ctrl-C: os._exit) runs no finally block: the claim is
        # removed then, or the cell would look held by a dead runner until the next run.
        self._undo_key = stopping.register(self._remove_if_ours)

        def renew() -> None:
            while not self._stop.wait(RENEW_SECONDS):
                with contextlib.suppress(OSError):
                    os.utime(self.path)

        self._renewer = threading.Thread(target=renew, name="bbrl-claim", daemon=True)
        self._renewer.start()

    def release(self) -> None:
        """Stops renewing and removes the claim if it is still ours (not taken over meanwhile)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        self._remove_if_ours()
        if self._undo_key is not None:
            stopping.forget(self._undo_key)

    def _remove_if_ours(self) -> None:
        holder = read_claim(self.path)
        if holder is not None and holder.token == self.token:
            self.path.unlink(missing_ok=True)
