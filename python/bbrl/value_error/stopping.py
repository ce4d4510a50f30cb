"""The stopping rules of Algorithm 2 behind one contract: a certified mean of bounded samples.

``"betting"`` (the default) is the betting confidence sequence of Waudby-Smith and Ramdas (2024):
its interval follows the variance of the samples, so it needs 14-17 times fewer samples than EBGStop
on Mountain Car and Puddle World returns at the same (epsilon, delta, tau). ``"ebgstop"`` is the
paper's EBGStop, unchanged, to reproduce Sajed et al.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from .. import _core
from .ebgstop import DEFAULT_MAX_SAMPLES, EbgStopResult, Variant

Rule = Literal["betting", "ebgstop"]
RULES: tuple[str, ...] = get_args(Rule)
DEFAULT_RULE: Rule = "betting"
#: The betting rule's truncation c: a bet at candidate mean m is at most c/m (or c/(1 - m)).
DEFAULT_MAX_BET = 0.5
Bets = Literal["aimed", "anytime"]
BETS: tuple[str, ...] = get_args(Bets)
#: ``"aimed"``: never bet less than the growth-optimal bet against a mean epsilon (|mu| + tau)
#: away (the width the rule stops at); ``"anytime"``: Waudby-Smith and Ramdas' plug-in bets alone.
DEFAULT_BETS: Bets = "aimed"


def check_rule(rule: str) -> Rule:
    """``rule`` itself if it names a stopping rule, else a ValueError naming the allowed ones."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(repr(r) for r in RULES)}, got {rule!r}")
    return rule  # type: ignore[return-value]


def check_bets(bets: str) -> Bets:
    """``bets`` itself if it names a way of betting, else a ValueError naming the allowed ones."""
    if bets not in BETS:
        raise ValueError(f"bets must be one of {', '.join(repr(b) for b in BETS)}, got {bets!r}")
    return bets  # type: ignore[return-value]


def certify_mean(
    samples: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    tau: float,
    low: float,
    high: float,
    rule: Rule = DEFAULT_RULE,
    variant: Variant = "checkpoints",
    beta: float = 1.1,
    p: float = 1.1,
    max_bet: float = DEFAULT_MAX_BET,
    bets: Bets = DEFAULT_BETS,
    max_samples: int = DEFAULT_MAX_SAMPLES,
) -> EbgStopResult:
    """Estimate the mean of samples in [``low``, ``high``] until it is certified to
    ``epsilon (|mu| + tau)`` with probability ``1 - delta``, by ``rule``.

    ``samples``: a 1-D array, read in order (its length also caps the run: reason
    ``"exhausted"``). ``variant``, ``beta``, ``p``: EBGStop's knobs; ``max_bet``: the betting
    rule's truncation in (0, 1); ``bets``: ``"aimed"`` (default) or ``"anytime"``. A sample
    outside [low, high] is an error.
    """
    check_rule(rule)
    check_bets(bets)
    if isinstance(max_samples, bool) or not isinstance(max_samples, int) or max_samples < 1:
        raise ValueError(f"max_samples must be an integer >= 1, got {max_samples!r}")
    if not (np.isfinite(low) and np.isfinite(high) and high > low):
        raise ValueError(f"the bounds must be finite with low < high, got low = {low}, high = {high}")
    array = np.asarray(samples)
    if array.ndim != 1:
        raise ValueError(f"samples must be a 1-D array, got shape {array.shape}")
    args = dict(rule=rule, epsilon=float(epsilon), delta=float(delta), tau=float(tau), value_low=float(low),
                value_range=float(high) - float(low), variant=variant, beta=float(beta), p=float(p),
                max_bet=float(max_bet), bets=bets, max_samples=max_samples)  # fmt: skip
    return EbgStopResult(**_core.certify_array(np.ascontiguousarray(array, dtype=np.float64), args))
