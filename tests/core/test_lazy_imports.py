"""Importing bbrl, and building the command line, import none of the heavy libraries until a name
that needs them is used; every name a package exports lazily is still there, the same object as
before, for the interpreter, ``dir()`` and type checkers alike."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bbrl

PACKAGE = Path(bbrl.__file__).resolve().parent

#: What ``import bbrl`` (and the other imports below) must leave unimported.
HEAVY = ("polars", "matplotlib", "scipy", "rich", "pandas", "pyarrow")

#: Each statement, run alone in a fresh interpreter, and the heavy libraries it may import.
STATEMENTS = {
    "import bbrl": (),
    "import bbrl.agents": (),
    "import bbrl.grid": (),
    "import bbrl.cli": (),
    "import bbrl.cli; bbrl.cli.build_parser()": (),
    "import bbrl; bbrl.Experiment; bbrl.agents.PSRL; bbrl.FDM": ("polars",),
}


def _imported_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {name.partition(".")[0] for name in json.loads(out.stdout)}


@pytest.mark.parametrize("statement", STATEMENTS)
def test_an_import_leaves_the_heavy_libraries_unimported(statement: str) -> None:
    imported = _imported_after(statement) & set(HEAVY)
    assert imported <= set(STATEMENTS[statement]), f"{statement!r} imported {sorted(imported)}"


def test_using_a_lazy_name_imports_what_it_needs() -> None:
    # The last statement above may import polars: check it does, so that the check above can fail.
    assert "polars" in _imported_after("import bbrl; bbrl.Experiment")


def _lazy_packages() -> list[str]:
    """The packages whose ``__init__`` defines its exports with bbrl.lazy."""
    found = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if "data" in init.relative_to(PACKAGE).parts or "_attach(" not in init.read_text():
            continue
        parts = init.parent.relative_to(PACKAGE.parent).parts
        found.append(".".join(parts))
    return found


def _type_checking_imports(package: str) -> dict[str, str]:
    """The names imported under ``if TYPE_CHECKING:`` in the package's ``__init__`` (what type
    checkers see), each with the absolute name of the module it comes from."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[arg-type]
    names: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            assert isinstance(statement, ast.ImportFrom), ast.dump(statement)
            source = importlib.util.resolve_name("." * statement.level + (statement.module or ""), package)
            for alias in statement.names:
                names[alias.asname or alias.name] = source
    return names


def _eager_imports(package: str) -> set[str]:
    """Names the ``__init__`` binds by a top-level import from the package (not lazily), private
    ones left out."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text())  # type: ignore[arg-type]
    return {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level > 0
        for alias in node.names
        if not (alias.asname or alias.name).startswith("_")
    }


def test_the_lazy_packages_are_found() -> None:
    assert {"bbrl", "bbrl.grid", "bbrl.envs", "bbrl.analysis"} <= set(_lazy_packages())


@pytest.mark.parametrize("package", _lazy_packages())
def test_every_lazy_export_is_the_name_type_checkers_see(package: str) -> None:
    module = importlib.import_module(package)
    seen = _type_checking_imports(package)
    assert set(module.__all__) == set(seen) | _eager_imports(package)
    assert set(module.__all__) <= set(dir(module))
    for name, source in seen.items():
        value = getattr(module, name)
        if source == package:  # a submodule (`from . import x`)
            assert value is importlib.import_module(f"{package}.{name}")
        else:
            assert value is getattr(importlib.import_module(source), name), f"{package}.{name}"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"bbrl\.grid.*no_such_name"):
        importlib.import_module("bbrl.grid").no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from bbrl import no_such_name", {})


def test_the_command_line_keeps_blas_and_polars_to_one_thread_unless_told() -> None:
    # A multi-threaded OpenBLAS's idle workers spin after each call, and polars' pool costs more
    # than it saves on small tables: the command line, whose NumPy and polars work is small, asks
    # for one thread before they load, unless the user set a count. It can only while building the
    # parser leaves them unloaded.
    assert not {"numpy", "polars"} & _imported_after("import bbrl.cli; bbrl.cli.build_parser()")
    code = (
        "import os, sys\n"
        "from bbrl.cli import app\n"
        "app._one_thread_pools()\n"
        "import numpy, polars\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('MKL_NUM_THREADS'), polars.thread_pool_size())"
    )
    names = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "POLARS_MAX_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in names}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1", "1"]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**env, "OPENBLAS_NUM_THREADS": "4", "POLARS_MAX_THREADS": "2"},
    )  # fmt: skip
    assert out.stdout.split() == ["4", "1", "2"], out.stderr
