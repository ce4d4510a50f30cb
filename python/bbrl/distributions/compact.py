"""The compact form of an (S, A, S) table in a distribution document (format version 2).

Version 1 wrote ``theta`` and ``rewards`` as nested lists, every entry spelled out: Taxi's
3,000 rows of 500 next states made a 30 MB document of mostly zeros and repeated rewards, written
into every trained agent's file. Here each (s, a) row is one value, its *default* (the value most
of its entries hold, bit for bit), and the entries that differ from it:

``{"shape": [S, A, S], "default": d, "index": [i, ...], "value": [v, ...]}``

where ``d`` is one number (every row's default) or ``S * A`` numbers (row ``s * A + a``'s),
``index`` the increasing flat indices ``(s * A + a) * S + s'`` of the entries that differ from their
row's default, and ``value`` those entries. A Dirichlet ``theta`` keeps only its positive entries
(default 0); a reward table that depends on (s, a) alone keeps only its row values. Entries are
compared and written bit for bit (Python's shortest round-trip spelling), so a table reads back
exactly, the sign of its zeros included. Nothing in it is code: numbers and lists of numbers only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..fileio import MAX_DOCUMENT_BYTES

__all__ = ["MAX_TABLE_ENTRIES", "decode_table", "encode_table"]

#: The largest table (S * A * S entries) a compact document may describe: as many as a version-1
#: document of the largest size read (two bytes per entry, ``0,``) could hold, so that a small
#: planted file cannot ask for more memory than a large one could.
MAX_TABLE_ENTRIES = MAX_DOCUMENT_BYTES // 2


def encode_table(table: np.ndarray) -> dict[str, Any]:
    """The compact form of a float64 table of shape (S, A, S) (see the module's docstring)."""
    s, a, s2 = table.shape
    rows = np.ascontiguousarray(table, dtype=np.float64).reshape(s * a, s2)
    bits = rows.view(np.int64)
    defaults = _row_modes(bits)
    differs = (bits != defaults[:, None]).ravel()
    index = np.flatnonzero(differs)
    default_values = defaults.view(np.float64)
    one_default = bool((defaults == defaults[0]).all())
    return {
        "shape": [s, a, s2],
        "default": default_values[0].item() if one_default else default_values.tolist(),
        "index": index.tolist(),
        "value": rows.ravel()[index].tolist(),
    }


def _row_modes(bits: np.ndarray) -> np.ndarray:
    """Per row of ``bits``, the bit pattern most entries hold (ties: the smallest pattern)."""
    width = bits.shape[1]
    ordered = np.sort(bits, axis=1)
    new_run = np.ones(ordered.shape, dtype=bool)
    new_run[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    starts = np.flatnonzero(new_run.ravel())
    lengths = np.diff(np.append(starts, ordered.size))
    run_row = starts // width
    # Per row, the longest run, and of equal runs the first (the smallest pattern: rows are sorted).
    order = np.lexsort((starts, -lengths, run_row))
    first_of_row = np.ones(order.size, dtype=bool)
    first_of_row[1:] = run_row[order][1:] != run_row[order][:-1]
    return ordered.ravel()[starts[order[first_of_row]]]


def decode_table(value: Any, name: str) -> Any:
    """The table a document's field ``name`` holds: nested lists (version 1, returned as they are
    for :class:`bbrl.distributions.FDM` to check) or the compact form, as a float64 array.

    Raises:
        ValueError: naming the field, for a compact form that is malformed (a missing or unknown
            key, a shape that is not (S, A, S) or too large, defaults or values that are not
            numbers, indices that are not increasing integers inside the table).
    """
    if not isinstance(value, dict):
        return value
    keys = {"shape", "default", "index", "value"}
    if set(value) != keys:
        raise ValueError(f"{name}: a compact table has exactly the keys {sorted(keys)}, got {sorted(value)}")
    shape = value["shape"]
    if (
        not isinstance(shape, list)
        or len(shape) != 3
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in shape)
        or shape[0] != shape[2]
    ):
        raise ValueError(f"{name}: shape must be [S, A, S] with S, A >= 1, got {str(shape)[:60]}")
    s, a, _ = shape
    if s * a * s > MAX_TABLE_ENTRIES:
        raise ValueError(f"{name}: shape {shape} has more than {MAX_TABLE_ENTRIES} entries")
    rows = s * a
    default = _numbers(value["default"], f"{name}: default", allow_scalar=True)
    if default.ndim == 1 and default.size != rows:
        raise ValueError(f"{name}: default must be one number or S * A = {rows} numbers, got {default.size}")
    index = _indices(value["index"], f"{name}: index", rows * s)
    entries = _numbers(value["value"], f"{name}: value", allow_scalar=False)
    if entries.size != index.size:
        raise ValueError(f"{name}: index and value differ in length ({index.size} and {entries.size})")
    table = np.empty((rows, s), dtype=np.float64)
    table[:] = default.reshape(-1, 1) if default.ndim == 1 else default
    table.ravel()[index] = entries
    return table.reshape(s, a, s)


def _numbers(value: Any, where: str, allow_scalar: bool) -> np.ndarray:
    """A list of JSON numbers (or, if allowed, one number) as float64; ``true``/``false`` are not
    numbers."""
    if allow_scalar and isinstance(value, (int, float)) and not isinstance(value, bool):
        return np.array(float(value))
    if not isinstance(value, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise ValueError(f"{where}: expected {'a number or ' if allow_scalar else ''}a list of numbers")
    return np.array(value, dtype=np.float64).reshape(-1)


def _indices(value: Any, where: str, size: int) -> np.ndarray:
    """A list of strictly increasing integer indices in [0, size)."""
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise ValueError(f"{where}: expected a list of integers")
    if value and not (min(value) >= 0 and max(value) < size):
        raise ValueError(f"{where}: an index is outside the table's {size} entries")
    index = np.array(value, dtype=np.int64).reshape(-1)
    if index.size > 1 and not (np.diff(index) > 0).all():
        raise ValueError(f"{where}: indices must be strictly increasing")
    return index
