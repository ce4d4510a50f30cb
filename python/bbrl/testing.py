"""The conformance suite every agent passes, built-in or written in Python.

    from bbrl.testing import check_agent
    check_agent(MyAgent())                 # raises AssertionError naming the failed rule
    check_agent(bbrl.agents.EGreedy(0.1))

The agent is trained on ``prior`` and stepped by hand on MDPs drawn from the prior. Rules:

* **actions**: ``act`` returns an int (NumPy integers are fine) in ``0..A``, and never raises;
* **determinism**: the same seed gives the same actions (training included);
* **probabilities** (when the agent has ``action_probabilities``): shape (A,), finite, >= 0,
  summing to 1; every sampled action has a positive probability; the frequencies of the sampled
  actions agree with the announced probabilities (a 5-sigma test per step and action over many
  trajectories; exact for deterministic policies); asking for them changes nothing;
* **clone**: a copy (``copy()`` for built-ins, ``copy.deepcopy`` of the agent and its Generator for
  Python agents) taken mid-trajectory has an identical future;
* **experiment**: a small :class:`bbrl.Experiment` gives identical returns when run twice.

An oracle (``agents.Optimal()``) must see the true MDP, so it is checked through experiments only.
"""

from __future__ import annotations

import copy
import operator
from typing import Any

import numpy as np

from ._python_agents import Agent, AgentError, online_rng
from .agents import AgentSpec
from .distributions import FDM, get

__all__ = ["ConformanceError", "check_agent"]


