"""The house's rules, checked on the code itself: no import cycle between files or packages of the
Python package, no module importing a private name of another, and no cycle between the files of
the Rust core (``use`` paths outside test modules). A new arrow that closes a loop fails here."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import bbrl

PACKAGE = Path(bbrl.__file__).resolve().parent
CORE = Path(__file__).resolve().parents[2] / "rust" / "core" / "src"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts}


def _known(name: str) -> str | None:
    """The module of the package a dotted name lies in (its longest known prefix)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts) or None


def _import_module_literal(node: ast.Call) -> bool:
    """``import_module("bbrl....")`` (or ``importlib.import_module``) with a literal name."""
    called = getattr(node.func, "attr", getattr(node.func, "id", ""))
    return called == "import_module" and bool(node.args) and isinstance(node.args[0], ast.Constant)


def _python_imports() -> tuple[dict[str, set[str]], list[str]]:
    """Every import of every module (lazy ones and literal import_module strings included), as
    module -> imported modules, and the private names imported across modules."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    private = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            found: list[tuple[str, str | None]] = []
            if isinstance(node, ast.Import):
                found = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    found.append((full, None) if full in MODULES or full == "bbrl._core" else (base, a.name))
            elif isinstance(node, ast.Call) and _import_module_literal(node):
                found = [(str(node.args[0].value), None)]  # type: ignore[attr-defined]
            for module, imported in found:
                if not module.startswith("bbrl") or module == "bbrl._core":
                    continue
                if imported and imported.startswith("_") and not imported.startswith("__"):
                    private.append(f"{name} imports {module}.{imported}")
                target = _known(module)
                if target and target != name:
                    graph[name].add(target)
    return graph, private


def test_python_modules_and_packages_form_no_cycle_and_import_no_private_name():
    graph, private = _python_imports()
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the loop
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        top = ".".join(module.split(".")[:2])
        packages.setdefault(top, set()).update(".".join(t.split(".")[:2]) for t in targets)
        packages[top].discard(top)
    graphlib.TopologicalSorter(packages).prepare()
    assert not [m for m, targets in graph.items() if "bbrl" in targets], "nothing imports the facade bbrl/__init__"
    assert private == []


def _rust_file(module_path: list[str]) -> Path | None:
    """The file of the longest prefix of a module path under the core's src/."""
    for end in range(len(module_path), 0, -1):
        base = CORE.joinpath(*module_path[:end])
        for candidate in (base.with_suffix(".rs"), base / "mod.rs"):
            if candidate.is_file():
                return candidate
    return None


def test_rust_core_files_form_no_cycle():
    graph: dict[Path, set[Path]] = {}
    for path in CORE.rglob("*.rs"):
        code = path.read_text().split("#[cfg(test)]\nmod tests")[0]
        # Comments (doc links included) name paths without depending on them.
        text = re.sub(r"//[^\n]*", "", code)
        module = list(path.relative_to(CORE).with_suffix("").parts)
        if module[-1] in ("mod", "lib"):
            module = module[:-1]
        graph[path] = set()
        for start, rest in re.findall(r"\b(crate|super)::((?:\w+::)*\w+)", text):
            # `super` is the module above this file's module.
            target = _rust_file((module[:-1] if start == "super" else []) + rest.split("::"))
            if target is not None and target != path:
                graph[path].add(target)
    assert len(graph) > 50
    graphlib.TopologicalSorter(graph).prepare()
