"""Loading the class of a Python agent that a configuration names (``file.py:Class`` or ``module:Class``)."""

from __future__ import annotations

import importlib
from pathlib import Path

from .. import agents
from ..fileio import regular_file
from ..modules import import_file

__all__ = ["load_python_agent_class"]


def load_python_agent_class(reference: str, base: Path | None) -> type:
    """The class of a Python agent named ``"file.py:Class"`` (a path relative to ``base``, the
    configuration's folder) or ``"package.module:Class"``: a reference the user gives (a
    configuration named on the command line, ``--agent-class``), never one read from a results
    folder or an agent file. A file is imported with :func:`bbrl.modules.import_file` (``sys.path``
    restored; worker processes import it again).

    A relative path (``../agents/x.py:X``) is a file path from ``base`` (the current folder when
    None, or on the command line); a module name must be absolute: ``.x:X`` has no package to be
    relative to.

    Raises:
        ValueError: a reference of another form, a relative module name, a module or file that
            cannot be imported (a missing file: not found), or a name that is not an agent class.
    """
    module_name, sep, class_name = reference.rpartition(":")
    if not sep or not module_name or not class_name:
        raise ValueError(f"class must be 'file.py:ClassName' or 'module:ClassName', got {reference!r}")
    if module_name.endswith(".py"):
        file = Path(module_name)
        if not file.is_absolute() and base is not None:
            file = base / file
        try:
            regular_file(file, "Python agent file")  # a directory or a FIFO is said so, not "not found"
        except FileNotFoundError as exc:
            raise ValueError(str(exc)) from None
        module = import_file(file)
    else:
        if module_name.startswith("."):
            raise ValueError(
                f"{reference!r}: relative module names are not supported: write a path ending in .py or an "
                "absolute module name"
            )
        if "/" in module_name or "\\" in module_name:
            raise ValueError(f"{reference!r}: {module_name!r} is not a module name: a file path ends in .py")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, agents.Agent)):
        raise ValueError(f"{reference!r} is not a subclass of bbrl.agents.Agent")
    return cls
