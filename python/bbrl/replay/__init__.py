"""Offline evaluation of online learners from logged data (Mandel, Liu, Brunskill & Popović 2016).

A log of ``(state, action, reward, next_state)`` written by a deployed (logging) policy is replayed
to an agent as if it were learning online, episode after episode::

    from bbrl import agents, distributions, replay
    data = replay.Dataset("log.parquet", n_states=7, n_actions=6, start_state=0)
    agent = agents.PSRL(k=10).train(prior, gamma=0.95)
    result = replay.evaluate(agent, data, "psrs", seed=0)
    result.returns, result.n_episodes, result.tuples_used, result.stop_reason

Methods (see ``docs/replay.md`` for which estimate is unbiased and which is not):

* ``"queue"``: one queue of logged outcomes per (state, action); the logging policy need not be known.
* ``"psrs"``: per-state rejection sampling on the agent's revealed action distribution.
* ``"pers"``: per-episode rejection sampling; ``m=`` chooses M (``"policy"``, ``"per_step"``,
  ``"logging"`` or a fixed number), ``weighted=True`` adds the importance-weighted estimates that
  are unbiased for every episode index (fixed M only).
* ``"model"``: the model-based baseline: the agent run online on the log's maximum-likelihood MDP
  (:meth:`Dataset.mle_model`) for ``max_episodes`` episodes.

A log whose episodes start in several states is replayed from its own start states
(``Dataset(..., start_state=None)``).

The evaluators run in the Rust core and drive the agent through its stepping handle
(:class:`bbrl.Stepper`), so built-in and Python agents (``bbrl.agents.Agent`` subclasses, which must
implement ``action_probabilities`` for PSRS and PERS) are evaluated alike. ``runs=`` repeats an
evaluation with independent streams, in parallel for built-in agents (bit-identical whatever the
thread count), and on worker processes for Python agents, which hold the GIL (the same results
whatever their number).

One job per module: :mod:`~bbrl.replay.dataset` (reading and validating logs, collecting them),
:mod:`~bbrl.replay.evaluate` (the evaluators and the online truth), :mod:`~bbrl.replay.workers`
(a Python agent's runs on worker processes), :mod:`~bbrl.replay.results` (result types, learning
curves and the share of runs reaching each episode), :mod:`~bbrl.replay.plots` (drawing the curves).
"""

from __future__ import annotations

from .dataset import REQUIRED_COLUMNS, Dataset, read_log, read_logging_policy
from .evaluate import binomial_survival, evaluate, online_returns
from .results import ReplayResult, ReplayRuns

__all__ = [
    "REQUIRED_COLUMNS",
    "Dataset",
    "ReplayResult",
    "ReplayRuns",
    "binomial_survival",
    "evaluate",
    "online_returns",
    "read_log",
    "read_logging_policy",
]
