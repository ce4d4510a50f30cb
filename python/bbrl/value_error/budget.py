"""Algorithm 1's budget (number of states, accuracy split, guaranteed error) and Lemma 5's
rollout length."""

from __future__ import annotations

from typing import Literal, NamedTuple

from .. import _core

Split = Literal["corrected", "paper"]


class Accuracies(NamedTuple):
    """How a target accuracy is split (dimensionless fractions of the clipped loss)."""

    eps_m: float
    """The share spent on sampling a finite set of states (Hoeffding, Lemma 2)."""
    eps_bar: float
    """The relative accuracy of each reference value."""
    corollary_total: float
    """``eps_m + 2 (1 + c) eps_bar``: the target for ``"corrected"``, 1.5 times it for ``"paper"``."""


def accuracies(epsilon: float, c: float, split: Split = "corrected") -> Accuracies:
    """Split target ``epsilon`` for clip level ``c``.

    ``"corrected"``: eps_m = eps/2, eps_bar = eps/(4(1+c)), so Corollary 1's bound is eps.
    ``"paper"``: eps_bar = eps/(2(1+c)) as Algorithm 1 prints it; the bound is then 1.5 eps.
    """
    return Accuracies(*_core.value_error_accuracies(float(epsilon), float(c), split))


def sample_size(epsilon: float, delta: float, c: float, k: int) -> int:
    """Algorithm 1's number of states: ``ceil(log(4k/delta) c^2 / (2 eps_m^2))`` with eps_m = epsilon/2.

    ``k`` is how many times the error will be queried (learners x checkpoints x runs); the bound
    holds for all k queries at once with probability ``1 - delta``.
    """
    _check_count(k, "k")
    return _core.value_error_sample_size(float(epsilon), float(delta), float(c), int(k))


def rollout_length(epsilon: float, tau: float, r_max: float, gamma: float) -> int:
    """Lemma 5: ``ceil((log(epsilon tau (1 - gamma)) - log r_max) / log gamma)`` steps (at least 1).

    Truncating every rollout there changes each value by at most ``epsilon (|v| + tau)``.
    ``tau = 0`` is an error (no finite length works), as is ``gamma`` outside (0, 1).
    """
    return _core.value_error_rollout_length(float(epsilon), float(tau), float(r_max), float(gamma))


def guaranteed_error(m: int, delta: float, c: float, k: int, eps_bar: float) -> float:
    """Theorem 1's bound on ``|CMAPVE - estimate|`` for m references of accuracy ``eps_bar``:
    ``sqrt(log(4k/delta) c^2/(2m)) + eps_bar (2 + eps_bar) + c (1 - (1 + eps_bar)^-2)``."""
    _check_count(m, "m")
    _check_count(k, "k")
    return _core.value_error_guaranteed_error(int(m), float(delta), float(c), int(k), float(eps_bar))


def _check_count(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
