"""High-confidence value-error estimates (Sajed, Chung and White 2018).

Score a learned value function by its clipped mean absolute percentage value error (CMAPVE)
against reference values computed by rollouts that stop once an empirical Bernstein bound
certifies them::

    from bbrl import value_error as ve
    ve.clipped_relative_loss(v_hat, v, tau=1.0, c=2.0)
    ve.sample_size(epsilon=0.1, delta=0.1, c=1.0, k=100)      # Algorithm 1's number of states
    ve.rollout_length(epsilon=0.01, tau=1.0, r_max=1.0, gamma=0.99)
    ve.ebgstop(samples, epsilon=0.05, delta=0.1, tau=1.0, value_range=100.0)
"""

from __future__ import annotations

from .budget import Accuracies, accuracies, guaranteed_error, rollout_length, sample_size
from .ebgstop import EbgStopResult, ebgstop
from .losses import (
    absolute_error,
    clipped_relative_loss,
    cmapve_estimate,
    mapve,
    mave,
    msve,
    relative_error,
    squared_error,
)

__all__ = [
    "Accuracies",
    "EbgStopResult",
    "absolute_error",
    "accuracies",
    "clipped_relative_loss",
    "cmapve_estimate",
    "ebgstop",
    "guaranteed_error",
    "mapve",
    "mave",
    "msve",
    "relative_error",
    "rollout_length",
    "sample_size",
    "squared_error",
]
