"""Smoke-test sizes: the whole pipeline of a long command, checked end to end in seconds.

With ``BBRL_SMOKE=1`` in the environment, every command that runs a study runs it at a tiny size:
grid experiments (``bbrl grid run``, ``grid plan``, ``grid submit``, ``paper``) and ``bbrl quick``
keep at most :data:`N_MDPS` test MDPs of at most :data:`HORIZON` decisions, ``bbrl value-error
references`` at most :data:`VALUE_ERROR_STATES` states, and ``bbrl regret-study`` at most
:data:`N_MDPS` runs of :data:`EPISODES` episodes per agent (on the smallest DeepSea only).
Everything else (agents, their parameters, the priors, seeds, the files written, the report) is
as without it, so the setting checks an installation, a cluster set-up or the documentation's
examples without their cost (tests/docs/test_code_blocks.py runs the long examples this way).

The numbers of such a run mean nothing: the command says so on standard error, and the reduced
sizes are recorded where the real ones would be (a grid folder's ``experiments.json`` then refuses
a later run at full size in the same folder, naming the difference).
"""

from __future__ import annotations

import os
import sys

ENV = "BBRL_SMOKE"
N_MDPS = 3
HORIZON = 10
VALUE_ERROR_STATES = 3
EPISODES = 10

_told = False


def active() -> bool:
    """Whether ``BBRL_SMOKE`` asks for smoke-test sizes (any value but empty, ``0`` or ``false``)."""
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no")


def _tell() -> None:
    global _told
    if not _told:
        _told = True
        print(
            f"{ENV} is set: smoke-test sizes (at most {N_MDPS} MDPs of {HORIZON} decisions, "
            f"{VALUE_ERROR_STATES} value-error states, {EPISODES} episodes per run); the numbers mean nothing",
            file=sys.stderr,
        )


def experiment_size(n_mdps: int, horizon: int) -> tuple[int, int]:
    """``(n_mdps, horizon)`` as a study runs them: unchanged, or capped under ``BBRL_SMOKE``."""
    if not active():
        return n_mdps, horizon
    _tell()
    return min(n_mdps, N_MDPS), min(horizon, HORIZON)


def value_error_states(states: int) -> int:
    """The number of value-error states a command certifies, capped under ``BBRL_SMOKE``."""
    if not active():
        return states
    _tell()
    return min(states, VALUE_ERROR_STATES)


def episodic_size(runs: int, episodes: int) -> tuple[int, int]:
    """``(runs, episodes)`` of an episodic study as it runs them: unchanged, or capped under ``BBRL_SMOKE``."""
    if not active():
        return runs, episodes
    _tell()
    return min(runs, N_MDPS), min(episodes, EPISODES)
