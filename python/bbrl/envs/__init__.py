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
* :func:`chain`: Chain (Strens 2000), 5 states, 2 actions, slip probability 0.2;
* the exploration problems (``docs/problems.md``): DoubleLoop, DeepSea and DeepSea-Stochastic
  (bsuite; :func:`deep_sea_mapping` is bsuite's action map), StochasticChain (TabulaRL),
  FrozenLake-4x4 and -8x8 (slippery, and -NotSlippery), CliffWalking, Taxi, Taxi-Rainy and
  Taxi-Fickle (Gymnasium's toy text, exact tables); ``make("DeepSea", size=20)``.

:func:`distribution_of` turns a finite environment into an FDM (a distribution over MDPs around
it, with its accurate and uniform priors). :func:`from_gymnasium` imports a Gymnasium toy-text
environment from its tables, checked against its ``step()``. :meth:`FiniteEnv.hardness` gives
the hardness measures of an environment.

The continuous ones (Mountain Car, Puddle World) are built by :mod:`bbrl.value_error`.

:meth:`FiniteEnv.policy_values` and :meth:`FiniteEnv.optimal_values` give exact values (a linear
solve, value iteration, or backward induction for a time-limited undiscounted environment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import registry
    from .as_distribution import distribution_named, distribution_of, environment_named
    from .finite import (
        NAMES,
        FiniteEnv,
        chain,
        deep_sea_mapping,
        from_distribution,
        from_gymnasium,
        make,
        river_swim,
        six_arms,
    )
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
            "deep_sea_mapping": ".finite",
            "distribution_named": ".as_distribution",
            "distribution_of": ".as_distribution",
            "environment_named": ".as_distribution",
            "from_distribution": ".finite",
            "from_gymnasium": ".finite",
            "make": ".finite",
            "river_swim": ".finite",
            "six_arms": ".finite",
        },
    )

__all__ = [
    "NAMES",
    "FiniteEnv",
    "chain",
    "deep_sea_mapping",
    "distribution_named",
    "distribution_of",
    "environment_named",
    "from_distribution",
    "from_gymnasium",
    "make",
    "registry",
    "river_swim",
    "six_arms",
]
