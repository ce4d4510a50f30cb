"""Loading the class of a Python agent that a configuration names (``file.py:Class`` or ``module:Class``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from .. import agents

__all__ = ["load_python_agent_class"]


def load_python_agent_class(reference: str, base: Path | None) -> type:
    """The class of a Python agent named ``"file.py:Class"`` (a path relative to the configuration's
    folder) or ``"package.module:Class"``. The file's folder is put on ``sys.path`` and the file
    imported by name, so worker processes and saved agents can import it again."""
    module_name, sep, class_name = reference.rpartition(":")
    if not sep or not module_name or not class_name:
        raise ValueError(f"class must be 'file.py:ClassName' or 'module:ClassName', got {reference!r}")
    if module_name.endswith(".py"):
        file = Path(module_name)
        if not file.is_absolute() and base is not None:
            file = base / file
        if not file.is_file():
            raise ValueError(f"Python agent file {str(file)!r} not found")
        folder = str(file.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_name = file.stem
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, agents.Agent)):
        raise ValueError(f"{reference!r} is not a subclass of bbrl.agents.Agent")
    return cls
