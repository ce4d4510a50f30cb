"""Value-error losses between learned values ``v_hat`` and reference values ``v``.

Every loss takes scalars or NumPy arrays (broadcast against each other) and returns a float for
scalar inputs, an array of the broadcast shape otherwise. The percentage losses divide by
``|v| + tau`` with ``v`` the *reference*: swapping the arguments changes the loss.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .. import _core

ArrayLike = float | npt.ArrayLike


def _pairwise(kind: str, v_hat: ArrayLike, v: ArrayLike, tau: float, c: float) -> float | npt.NDArray[np.float64]:
    a, b = np.broadcast_arrays(np.asarray(v_hat, dtype=np.float64), np.asarray(v, dtype=np.float64))
    flat_a, flat_b = np.ascontiguousarray(a.ravel()), np.ascontiguousarray(b.ravel())
    if not (np.all(np.isfinite(flat_a)) and np.all(np.isfinite(flat_b))):
        raise ValueError("v_hat and v must be finite")
    out = _core.value_error_elementwise(kind, flat_a, flat_b, float(tau), float(c)).reshape(a.shape)
    return float(out) if out.ndim == 0 else out


def clipped_relative_loss(v_hat: ArrayLike, v: ArrayLike, tau: float, c: float) -> float | npt.NDArray[np.float64]:
    """``min(c, |v_hat - v| / (|v| + tau))``, in ``[0, c]``: CMAPVE's per-state term.

    ``tau >= 0`` (value units) keeps the loss finite where the reference is near 0; ``c > 0`` caps
    it (c = 2 treats anything worse than 200% off as equally bad). Zero iff ``v_hat == v``.
    """
    return _pairwise("clipped", v_hat, v, tau, c)


def squared_error(v_hat: ArrayLike, v: ArrayLike) -> float | npt.NDArray[np.float64]:
    """``(v_hat - v)^2`` (its mean is the MSVE), in squared value units."""
    return _pairwise("squared", v_hat, v, 0.0, 1.0)


def absolute_error(v_hat: ArrayLike, v: ArrayLike) -> float | npt.NDArray[np.float64]:
    """``|v_hat - v|`` (its mean is the MAVE), in value units."""
    return _pairwise("absolute", v_hat, v, 0.0, 1.0)


def relative_error(v_hat: ArrayLike, v: ArrayLike, tau: float) -> float | npt.NDArray[np.float64]:
    """``|v_hat - v| / (|v| + tau)`` (its mean is the MAPVE); ``inf`` when ``v = tau = 0 != v_hat``."""
    return _pairwise("percentage", v_hat, v, tau, 1.0)


def _mean(kind: str, v_hat: ArrayLike, v: ArrayLike, tau: float, c: float) -> float:
    a = np.ascontiguousarray(np.asarray(v_hat, dtype=np.float64).ravel())
    b = np.ascontiguousarray(np.asarray(v, dtype=np.float64).ravel())
    return _core.value_error_mean(kind, a, b, float(tau), float(c))


def msve(v_hat: ArrayLike, v: ArrayLike) -> float:
    """Mean squared value error over paired states (uniform weights)."""
    return _mean("squared", v_hat, v, 0.0, 1.0)


def mave(v_hat: ArrayLike, v: ArrayLike) -> float:
    """Mean absolute value error over paired states (uniform weights)."""
    return _mean("absolute", v_hat, v, 0.0, 1.0)


def mapve(v_hat: ArrayLike, v: ArrayLike, tau: float) -> float:
    """Mean absolute percentage value error: mean of ``|v_hat - v| / (|v| + tau)``."""
    return _mean("percentage", v_hat, v, tau, 1.0)


def cmapve_estimate(v_hat: ArrayLike, v: ArrayLike, tau: float, c: float) -> float:
    """Mean clipped relative loss over paired states; see :func:`bbrl.value_error.cmapve` for the
    estimate against stored references with its guaranteed error."""
    return _mean("clipped", v_hat, v, tau, c)
