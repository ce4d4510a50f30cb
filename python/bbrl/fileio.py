"""File helpers shared by every writer: atomic replace, so nothing half-written is ever left on disk."""

from __future__ import annotations

import json
import os
import socket
import stat
import tempfile
from pathlib import Path
from typing import Any

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


def json_document_bytes(document: Any) -> bytes:
    """``document`` as the UTF-8 JSON text of a file, ending with a newline: objects and lists of
    objects indented one space per level for a reader, every list that holds no object or list on
    one line. A distribution's tables hold thousands of numbers: one per line, as ``indent=1``
    writes them, multiplied a file's size and took Python's slow indenting encoder (seconds for
    Taxi's tables), where one line takes the fast one."""
    return ("".join(_json_pieces(document, 0)) + "\n").encode()


def _json_pieces(value: Any, depth: int) -> Any:
    """The JSON text of ``value`` at nesting ``depth``, in pieces (see :func:`json_document_bytes`)."""
    inner, outer = "\n" + " " * (depth + 1), "\n" + " " * depth
    if isinstance(value, dict) and value:
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ("," if i else "") + inner + json.dumps(str(key)) + ": "
            yield from _json_pieces(item, depth + 1)
        yield outer + "}"
    elif isinstance(value, (list, tuple)) and any(isinstance(x, (dict, list, tuple)) for x in value):
        yield "["
        for i, item in enumerate(value):
            yield ("," if i else "") + inner
            yield from _json_pieces(item, depth + 1)
        yield outer + "]"
    else:
        yield json.dumps(value)


#: The largest file a JSON document reader accepts (bytes): every document bbrl writes is far
#: smaller (a results folder's records, a calibration, an agent's trained state), so a larger one is
#: refused before it is parsed, which bounds what a planted file costs to read.
MAX_DOCUMENT_BYTES = 256 * 2**20

#: The JSON types a document's field may be asked to have, as they are named in errors.
_JSON_KINDS: dict[str, tuple[type, ...]] = {
    "an object": (dict,),
    "a list": (list,),
    "a string": (str,),
    "an integer": (int,),
    "a number": (int, float),
    "true or false": (bool,),
}


