"""Names a package exports but imports only when first used (PEP 562's module ``__getattr__``).

``import bbrl`` and ``bbrl --help`` would otherwise import polars, matplotlib and scipy through
the packages' ``__init__`` files, a third of a second before the first line of work. A package
imports its names under ``if TYPE_CHECKING:`` for type checkers, and in the ``else:`` branch
lists them here for the interpreter: a type checker that saw the ``__getattr__`` would accept
any name. tests/core/test_lazy_imports.py checks that the two lists and ``__all__`` agree.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(
    package: str, submodules: Iterable[str] = (), attributes: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``).

    Args:
        package: the package's dotted name.
        submodules: the submodules it exports by name (``"agents"`` for ``bbrl.agents``).
        attributes: each exported name that a submodule defines, mapped to that submodule relative
            to the package (``{"Experiment": ".protocol"}``).
    """
    modules = frozenset(submodules)
    names = dict(attributes or {})

    def lazy_getattr(name: str) -> Any:
        if name in modules:
            return importlib.import_module(f"{package}.{name}")
        source = names.get(name)
        if source is None:
            # Any other submodule too, as when the package imported every module eagerly and code
            # could reach `bbrl.grid.store` after `import bbrl.grid` alone.
            if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source, package), name)
        # Kept in the package's namespace: the next lookup finds it without calling __getattr__.
        setattr(sys.modules[package], name, value)
        return value

    def lazy_dir() -> list[str]:
        return sorted({*vars(sys.modules[package]), *modules, *names})

    return lazy_getattr, lazy_dir
