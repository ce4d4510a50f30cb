"""A finite environment as a distribution over MDPs, BBRL-style: an FDM whose mean is the
environment with a little of each row's mass spread over the states the row's state can reach, so
that even a deterministic row draws differently from MDP to MDP. With it, any classic problem is
benchmarked the BBRL way (offline on a prior, tested on N draws) as well as fixed.

The rows are those of the continuing form (terminal transitions become resets to the start law,
the BBRL protocol having no episodes): for each (s, a),

    mean(. | s, a) = (1 - spread) P(. | s, a) + spread * uniform over N(s),
    theta(. | s, a) = concentration * mean(. | s, a),

with N(s) the states some action reaches from s in one step. A draw is Dirichlet(theta) per row,
whose mean is ``mean`` and whose spread shrinks as ``concentration`` grows. Rewards are the
environment's where it has a transition; an entry that the spread adds takes the row's expected
reward, so no (s, a) pays more or less on average for the new mass. Reward noise plays no part (the
BBRL agent knows the rewards). The start is the environment's: one state, uniform, or its start law
(Taxi's: uniform over the states where the passenger waits elsewhere than the destination), which
the FDM then carries (:attr:`bbrl.distributions.FDM.start_law`). The accurate prior is the
distribution itself; the uniform prior is :meth:`bbrl.distributions.FDM.uniform`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import number
from ..distributions import FDM

__all__ = ["DEFAULT_CONCENTRATION", "DEFAULT_SPREAD", "distribution_named", "distribution_of", "environment_named"]

#: Dirichlet mass per row: a row of the drawn MDP is within about 1/sqrt(1 + concentration) of the mean.
DEFAULT_CONCENTRATION = 20.0
#: The share of each row spread uniformly over the state's one-step neighbours.
DEFAULT_SPREAD = 0.05


def distribution_of(
    env: Any, concentration: float = DEFAULT_CONCENTRATION, spread: float = DEFAULT_SPREAD, name: str | None = None
) -> FDM:
    """The FDM of a finite environment (a :class:`bbrl.envs.FiniteEnv`), as the module says.

    Raises:
        ValueError: a concentration not > 0 or a spread outside (0, 1].
    """
    c = number(concentration, "concentration")
    if not c > 0:
        raise ValueError(f"concentration must be > 0, got {concentration!r}")
    eps = number(spread, "spread")
    if not 0 < eps <= 1:
        raise ValueError(f"spread must be in (0, 1], got {spread!r}")
    P, R = env.continuing_tables()
    neighbours = (P > 0).any(axis=1)
    uniform = neighbours / neighbours.sum(axis=1, keepdims=True)
    mean = (1 - eps) * P + eps * uniform[:, None, :]
    expected = np.einsum("say,say->sa", P, R)
    rewards = np.where(P > 0, R, expected[:, :, None])
    start = np.asarray(env.start_law, dtype=np.float64)
    # One start state or a uniform start as an FDM always said them (the same draws as before);
    # any other law (Taxi's) as the FDM's start law.
    law = None
    if np.count_nonzero(start) == 1:
        initial: int | None = int(np.flatnonzero(start)[0])
    elif np.all(start == start[0]):
        initial = None
    else:
        initial, law = None, start
    label = name or f"{env.name}-FDM"
    long_name = f"{env.name} as a distribution (concentration {c:g}, spread {eps:g})"
    return FDM(c * mean, rewards, initial, label, long_name, start_law=law)


def environment_named(value: str) -> str | None:
    """The registry's name of the finite environment ``value`` names (:mod:`bbrl.names`), when it
    names no built-in distribution: where a distribution is asked for by name (a grid's ``test``
    and ``prior``, the report), such a name stands for the environment as a distribution."""
    from .. import distributions
    from .. import names as name_rule
    from . import registry

    if distributions.builtin_name(value) is not None:
        return None
    return name_rule.find(registry.names("finite"), value)


def distribution_named(value: str) -> FDM:
    """:func:`distribution_of` the finite environment ``value`` names (:func:`environment_named`),
    at its default options, concentration and spread, named by the registry's name."""
    from .finite import make

    name = environment_named(value)
    if name is None:
        raise ValueError(f"{value!r} names no finite environment of the registry")
    return distribution_of(make(name), name=name)
