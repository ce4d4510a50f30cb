"""Shared pieces of the fuzz tests of bbrl's file readers (docs/safety.md lists the readers).

Each reader's test builds a valid file of its kind, damages it with one of the strategies here
(a truncation, flipped bytes, random bytes; for JSON, a field of another type, a field dropped or
added) and calls the reader in-process through :func:`assert_reader_fails_cleanly`: the reader
either accepts the file or raises one of the documented exceptions with a one-line message naming
the file, and leaves no temporary file behind.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: The exceptions a reader may raise for a bad file (docs/safety.md): ValueError and its subclasses
#: (bbrl's ConfigError, CellFileError...), FileNotFoundError for a file that is not there.
DOCUMENTED = (ValueError, FileNotFoundError)

#: The budget of every fuzz test: at most 50 examples each, derandomised (the same examples on
#: every run), no deadline (a loaded CI machine is slow, not wrong).
FUZZ = settings(
    max_examples=50,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

#: A grid of three cells on four test MDPs of five steps: a results folder in a second.
TINY_GRID = """\
[defaults]
n_mdps = 4
horizon = 5
seed = 1

[[experiment]]
name = "GC"
test = "GC"

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 1.0]
"""

#: Values of every JSON type, to put where a field of another type is expected.
OTHER_VALUES = st.sampled_from([None, True, 0, -1, 2**70, 1.5, float("nan"), "", "x", [], [1, "a"], {}, {"k": None}])


def truncations(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` cut anywhere before its end."""
    return st.integers(0, max(len(data) - 1, 0)).map(lambda n: data[:n])


def flipped(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` with one to eight bytes replaced by random ones."""

    def flip(changes: list[tuple[int, int]]) -> bytes:
        out = bytearray(data)
        for position, value in changes:
            out[position % len(out)] = value
        return bytes(out)

    return st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=8).map(flip)


def random_bytes() -> st.SearchStrategy[bytes]:
    return st.binary(max_size=300)


def damaged_bytes(data: bytes) -> st.SearchStrategy[bytes]:
    """Every byte-level damage: truncations, flipped bytes, random bytes."""
    return st.one_of(truncations(data), flipped(data), random_bytes())


def parquet_damaged_bytes(data: bytes) -> st.SearchStrategy[bytes]:
    """Byte-level damage of a Parquet file that its reader can survive: truncations and random
    bytes. Not flipped bytes inside a column chunk: polars aborts the process on some of them (it
    allocates what a damaged page header declares; pola-rs/polars#15342), which docs/safety.md
    states as a limit of the threat model (a denial of service of the reading process)."""
    return st.one_of(truncations(data), random_bytes())


def _paths(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document (keys of objects, indices of lists), the root excluded."""
    found = []
    if isinstance(document, dict):
        items: Iterable[tuple[Any, Any]] = document.items()
    elif isinstance(document, list):
        items = enumerate(document)
    else:
        return []
    for key, value in items:
        found.append((*prefix, key))
        found.extend(_paths(value, (*prefix, key)))
    return found


def _replaced(document: Any, path: tuple[Any, ...], change: Callable[[Any, Any], None]) -> Any:
    copy = json.loads(json.dumps(document))
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    change(parent, path[-1])
    return copy


def json_mutations(document: Any) -> st.SearchStrategy[tuple[Any, tuple[Any, ...]]]:
    """(mutated document, the path changed): a field replaced by a value of another type, a field
    dropped (an object's key or a list's item), an extra field added, or the top level replaced."""
    paths = _paths(document)
    whole = OTHER_VALUES.map(lambda v: (v, ()))
    if not paths:
        return whole

    def retyped(path: tuple[Any, ...], value: Any) -> tuple[Any, tuple[Any, ...]]:
        return _replaced(document, path, lambda p, k: p.__setitem__(k, value)), path

    def dropped(path: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
        return _replaced(document, path, lambda p, k: p.pop(k)), path

    def added(path: tuple[Any, ...], value: Any) -> tuple[Any, tuple[Any, ...]]:
        def add(parent: Any, key: Any) -> None:
            target = parent[key]
            if isinstance(target, dict):
                target["extra_field"] = value
            elif isinstance(target, list):
                target.append(value)

        return _replaced(document, path, add), path

    place = st.sampled_from(paths)
    return st.one_of(
        st.builds(retyped, place, OTHER_VALUES),
        st.builds(dropped, place),
        st.builds(added, place, OTHER_VALUES),
        whole,
    )


def json_damage(document: Any) -> st.SearchStrategy[bytes]:
    """The bytes of a damaged JSON file: a mutated document, or byte-level damage of the valid one."""
    data = json.dumps(document, indent=1).encode()
    return st.one_of(json_mutations(document).map(lambda m: json.dumps(m[0]).encode()), damaged_bytes(data))


def named_json_damage(document: Any) -> st.SearchStrategy[tuple[bytes, str | None]]:
    """As :func:`json_damage`, with the name of the field changed: the innermost object key on the
    path to it (``None`` for byte-level damage, the top level, or an extra field, which may be
    accepted). An error about a changed field must name it."""

    def named(mutation: tuple[Any, tuple[Any, ...]]) -> tuple[bytes, str | None]:
        changed, path = mutation
        keys = [k for k in path if isinstance(k, str)]
        added = isinstance(changed, dict) and _contains_extra(changed)
        return json.dumps(changed).encode(), (keys[-1] if keys and not added else None)

    data = json.dumps(document, indent=1).encode()
    return st.one_of(json_mutations(document).map(named), damaged_bytes(data).map(lambda b: (b, None)))


def _contains_extra(document: Any) -> bool:
    if isinstance(document, dict):
        return "extra_field" in document or any(_contains_extra(v) for v in document.values())
    if isinstance(document, list):
        return any(_contains_extra(v) for v in document)
    return False


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def assert_reader_fails_cleanly(
    read: Callable[[], Any],
    names: str | Iterable[str],
    folder: Path,
    fields: Iterable[str] = (),
) -> BaseException | None:
    """Calls ``read`` (a reader on a damaged file): it returns, or raises one of the
    :data:`DOCUMENTED` exceptions whose message is one line and names one of ``names`` (the file,
    or the folder for a folder-level refusal), and one of ``fields`` when given. Any other exception
    propagates and fails the test. No temporary file is left in ``folder``, and no file that was
    there is gone. Returns the exception raised (None when the file was accepted)."""
    names = [names] if isinstance(names, str) else list(names)
    before = _files(folder)
    error: BaseException | None = None
    try:
        read()
    except DOCUMENTED as exc:
        error = exc
        message = str(exc)
        assert "\n" not in message.strip(), f"a multi-line message: {message!r}"
        assert any(name in message for name in names), f"the message names none of {names}: {message!r}"
        fields = list(fields)
        if fields:
            assert any(f in message for f in fields), f"the message names none of {fields}: {message!r}"
    after = _files(folder)
    leftovers = [p for p in after - before if p.name.endswith(".tmp")]
    assert not leftovers, f"temporary files left behind: {leftovers}"
    assert before - after <= {p for p in before if p.name.endswith(".lock")}, f"files removed: {before - after}"
    return error


def fresh_copy(template: Path, tmp_root: Path) -> Path:
    """A fresh copy of the folder ``template`` under ``tmp_root`` (one per hypothesis example)."""
    target = tmp_root / "case"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(template, target)
    return target
