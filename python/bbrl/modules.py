"""Importing a Python file the user names (a grid configuration's agent class, ``--agent-class``),
with ``sys.path`` left as it was, and the record of such files for the worker processes bbrl
starts (they import the same files before they unpickle an agent of these classes).

Only what the user names on a command line or in Python comes here: bbrl never imports a module
that a file it reads names (an agent file, a results folder).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

__all__ = ["import_file", "import_files", "imported_files"]

#: module name -> the file it was imported from, for the worker processes.
_FILES: dict[str, str] = {}


def import_file(file: Path) -> ModuleType:
    """The module of ``file``, imported under its stem with its folder on ``sys.path`` only while
    it is imported (so it may import its sibling files at its top).

    Raises:
        ValueError: when another module of that name is already imported, or the import fails.
    """
    path = file.resolve()
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None:
        existing_file = getattr(existing, "__file__", None)
        if existing_file is not None and Path(existing_file).resolve() == path:
            return existing
        if name not in _FILES:  # a module of the interpreter or the user's own: never shadowed
            raise ValueError(f"cannot import {str(file)!r}: a module named {name!r} is already imported from elsewhere")
        del sys.modules[name]  # a file of that name that an earlier configuration named: this one now
    saved = list(sys.path)
    sys.path.insert(0, str(path.parent))
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise ValueError(f"cannot import {str(file)!r}: {exc}") from None
    finally:
        sys.path[:] = saved
    _FILES[name] = str(path)
    return module


def imported_files() -> list[tuple[str, str]]:
    """The (module name, file) pairs :func:`import_file` imported in this process."""
    return list(_FILES.items())


def import_files(files: Iterable[tuple[str, str]]) -> None:
    """Imports in this (worker) process the files its parent imported with :func:`import_file`."""
    for name, file in files:
        if name not in sys.modules:
            import_file(Path(file))
