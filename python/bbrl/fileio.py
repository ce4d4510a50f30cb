"""File helpers shared by every writer: atomic replace, so nothing half-written is ever left on disk."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

#: Permissions of every file written here, before the umask: readable (and writable) by the group,
#: as a file created with ``open()`` would be. ``mkstemp`` creates 0600 files, which the rename
#: would keep: results then cannot be read by the rest of a group sharing a cluster folder.
FILE_MODE = 0o666


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it, racing other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def check_suffix(path: str | os.PathLike[str], suffix: str, what: str) -> Path:
    """``path`` as a Path, refused when its suffix names another format than ``suffix`` (a path
    without a suffix is fine): ``x.csv`` must not receive Parquet.

    Raises:
        ValueError: naming the path and the format written.
    """
    path = Path(path)
    if path.suffix and path.suffix.lower() != suffix:
        raise ValueError(f"{path}: {what} is written as {suffix[1:].title()}; give a {suffix} file name")
    return path


_written = [0]


def files_written() -> int:
    """How many files :func:`write_atomic` has written in this process (what a stop keeps)."""
    return _written[0]


def writer_tag() -> str:
    """``w-<host>-<pid>-``: names the writing process in its temporary files."""
    return f"w-{socket.gethostname().replace('.', '-')}-{os.getpid()}-"


def write_atomic(path: str | os.PathLike[str], data: bytes, *, tag: str | None = None) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename it.

    A crash or a kill at any point leaves either the old file or the new one, never a mix.
    The temporary file is ``.<name>.<tag><random>.tmp``: a writer that may be killed (``kill -9``
    leaves its temporary file behind) passes a ``tag`` naming itself, e.g. its host and process id,
    so that a later run can tell stale temporary files from those of a writer still at work.
    By default the tag is :func:`writer_tag`, so every temporary file names its writer.
    """
    if tag is None:
        tag = writer_tag()
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"folder {str(folder)!r} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{tag}", suffix=".tmp", dir=folder)
    except OSError as exc:  # named after the file asked for, not the temporary one
        raise OSError(exc.errno, f"cannot write {str(target)!r}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE & ~_umask())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _written[0] += 1
    return target