#: What a path that is not a regular file is, by the test of its mode (``os.stat``'s ``st_mode``).
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def path_kind(mode: int) -> str:
    """What a path of mode ``mode`` (``os.stat(path).st_mode``) is, as messages name it: ``"a
    regular file"``, ``"a directory"``, ``"a FIFO (named pipe)"``, ``"a character device"``..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def regular_file(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a Path, checked to be a regular file (a link to one is fine) before it is
    opened: the one check of every reader of a file the user names, so that only a missing path is
    said "not found", and a FIFO is never opened (reading one would wait for a writer).

    Raises:
        FileNotFoundError: nothing at ``path`` (the message: ``{what} 'path' not found``).
        ValueError: naming the path and what it is (``... is a FIFO (named pipe), not a regular
            file``, a directory, a device), or why it cannot be looked at (no permission).
    """
    file = Path(path)
    try:
        mode = os.stat(file).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"{what} {str(file)!r} not found") from None
    except OSError as exc:
        raise ValueError(f"{what} {str(file)!r} cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = path_kind(mode)
        raise ValueError(f"{what} {str(file)!r} is {kind}, not a regular file")
    return file


def read_file_bytes(path: str | os.PathLike[str], what: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of the file ``path`` (a ``what``, e.g. ``"configuration"``), at most ``limit``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file, for a path that is not a regular file (a directory, a FIFO, a
            device: :func:`regular_file`), a file that cannot be read (no permission) or is larger
            than ``limit`` bytes.
    """
    file = regular_file(path, what)
    try:
        with open(file, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {str(file)!r} not found") from None
    except OSError as exc:
        raise ValueError(f"{what} {str(file)!r} cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ValueError(f"{what} {str(file)!r} is larger than {limit >> 20} MiB: not a file bbrl reads")
    return data


def read_text_file(path: str | os.PathLike[str], what: str, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """The UTF-8 text of the file ``path``; raises as :func:`read_file_bytes` does, and ValueError
    naming the file and the byte offset for a file that is not UTF-8 text."""
    data = read_file_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start})") from None


def read_json_document(path: str | os.PathLike[str], what: str, kind: str = "an object") -> Any:
    """The JSON document of the file ``path`` (a ``what``, e.g. ``"race record"``), whose top level
    is of ``kind`` (one of ``"an object"``, ``"a list"``...): the one reader of bbrl's JSON files,
    so that every one of them fails the same way.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file, for a path that is not a regular file (a directory, a FIFO, a
            device), a file that cannot be read (no permission), is larger than
            :data:`MAX_DOCUMENT_BYTES`, is not UTF-8 JSON, or whose top level is of another kind.
    """
    return parse_json_document(read_file_bytes(path, what), f"{what} {str(Path(path))!r}", kind)


def parse_json_document(data: bytes, where: str, kind: str = "an object") -> Any:
    """The JSON document in ``data``, read from ``where`` (the file, named in errors), whose top
    level is of ``kind``; raises ValueError as :func:`read_json_document` does."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{where}: invalid JSON (truncated or damaged?): {reason}") from None
    return check_kind(document, kind, where)


def check_kind(value: Any, kind: str, where: str) -> Any:
    """``value`` when it is of the JSON ``kind`` (see :func:`read_json_document`); otherwise a
    ValueError naming ``where`` (the file, and the field). ``true``/``false`` are not numbers."""
    types = _JSON_KINDS[kind]
    if isinstance(value, types) and (kind == "true or false" or not isinstance(value, bool)):
        return value
    shown = repr(value) if isinstance(value, (int, float, str, bool)) or value is None else type(value).__name__
    raise ValueError(f"{where}: expected {kind}, got {shown[:60]}")


def json_field(document: dict[str, Any], key: str, kind: str, where: str, default: Any = ...) -> Any:
    """The field ``key`` of a JSON object read from ``where`` (the file), checked to be of ``kind``;
    ``default`` when it is absent (without a default, an absent field is an error naming it).

    Raises:
        ValueError: naming the file and the field.
    """
    if key not in document:
        if default is ...:
            raise ValueError(f"{where}: missing field {key!r}")
        return default
    return check_kind(document[key], kind, f"{where}: field {key!r}")


def read_table(path: str | os.PathLike[str], what: str) -> Any:
    """The polars frame of a Parquet (``.parquet``) or, for ``.csv``, CSV file ``path`` (a ``what``,
    e.g. ``"log file"``): the one reader of tables a user gives bbrl.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file, for a path that is not a regular file (:func:`regular_file`)
            or a file that is not a readable table of that format.
    """
    import polars as pl

    file = regular_file(path, what)
    try:
        return pl.read_csv(file) if file.suffix.lower() == ".csv" else pl.read_parquet(file)
    except (Exception, pl.exceptions.PanicException) as exc:  # polars: several error types, or a panic
        reason = (str(exc).strip().splitlines() or [""])[0][:200]
        kind = "CSV" if file.suffix.lower() == ".csv" else "Parquet"
        raise ValueError(
            f"{what} {str(file)!r} is not a readable {kind} table ({type(exc).__name__}: {reason})"
        ) from None


def table_problem(frame: Any, columns: dict[str, str]) -> str | None:
    """What makes ``frame`` other than ``columns`` (name: ``"integer"``, ``"number"`` or
    ``"string"``) say, naming the column and, for a missing value, its first row; ``None`` if
    nothing. Columns that are absent are the caller's to check."""
    import polars as pl

    for name, kind in columns.items():
        if name not in frame.columns:
            continue
        dtype = frame.schema[name]
        fits = {"integer": dtype.is_integer(), "number": dtype.is_numeric(), "string": dtype == pl.String}[kind]
        if not fits:
            return f"column {name!r} is of type {dtype}, expected {kind}s"
        nulls = frame[name].is_null()
        if nulls.any():
            return f"column {name!r} has no value in row {int(nulls.arg_true()[0])}"
    return None
