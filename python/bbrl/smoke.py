"""Smoke-test sizes: the whole pipeline of a long command, checked end to end in seconds.

With ``BBRL_SMOKE=1`` in the environment, every command that runs a study runs it at a tiny size:
grid experiments (``bbrl grid run``, ``grid plan``, ``grid submit``, ``paper``) and ``bbrl quick``
keep at most :data:`N_MDPS` test MDPs of at most :data:`HORIZON` decisions, and ``bbrl value-error
references`` at most :data:`VALUE_ERROR_STATES` states. Everything else (agents, their parameters,
the priors, seeds, the files written, the report) is as without it, so the setting checks an
installation, a cluster set-up or the documentation's examples without their cost
(tests/docs/test_code_blocks.py runs the long examples this way).

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
            f"{VALUE_ERROR_STATES} value-error states); the numbers mean nothing",
            file=sys.stderr,
        )


def experiment_size(n_mdps: int, horizon: int) -> tuple[int, int]:
    """``(n_mdps, horizon)`` as a study runs them: unchanged, or capped under ``BBRL_SMOKE``."""
    if not active():
        return n_mdps, horizon
    _tell()
    return min(n_mdps, N_MDPS), min(horizon, HORIZON)


def value_error_states(states: int | None) -> int | None:
    """The number of reference states (``None``: the accuracy's own m), capped under ``BBRL_SMOKE``."""
    if not active():
        return states
    _tell()
    return VALUE_ERROR_STATES if states is None else min(states, VALUE_ERROR_STATES)
