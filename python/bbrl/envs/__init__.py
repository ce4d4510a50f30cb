"""Environments: finite MDPs with a start law, a discount and an optional time limit, stepped by
the Rust core. Every evaluator of bbrl takes them; gymnasium users get them through
:mod:`bbrl.gym`.

    env = bbrl.envs.six_arms()
    s = env.reset(seed=0)
    s2, r, terminal, truncated = env.step(3)

Named environments come from the core's registry (:data:`NAMES`; ``bbrl envs`` lists them):
:func:`make` builds any finite one by name, and

* :func:`six_arms`: SixArms (Strehl & Littman), 7 states, 6 actions, a hub and six arms;
* :func:`river_swim`: RiverSwim, 6 states, 2 actions, in Osband et al.'s episodic variant (20
  undiscounted steps from state 0) or Strehl & Littman's continuing one;
* :func:`chain`: Chain (Strens 2000), 5 states, 2 actions, slip probability 0.2.

The continuous ones (Mountain Car, Puddle World) are built by :mod:`bbrl.value_error`.

:meth:`FiniteEnv.policy_values` and :meth:`FiniteEnv.optimal_values` give exact values (a linear
solve, value iteration, or backward induction for a time-limited undiscounted environment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import registry
    from .finite import NAMES, FiniteEnv, chain, from_distribution, make, river_swim, six_arms
else:
    from ..lazy import attach as _attach

    # Imported on first use (bbrl.lazy): the command line lists the registry's names without NumPy.
    __getattr__, __dir__ = _attach(
        __name__,
        submodules=("registry",),
        attributes={
            "NAMES": ".finite",
            "FiniteEnv": ".finite",
            "chain": ".finite",
            "from_distribution": ".finite",
            "make": ".finite",
            "river_swim": ".finite",
            "six_arms": ".finite",
        },
    )

__all__ = ["NAMES", "FiniteEnv", "chain", "from_distribution", "make", "registry", "river_swim", "six_arms"]
