"""The typed public API: the native module's stub names exactly what the module exports."""

from __future__ import annotations

import ast
from pathlib import Path

import bbrl
from bbrl import _core


def test_core_stub_matches_the_native_module() -> None:
    stub = Path(bbrl.__file__).with_name("_core.pyi")
    assert stub.is_file(), "the wheel must ship _core.pyi"
    assert Path(bbrl.__file__).with_name("py.typed").is_file(), "the wheel must ship py.typed"
    tree = ast.parse(stub.read_text())
    declared = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    declared |= {node.target.id for node in tree.body if isinstance(node, ast.AnnAssign)}
    declared.discard("__version__")
    exported = {name for name in dir(_core) if not name.startswith("_")}
    assert declared == exported
