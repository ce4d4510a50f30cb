"""The seed rule, stated once: every random stream is identified by ``(seed, purpose, index)``.

The Rust core derives a Xoshiro256++ generator from the triple (``rust/core/src/rng.rs``). Python
code that needs randomness of its own (a Python agent's Generator, the conformance suite's logged
actions) takes :func:`generator` of a triple: ``numpy.random.default_rng(k)`` with ``k`` the first
64-bit draw of the core's stream for that triple. So there is one rule, the core's, and the
purposes below come from the core and are never restated by hand.

* ``test_mdp``: drawing test MDP ``i`` of an experiment;
* ``environment``: the transitions of test MDP ``i`` (the same for every agent: common random numbers);
* ``agent_online``: an agent's own randomness on test MDP ``i`` (a Python agent's ``act`` Generator
  is ``generator(seed, "agent_online", i)``, made by the core when the task starts);
* ``agent_offline``: offline learning (index 0; a Python agent's ``learn_offline`` Generator is
  ``generator(seed, "agent_offline", 0)``);
* ``kernel``: free-standing kernel calls (index 0).
"""

from __future__ import annotations

import numpy as np

from . import _core

#: Purpose numbers by name, from the core (never renumbered).
PURPOSES: dict[str, int] = dict(_core.PURPOSES)

__all__ = ["PURPOSES", "first_draw", "generator"]


def generator(seed: int, purpose: str, index: int = 0) -> np.random.Generator:
    """The NumPy Generator of stream ``(seed, purpose, index)``: ``default_rng(first_draw(seed,
    purpose, index))``."""
    return np.random.default_rng(first_draw(seed, purpose, index))


def first_draw(seed: int, purpose: str, index: int = 0) -> int:
    """The first 64-bit draw of the core's stream ``(seed, purpose, index)``: what seeds a Python
    agent's Generator when a task starts on that stream."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}; known: {', '.join(PURPOSES)}")
    return int(_core.first_draw(int(seed), PURPOSES[purpose], int(index)))
