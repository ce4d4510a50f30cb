"""The typed public API: the native module's stub states what the module exports, member by member
and parameter by parameter, against the runtime's own signatures (the full type check, annotations
included, is ``python -m mypy.stubtest bbrl._core`` in scripts/test.sh)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

import bbrl
from bbrl import _core

STUB = Path(bbrl.__file__).with_name("_core.pyi")
_KINDS = {
    "posonlyargs": inspect.Parameter.POSITIONAL_ONLY,
    "args": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "kwonlyargs": inspect.Parameter.KEYWORD_ONLY,
}


def _tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def _decorators(node: ast.FunctionDef | ast.ClassDef) -> set[str]:
    return {d.id if isinstance(d, ast.Name) else ast.unparse(d) for d in node.decorator_list}


def _stub_parameters(node: ast.FunctionDef, drop_first: bool) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of a stub function; a default written ``...`` matches any default."""
    a = node.args
    positional = [(p, _KINDS["posonlyargs"]) for p in a.posonlyargs] + [(p, _KINDS["args"]) for p in a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [(p.arg, kind, d) for (p, kind), d in zip(positional, defaults, strict=True)]
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, None))
    out += [(p.arg, _KINDS["kwonlyargs"], d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, None))
    parameters = []
    for name, kind, default in out[1 if drop_first else 0 :]:
        if default is None:
            value: Any = inspect.Parameter.empty
        elif isinstance(default, ast.Constant) and default.value is Ellipsis:
            value = Ellipsis
        else:
            value = ast.literal_eval(default)
        parameters.append((name, kind, value))
    return parameters


def _runtime_parameters(obj: Any, drop_first: bool) -> list[tuple[str, Any, Any]]:
    parameters = list(inspect.signature(obj).parameters.values())[1 if drop_first else 0 :]
    return [(p.name, p.kind, p.default) for p in parameters]


def _same(stub: list[tuple[str, Any, Any]], runtime: list[tuple[str, Any, Any]], where: str) -> None:
    assert [p[:2] for p in stub] == [p[:2] for p in runtime], where
    for (name, _, s), (_, _, r) in zip(stub, runtime, strict=True):
        if s is Ellipsis:  # the stub leaves the value unsaid: only that there is a default
            assert r is not inspect.Parameter.empty, f"{where}: {name} has no default at runtime"
        else:
            assert s == r, f"{where}: default of {name} is {r!r} at runtime, {s!r} in the stub"


def test_stub_and_typing_marker_ship_with_the_package() -> None:
    assert STUB.is_file(), "the wheel must ship _core.pyi"
    assert Path(bbrl.__file__).with_name("py.typed").is_file(), "the wheel must ship py.typed"


def test_core_stub_matches_the_native_module() -> None:
    tree = _tree()
    declared = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    declared |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    declared.discard("__version__")
    exported = {name for name in dir(_core) if not name.startswith("_")}
    assert declared == exported
    stub_all = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]
    )
    assert sorted(stub_all) == sorted(_core.__all__)


FUNCTIONS = [node for node in _tree().body if isinstance(node, ast.FunctionDef)]
CLASSES = [node for node in _tree().body if isinstance(node, ast.ClassDef)]


@pytest.mark.parametrize("node", FUNCTIONS, ids=lambda n: n.name)
def test_function_parameters_match(node: ast.FunctionDef) -> None:
    function = getattr(_core, node.name)
    _same(_stub_parameters(node, False), _runtime_parameters(function, False), node.name)


def _subclassable(cls: type) -> bool:
    try:
        type("Sub", (cls,), {})
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("node", CLASSES, ids=lambda n: n.name)
def test_class_members_and_parameters_match(node: ast.ClassDef) -> None:
    cls = getattr(_core, node.name)
    assert ("final" in _decorators(node)) == (not _subclassable(cls)), f"{node.name}: @final"
    if issubclass(cls, BaseException):
        assert [ast.unparse(b) for b in node.bases] == [b.__name__ for b in cls.__bases__]
        return
    methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
    runtime = {name for name in vars(cls) if not name.startswith("__")}
    assert set(methods) - {"__new__"} == runtime, node.name
    if "__new__" in methods:
        _same(_stub_parameters(methods["__new__"], True), _runtime_parameters(cls, False), f"{node.name}()")
    else:  # no constructor in the stub: none at runtime either
        with pytest.raises(TypeError):
            cls()
    for name in runtime:
        stub, member = methods[name], inspect.getattr_static(cls, name)
        where = f"{node.name}.{name}"
        if "property" in _decorators(stub):
            assert inspect.isdatadescriptor(member) and not callable(member), where
        elif "staticmethod" in _decorators(stub):
            assert isinstance(member, staticmethod), where
            _same(_stub_parameters(stub, False), _runtime_parameters(getattr(cls, name), False), where)
        else:
            assert inspect.ismethoddescriptor(member) and not isinstance(member, staticmethod), where
            _same(_stub_parameters(stub, True), _runtime_parameters(member, True), where)