class ConformanceError(AssertionError):
    """A broken conformance rule (an AssertionError, so test runners report it as a failure)."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _action(value: Any, n_actions: int) -> int:
    """The action ``value`` stands for under the boundary rules of the runner, or ValueError."""
    if isinstance(value, (bool, np.bool_, float, np.floating)) or not hasattr(type(value), "__index__"):
        raise ValueError(
            f"returned {value!r} of type {type(value).__name__}; an action must be an int in 0..{n_actions} "
            "(NumPy integers are fine)"
        )
    action = operator.index(value)
    if not 0 <= action < n_actions:
        raise ValueError(f"returned action {action}, not one of the actions 0 to {n_actions - 1}")
    return action


class _Stepper:
    """One agent stepped by hand: built-in (the core's hand-stepping API) or Python."""

    def __init__(self, agent: AgentSpec | Agent, prior: FDM, gamma: float, horizon: int, seed: int) -> None:
        self.label = agent.label
        self.n_actions = prior.n_actions
        self.python = isinstance(agent, Agent)
        self.seed = seed
        self.where = "learn_offline"
        if self.python:
            try:
                self.trained: Any = agent.train(prior, gamma, horizon, seed)
            except AgentError as exc:
                raise ConformanceError(f"check_agent({self.label}): {exc}") from exc.__cause__
            self.agent: Any = None
            self.rng: np.random.Generator | None = None
        else:
            self.agent = agent._build()
            self.agent.learn_offline(prior._core, gamma, horizon, seed)

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            raise ConformanceError(f"check_agent({self.label}): {what} raised {_describe(exc)} ({self.where})") from exc

    def reset(self, trajectory: int) -> None:
        self.where = f"trajectory {trajectory}, reset"
        if self.python:
            self.agent = copy.deepcopy(self.trained.agent)
            self.rng = online_rng(self.seed, trajectory)
            self._call("reset", self.agent.reset)
        else:
            self._call("reset", self.agent.reset, self.seed + trajectory)

    def act(self, state: int) -> int:
        if self.python:
            value = self._call("act", self.agent.act, state, self.rng)
        else:
            value = self._call("act", self.agent.act, state)
        try:
            return _action(value, self.n_actions)
        except ValueError as exc:
            raise ConformanceError(f"check_agent({self.label}): act {exc} in state {state} ({self.where})") from None

    def observe(self, state: int, action: int, reward: float, next_state: int) -> None:
        self._call("observe", self.agent.observe, state, action, reward, next_state)

    def has_probabilities(self) -> bool:
        if not self.python:
            return True
        return type(self.trained.agent).action_probabilities is not Agent.action_probabilities

    def probabilities(self, state: int) -> np.ndarray:
        p = self._call("action_probabilities", self.agent.action_probabilities, state)
        try:
            p = np.asarray(p, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            message = f"check_agent({self.label}): action_probabilities returned {p!r} ({self.where})"
            raise ConformanceError(message) from exc
        where = f"in state {state} ({self.where})"
        _require(p.shape == (self.n_actions,), self.label, f"action_probabilities has shape {p.shape} {where}")
        _require(
            bool(np.all(np.isfinite(p)) and np.all(p >= 0)),
            self.label,
            f"action_probabilities {p} has negative or non-finite entries {where}",
        )
        _require(abs(p.sum() - 1.0) <= 1e-9, self.label, f"action_probabilities {p} sum to {float(p.sum())!r} {where}")
        return p

    def copy(self) -> _Stepper:
        twin = copy.copy(self)
        if self.python:
            try:
                twin.agent, twin.rng = copy.deepcopy((self.agent, self.rng))
            except Exception as exc:
                raise ConformanceError(f"check_agent({self.label}): copy.deepcopy failed: {_describe(exc)}") from exc
        else:
            twin.agent = self.agent.copy()
        return twin


def _require(condition: bool, label: str, message: str) -> None:
    if not condition:
        raise ConformanceError(f"check_agent({label}): {message}")


class _Environment:
    """MDP ``k``: drawn from the prior with seed (seed, k); its own Generator for the steps."""

    def __init__(self, prior: FDM, seed: int, k: int) -> None:
        self.P = prior.sample((seed * 1_000_003 + k) % 2**64)
        self.R = prior.rewards
        self.rng = np.random.default_rng([seed, 2, k])
        self.state = prior.initial_state if prior.initial_state is not None else int(self.rng.integers(prior.n_states))

    def step(self, action: int) -> tuple[int, float]:
        row = self.P[self.state, action]
        next_state = int(self.rng.choice(len(row), p=row / row.sum()))
        reward = float(self.R[self.state, action, next_state])
        self.state = next_state
        return next_state, reward


def _trajectory(stepper: _Stepper, prior: FDM, seed: int, k: int, steps: int) -> list[int]:
    env = _Environment(prior, seed, k)
    stepper.reset(k)
    actions = []
    for t in range(steps):
        stepper.where = f"trajectory {k}, step {t}"
        state = env.state
        action = stepper.act(state)
        actions.append(action)
        next_state, reward = env.step(action)
        stepper.observe(state, action, reward, next_state)
    return actions


def check_agent(
    agent: AgentSpec | Agent,
    prior: FDM | str = "GC",
    *,
    gamma: float = 0.95,
    horizon: int = 50,
    seed: int = 0,
    steps: int = 12,
    n_trajectories: int = 200,
) -> list[str]:
    """Runs the conformance suite on ``agent`` (a built-in such as ``agents.EGreedy(0.1)`` or an
    instance of a :class:`bbrl.agents.Agent` subclass); returns the names of the rules checked.

    Raises:
        AssertionError: the first broken rule, with the agent's label and where it broke.
    """
    if not isinstance(agent, (AgentSpec, Agent)):
        raise TypeError(f"check_agent needs a bbrl agent (AgentSpec or Agent instance), got {type(agent).__name__}")
    prior_fdm = get(prior) if isinstance(prior, str) else prior
    label = agent.label
    checked: list[str] = []
    oracle = isinstance(agent, AgentSpec) and agent._build().is_oracle

    if not oracle:
        # actions + determinism: two independent trainings and trajectories with one seed.
        first = _trajectory(_Stepper(agent, prior_fdm, gamma, horizon, seed), prior_fdm, seed, 0, steps)
        second = _trajectory(_Stepper(agent, prior_fdm, gamma, horizon, seed), prior_fdm, seed, 0, steps)
        checked.append("actions")
        _require(first == second, label, f"not deterministic for a seed: actions {first} then {second}")
        checked.append("determinism")

        stepper = _Stepper(agent, prior_fdm, gamma, horizon, seed)
        if stepper.has_probabilities():
            _check_probabilities(stepper, prior_fdm, seed, steps, n_trajectories)
            checked.append("probabilities")
        _check_clone(stepper, prior_fdm, seed, steps)
        checked.append("clone")

    _check_experiment(agent, prior_fdm, gamma, seed)
    checked.append("experiment")
    return checked


def _check_probabilities(stepper: _Stepper, prior: FDM, seed: int, steps: int, n_trajectories: int) -> None:
    A = prior.n_actions
    expected = np.zeros((steps, A))
    variance = np.zeros((steps, A))
    counts = np.zeros((steps, A))
    for k in range(1, n_trajectories + 1):
        env = _Environment(prior, seed, k)
        stepper.reset(k)
        for t in range(steps):
            stepper.where = f"trajectory {k}, step {t}"
            state = env.state
            p = stepper.probabilities(state)
            action = stepper.act(state)
            _require(
                p[action] > 0,
                stepper.label,
                f"act chose action {action} in state {state} but action_probabilities "
                f"gives it probability 0: {p} ({stepper.where})",
            )
            expected[t] += p
            variance[t] += p * (1 - p)
            counts[t, action] += 1
            next_state, reward = env.step(action)
            stepper.observe(state, action, reward, next_state)
    gap = np.abs(counts - expected)
    bad = gap > 5 * np.sqrt(variance) + 0.5
    if bad.any():
        t, a = (int(x) for x in np.argwhere(bad)[0])
        raise ConformanceError(
            f"check_agent({stepper.label}): the sampled actions disagree with action_probabilities: at step {t}, "
            f"action {a} was chosen {int(counts[t, a])} times in {n_trajectories} trajectories, expected "
            f"{expected[t, a]:.1f} ± {np.sqrt(variance[t, a]):.1f}"
        )


def _check_clone(stepper: _Stepper, prior: FDM, seed: int, steps: int) -> None:
    env = _Environment(prior, seed, 0)
    stepper.reset(0)
    half = steps // 2
    for t in range(half):
        stepper.where = f"trajectory 0, step {t}"
        state = env.state
        action = stepper.act(state)
        next_state, reward = env.step(action)
        stepper.observe(state, action, reward, next_state)
    twin = stepper.copy()
    probe = stepper.has_probabilities()
    for t in range(half, half + steps):
        stepper.where = twin.where = f"trajectory 0, step {t}"
        state = env.state
        if probe:
            twin.probabilities(state)  # asking for probabilities must change nothing
        action = stepper.act(state)
        twin_action = twin.act(state)
        _require(
            action == twin_action,
            stepper.label,
            f"a copy taken at step {half} diverged at step {t}: action {action} vs {twin_action} "
            "(the copy must carry the whole state, random generator included"
            + (", and action_probabilities must not change it)" if probe else ")"),
        )
        next_state, reward = env.step(action)
        stepper.observe(state, action, reward, next_state)
        twin.observe(state, action, reward, next_state)


def _check_experiment(agent: AgentSpec | Agent, prior: FDM, gamma: float, seed: int) -> None:
    from .experiment import Experiment

    experiment = Experiment(prior, n_mdps=3, gamma=gamma, horizon=20, seed=seed)
    try:
        first = experiment.run(agent, prior=prior, threads=1).returns
        second = experiment.run(agent, prior=prior, threads=1).returns
    except RuntimeError as exc:
        raise ConformanceError(f"check_agent({agent.label}): the experiment failed: {exc}") from exc
    _require(
        bool(np.array_equal(first, second)),
        agent.label,
        f"two runs of one experiment gave different returns: {first} and {second}",
    )
