"""One way to step any agent: :class:`Stepper`, the handle every evaluator drives.

A stepper owns a trained agent (built-in, trained, or written in Python) and its random stream,
and exposes the agent life cycle::

    h = bbrl.Stepper(bbrl.agents.PSRL(), prior="UGC", gamma=0.95, seed=0)
    env = bbrl.envs.river_swim("strehl")
    s = env.reset(seed=0)
    for _ in range(100):
        a = h.act(s)
        s2, r, *_ = env.step(a)
        h.observe(s, a, r, s2)
        s = s2

Life cycle: a new stepper has a task started (a fresh posterior); :meth:`start_task` starts
another unknown MDP (everything learned online is forgotten), :meth:`start_episode` a new episode
of the same task (learned knowledge kept). :meth:`observe` accepts any action, not only the
agent's own. :meth:`action_probabilities` is a pure query. :meth:`snapshot`/:meth:`restore`
capture and bring back everything the agent's future depends on, its random streams included.

Randomness: the stepper's stream is ``(seed, agent_online, index)`` of :mod:`bbrl.seeds`, the one
the benchmark protocol gives the agent on test MDP ``index``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from .. import _core
from ..checks import integer as _index
from .python import Agent, TrainedPythonAgent
from .records import AgentSpec
from .trained import TrainedAgent

__all__ = ["Snapshot", "Stepper", "trained"]

#: An opaque snapshot of a stepper's state (see :meth:`Stepper.snapshot`).
Snapshot = _core.Snapshot


def trained(
    agent: AgentSpec | TrainedAgent | Agent,
    prior: Any = None,
    gamma: float | None = None,
    horizon: int | None = None,
    seed: int = 0,
) -> TrainedAgent:
    """``agent`` trained on ``prior``: an untrained agent is trained (``gamma`` defaults to 0.95 and
    ``horizon`` to 250 steps); a trained one is returned as it is, after checking that ``prior``,
    ``gamma`` and ``horizon``, when given, are the ones it was trained with."""
    if isinstance(agent, TrainedAgent):
        agent.check_setting(prior=prior, gamma=gamma, horizon=horizon)
        return agent
    if isinstance(agent, (AgentSpec, Agent)):
        if prior is None:
            raise ValueError(f"agent {agent.label!r} must be trained: pass the prior it believes in (e.g. prior='UGC')")
        return agent.train(prior, 0.95 if gamma is None else gamma, 250 if horizon is None else horizon, seed)
    raise TypeError(
        "agent must be one of bbrl.agents (e.g. agents.PSRL()), a trained agent, or a bbrl.agents.Agent "
        f"subclass instance, got {type(agent).__name__}"
    )


class Stepper:
    """A handle on one trained agent, stepped through the life cycle (see the module docstring).

    Args:
        agent: a built-in agent (``bbrl.agents.PSRL()``), a trained agent (what ``train``
            returns), or a Python agent (a :class:`bbrl.agents.Agent` subclass instance).
        prior: the distribution an untrained agent learns offline on (an FDM or a name such as
            ``"UGC"``); for a trained agent, optional and checked against its training.
        gamma: the discount the agent plans with (default 0.95 when training here; checked against
            a trained agent's).
        horizon: the horizon the agent is trained for, in steps (default 250 when training here).
        seed: the seed of the agent's offline learning and of its online stream.
        index: the index of the online stream ``(seed, agent_online, index)``.
    """

    def __init__(
        self,
        agent: AgentSpec | TrainedAgent | Agent,
        prior: Any = None,
        *,
        gamma: float | None = None,
        horizon: int | None = None,
        seed: int = 0,
        index: int = 0,
    ) -> None:
        self.trained = trained(agent, prior, gamma, horizon, seed)
        t = self.trained
        if isinstance(t, TrainedPythonAgent):
            copy_of_agent = copy.deepcopy(t.agent)
            shape = (t.prior.n_states, t.prior.n_actions)
            self._core = _core.Stepper.python(copy_of_agent, t.label, *shape, t.gamma, t.horizon, seed, index)
        else:
            if t._core.is_oracle:
                raise ValueError(
                    f"agent {t.label!r} is an oracle: it must be shown the true MDP, so it runs only in a "
                    "bbrl.Experiment"
                )
            self._core = _core.Stepper.builtin(t._core, seed, index)
        self._core.start_task()

    # -- identification -------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """The agent's readable name with its parameters."""
        return self.trained.label

    @property
    def n_states(self) -> int:
        return int(self._core.n_states)

    @property
    def n_actions(self) -> int:
        return int(self._core.n_actions)

    @property
    def gamma(self) -> float:
        """The discount the agent was trained for."""
        return float(self._core.gamma)

    @property
    def horizon(self) -> int:
        """The horizon the agent was trained for, in steps."""
        return int(self._core.horizon)

    # -- the life cycle -------------------------------------------------------------------------

    def start_task(self) -> None:
        """A new unknown MDP: the posterior goes back to the prior."""
        self._core.start_task()

    def start_episode(self, state: int) -> None:
        """A new episode of the current task, from ``state``: learned knowledge is kept."""
        self._core.start_episode(_index(state, "state"))

    def act(self, state: int) -> int:
        """The agent's action in ``state`` (an int from 0 to ``n_actions - 1``)."""
        return int(self._core.act(_index(state, "state")))

    def observe(self, state: int, action: int, reward: float, next_state: int) -> None:
        """Online learning from one transition; ``action`` need not be the agent's own."""
        self._core.observe(
            _index(state, "state"), _index(action, "action"), float(reward), _index(next_state, "next_state")
        )

    def action_probabilities(self, state: int) -> np.ndarray:
        """pi(a | state) given what the agent knows, shape (n_actions,): a pure query."""
        return self._core.action_probabilities(_index(state, "state"))

    def snapshot(self) -> Snapshot:
        """Everything the agent's future depends on, random streams included."""
        return self._core.snapshot()

    def restore(self, snapshot: Snapshot) -> None:
        """Goes back to ``snapshot`` (which stays usable for further restores)."""
        if not isinstance(snapshot, _core.Snapshot):
            raise TypeError(f"restore needs a Snapshot from Stepper.snapshot(), got {type(snapshot).__name__}")
        self._core.restore(snapshot)

    def fork(self, seed: int, index: int = 0) -> Stepper:
        """An independent stepper in this one's state, with stream ``(seed, agent_online, index)``."""
        twin = object.__new__(Stepper)
        twin.trained = self.trained
        twin._core = self._core.fork(_index(seed, "seed"), _index(index, "index"))
        return twin

    def __repr__(self) -> str:
        return f"Stepper({self.label}, {self.n_states} states, {self.n_actions} actions, gamma={self.gamma})"
