"""EBGStop with a tau floor (Algorithm 2 of Sajed, Chung and White 2018)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .. import _core

Variant = Literal["checkpoints", "every"]
DEFAULT_MAX_SAMPLES = 1_000_000_000


@dataclass(frozen=True)
class EbgStopResult:
    """The outcome of one EBGStop run."""

    estimate: float
    """The mean estimate; within ``epsilon (|mu| + tau)`` of the mean with probability ``1 - delta``
    when ``certified``; the plain sample mean otherwise."""
    n_samples: int
    reason: str
    """``"relative"`` or ``"absolute"`` (the tau rule): certified; ``"cap"``: ``max_samples`` reached;
    ``"exhausted"``: the samples ran out."""
    certified: bool
    lower: float
    """The final confidence interval ``[lower, upper]`` on the mean (infinite before any check)."""
    upper: float

    @property
    def hit_cap(self) -> bool:
        """Whether sampling stopped without a certificate (cap reached or samples exhausted)."""
        return not self.certified


def ebgstop(
    samples: np.ndarray | Iterable[float],
    epsilon: float,
    delta: float,
    tau: float,
    value_range: float,
    variant: Variant = "checkpoints",
    beta: float = 1.1,
    p: float = 1.1,
    max_samples: int = DEFAULT_MAX_SAMPLES,
) -> EbgStopResult:
    """Estimate the mean of bounded samples until it is certified to ``epsilon (|mu| + tau)``.

    ``samples``: a 1-D NumPy array (its length also caps the run) or any iterable of numbers;
    ``value_range``: the width ``b - a`` of the interval the samples lie in (an error if the
    samples span more); ``variant``: recompute the confidence interval only at the geometric check
    points (``"checkpoints"``, the paper's text) or after every sample (``"every"``, Mnih et al.);
    ``beta``, ``p`` > 1: check-point growth and failure-budget exponent (both 1.1 in the papers).
    ``tau = 0`` is the original EBGStop, which never stops on a zero mean: ``max_samples`` caps it.
    """
    if isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples < 1:
        raise ValueError(f"max_samples must be an integer >= 1, got {max_samples!r}")
    args = dict(epsilon=float(epsilon), delta=float(delta), tau=float(tau), value_range=float(value_range),
                variant=variant, beta=float(beta), p=float(p), max_samples=max_samples)  # fmt: skip
    if isinstance(samples, np.ndarray):
        if samples.ndim != 1:
            raise ValueError(f"samples must be a 1-D array, got shape {samples.shape}")
        out = _core.ebgstop_array(np.ascontiguousarray(samples, dtype=np.float64), args)
    else:
        out = _core.ebgstop_iterator(iter(samples), args)
    return EbgStopResult(**out)
