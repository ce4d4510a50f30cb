"""A Python agent's state as data: the JSON values an agent file stores instead of pickles.

Saving a trained Python agent writes :meth:`bbrl.agents.Agent.state` (by default the agent's
attributes) through :func:`encode`; loading rebuilds the values with :func:`decode` and hands them
to :meth:`bbrl.agents.Agent.from_state` of a class the caller already has. Nothing here imports a
module or calls anything a file names: a file can only give values of the types below.

Values and how they are written (a tagged value is a JSON object with one key starting with ``$``):

* ``None``, ``bool``, ``int``, ``str`` and finite ``float``: as JSON; ``nan``, ``inf``, ``-inf``:
  ``{"$float": "nan"}``;
* ``list``: a JSON array; ``tuple``: ``{"$tuple": [...]}``;
* ``dict`` with string keys (none starting with ``$``): a JSON object; any other dict:
  ``{"$dict": [[key, value], ...]}``;
* NumPy arrays (not of object dtype): ``{"$ndarray": "<base64 of the .npy bytes>"}``, read back
  with ``allow_pickle=False``; NumPy scalars: ``{"$npscalar": ...}``, the same for a 0-d array;
* ``numpy.random.Generator``: ``{"$generator": {"bit_generator": "PCG64", "state": ...}}`` (one of
  NumPy's own bit generators, its state restored exactly);
* bbrl's own types through their documents: a distribution (:class:`bbrl.FDM`,
  ``{"$fdm": document}``) and :class:`bbrl.kernels.Posterior` (``{"$posterior": {...}}``).

Any other type makes :func:`encode` fail naming the attribute: give the agent class
:meth:`~bbrl.agents.Agent.state` and :meth:`~bbrl.agents.Agent.from_state` of its own.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from typing import Any

import numpy as np

__all__ = ["decode", "encode"]

#: NumPy's bit generators a saved Generator may name (a fixed list: a file never names a callable).
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def encode(value: Any, where: str) -> Any:
    """``value`` as JSON values (see the module docstring); ``where`` names it in errors.

    Raises:
        TypeError: naming ``where`` and the type, for a value of a type that cannot be saved.
    """
    from .. import distributions, kernels

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else {"$float": repr(float(value))}
    if isinstance(value, list):
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v, f"{where}[{k!r}]") for k, v in value.items()}
        return {"$dict": [[encode(k, f"{where} key"), encode(v, f"{where}[{k!r}]")] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        return {"$ndarray": _npy(value, where)}
    if isinstance(value, np.generic):
        return {"$npscalar": _npy(np.asarray(value), where)}
    if isinstance(value, np.random.Generator):
        bit_generator = type(value.bit_generator).__name__
        if bit_generator not in _BIT_GENERATORS:
            raise TypeError(f"{where}: a Generator over {bit_generator} cannot be saved (known: {_BIT_GENERATORS})")
        return {"$generator": {"bit_generator": bit_generator, "state": encode(value.bit_generator.state, where)}}
    if isinstance(value, distributions.FDM):
        return {"$fdm": value.to_document(compact=True)}
    if isinstance(value, kernels.Posterior):
        return {"$posterior": {"counts": _npy(value.counts, where), "rewards": _npy(value.rewards, where)}}
    raise TypeError(
        f"{where}: a value of type {type(value).__module__}.{type(value).__qualname__} cannot be saved as data; "
        "keep numbers, strings, lists, dicts, NumPy arrays, Generators, FDMs and Posteriors, or give the agent "
        "class state() and from_state() methods of its own"
    )


def decode(value: Any, where: str) -> Any:
    """The value :func:`encode` wrote; ``where`` names the place in errors.

    Raises:
        ValueError: naming ``where``, for anything :func:`encode` does not write.
    """
    from .. import distributions, kernels

    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [decode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        raise ValueError(f"{where}: unexpected JSON value of type {type(value).__name__}")
    tags = [k for k in value if isinstance(k, str) and k.startswith("$")]
    if not tags:
        return {k: decode(v, f"{where}[{k!r}]") for k, v in value.items()}
    if len(value) != 1:
        raise ValueError(f"{where}: a tagged value has exactly one key, got {sorted(value)}")
    tag, body = tags[0], value[tags[0]]
    if tag == "$float":
        if body not in _NON_FINITE:
            raise ValueError(f"{where}: $float must be one of {sorted(_NON_FINITE)}, got {body!r}")
        return _NON_FINITE[body]
    if tag == "$tuple":
        if not isinstance(body, list):
            raise ValueError(f"{where}: $tuple must hold a list")
        return tuple(decode(v, f"{where}[{i}]") for i, v in enumerate(body))
    if tag == "$dict":
        if not isinstance(body, list) or not all(isinstance(p, list) and len(p) == 2 for p in body):
            raise ValueError(f"{where}: $dict must hold [key, value] pairs")
        out = {}
        for k, v in body:
            key = decode(k, f"{where} key")
            try:
                out[key] = decode(v, f"{where}[{key!r}]")
            except TypeError:  # an unhashable key (a list)
                raise ValueError(f"{where}: a key of type {type(key).__name__} cannot key a dict") from None
        return out
    if tag == "$ndarray":
        return _array(body, where)
    if tag == "$npscalar":
        array = _array(body, where)
        if array.shape != ():
            raise ValueError(f"{where}: $npscalar must hold a 0-d array, got shape {array.shape}")
        return array[()]
    if tag == "$generator":
        return _generator(body, where)
    if tag == "$fdm":
        return distributions.from_document(body, where)
    if tag == "$posterior":
        if not isinstance(body, dict) or set(body) != {"counts", "rewards"}:
            raise ValueError(f"{where}: $posterior must hold counts and rewards")
        return kernels.Posterior(_array(body["counts"], where + ".counts"), _array(body["rewards"], where + ".rewards"))
    raise ValueError(f"{where}: unknown tag {tag!r}")


def _npy(array: np.ndarray, where: str) -> str:
    if array.dtype.hasobject:
        raise TypeError(f"{where}: an array of Python objects (dtype {array.dtype}) cannot be saved as data")
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _array(body: Any, where: str) -> np.ndarray:
    if not isinstance(body, str):
        raise ValueError(f"{where}: an array must be a base64 string")
    try:
        raw = base64.b64decode(body, validate=True)
        # The .npy reader alone (np.load would also open a zip archive); never unpickles.
        return np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False)
    except (binascii.Error, ValueError, EOFError, OSError) as exc:
        raise ValueError(f"{where}: not a NumPy array ({type(exc).__name__}: {exc})") from None


def _generator(body: Any, where: str) -> np.random.Generator:
    if not isinstance(body, dict) or body.get("bit_generator") not in _BIT_GENERATORS:
        raise ValueError(f"{where}: $generator must name one of {_BIT_GENERATORS}")
    bit_generator = getattr(np.random, body["bit_generator"])()
    try:
        bit_generator.state = decode(body.get("state"), where + ".state")
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"{where}: not a {body['bit_generator']} state ({exc})") from None
    return np.random.Generator(bit_generator)
