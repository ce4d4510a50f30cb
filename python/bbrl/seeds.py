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
* ``kernel``: free-standing kernel calls (index 0);
* ``replay_log``: keying a replay evaluation by its log (index: the log's fingerprint read as a
  64-bit integer; :func:`keyed_seed`).

An evaluation of a replay log runs on the streams ``(keyed_seed(seed, log.fingerprint), purpose,
run)``: the same log and seed give the same draws, and two logs evaluated with one seed get
independent ones (before, they shared every draw, so their evaluations' errors were correlated).
The log's fingerprint follows the one rule of :mod:`bbrl.protocol.fingerprint`, which also names
experiments.
"""

from __future__ import annotations

import numpy as np

from . import _core

#: Purpose numbers by name, from the core (never renumbered).
PURPOSES: dict[str, int] = dict(_core.PURPOSES)

__all__ = ["PURPOSES", "first_draw", "generator", "keyed_seed"]


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


def keyed_seed(seed: int, fingerprint: str) -> int:
    """The seed of every stream of an evaluation keyed by what it evaluates (a replay log, by
    :attr:`bbrl.replay.Dataset.fingerprint`): :func:`first_draw` of ``(seed, "replay_log",
    fingerprint read as a hexadecimal integer)``. A different seed or fingerprint gives unrelated
    streams.

    Raises:
        ValueError: ``seed`` is negative, or ``fingerprint`` is not 1 to 16 lowercase hex digits.
    """
    if isinstance(seed, bool) or int(seed) < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    if (
        not isinstance(fingerprint, str)
        or not 1 <= len(fingerprint) <= 16
        or any(c not in "0123456789abcdef" for c in fingerprint)
    ):
        raise ValueError(f"fingerprint must be 1 to 16 lowercase hex digits, got {fingerprint!r}")
    return first_draw(int(seed), "replay_log", int(fingerprint, 16))
