"""The conformance suite every agent passes, built-in or written in Python.

    from bbrl.testing import check_agent
    check_agent(MyAgent())                 # raises AssertionError naming the failed rule
    check_agent(bbrl.agents.EGreedy(0.1))

The agent is trained on ``prior`` and stepped through a :class:`bbrl.Stepper` (the one handle
every evaluator uses) on test MDPs drawn from the prior. Rules, the agent life cycle's contract:

* **actions**: ``act`` returns an int (NumPy integers are fine) in ``0..A``, and never raises;
* **determinism**: the same seed gives the same actions (training included);
* **probabilities** (when the agent has ``action_probabilities``): shape (A,), finite, >= 0,
  summing to 1; every sampled action has a positive probability; the frequencies of the sampled
  actions agree with the announced probabilities (a 5-sigma test per step and action over many
  trajectories; exact for deterministic policies);
* **pure queries**: asking for ``action_probabilities`` three times before every decision gives
  the same answers and bit-identical trajectories;
* **snapshot**: after logged actions the agent did not choose and a ``start_episode``, a
  ``snapshot`` restored and fed the same inputs gives the same actions;
* **experiment**: a small :class:`bbrl.Experiment` gives identical returns when run twice, and
  the very return of stepping test MDP 0 by hand through the stepper (the protocol runs on the
  seam).

An oracle (``agents.Optimal()``) must see the true MDP, so it is checked through experiments only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import seeds
from .agents import Agent, AgentError, AgentSpec, Stepper
from .distributions import FDM, get
from .envs import from_distribution
from .protocol import Experiment

__all__ = ["ConformanceError", "check_agent"]


class ConformanceError(AssertionError):
    """A broken conformance rule (an AssertionError, so test runners report it as a failure)."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _Checked:
    """One agent behind a :class:`bbrl.Stepper`, with every failure turned into a ConformanceError
    that names the agent, the rule and where it broke."""

    def __init__(self, agent: AgentSpec | Agent, prior: FDM, gamma: float, horizon: int, seed: int) -> None:
        self.label = agent.label
        self.n_actions = prior.n_actions
        self.seed = seed
        self.where = "learn_offline"
        self.python = isinstance(agent, Agent)
        try:
            self.stepper = Stepper(agent, prior, gamma=gamma, horizon=horizon, seed=seed)
        except AgentError as exc:
            raise ConformanceError(f"check_agent({self.label}): {exc}") from exc.__cause__

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            cause = exc.__cause__ if isinstance(exc, AgentError) and exc.__cause__ is not None else exc
            raise ConformanceError(
                f"check_agent({self.label}): {what} raised {_describe(cause)} ({self.where})"
            ) from exc

    def start_task(self, trajectory: int) -> None:
        """A new task on a stream of its own: a fork of the trained agent with index ``trajectory``."""
        self.where = f"trajectory {trajectory}, start_task"
        self.current = self._call("fork", self.stepper.fork, self.seed, trajectory)
        self._call("start_task", self.current.start_task)

    def act(self, state: int) -> int:
        return int(self._call("act", self.current.act, state))

    def observe(self, state: int, action: int, reward: float, next_state: int) -> None:
        self._call("observe", self.current.observe, state, action, reward, next_state)

    def has_probabilities(self) -> bool:
        if not self.python:
            return True
        return type(self.stepper.trained.agent).action_probabilities is not Agent.action_probabilities

    def probabilities(self, state: int) -> np.ndarray:
        p = self._call("action_probabilities", self.current.action_probabilities, state)
        where = f"in state {state} ({self.where})"
        _require(p.shape == (self.n_actions,), self.label, f"action_probabilities has shape {p.shape} {where}")
        _require(
            bool(np.all(np.isfinite(p)) and np.all(p >= 0)),
            self.label,
            f"action_probabilities {p} has negative or non-finite entries {where}",
        )
        _require(abs(p.sum() - 1.0) <= 1e-9, self.label, f"action_probabilities {p} sum to {float(p.sum())!r} {where}")
        return p

    def snapshot(self) -> Any:
        return self._call("snapshot", self.current.snapshot)

    def restore(self, snapshot: Any) -> None:
        self._call("restore", self.current.restore, snapshot)


def _require(condition: bool, label: str, message: str) -> None:
    if not condition:
        raise ConformanceError(f"check_agent({label}): {message}")


class _Environment:
    """Test MDP ``k`` of an experiment on ``prior`` with ``seed``, stepped by the core with the
    environment stream ``(seed, environment, k)``: what the protocol gives every agent."""

    def __init__(self, prior: FDM, seed: int, k: int) -> None:
        self.env = from_distribution(prior, seed, k)
        self.state = self.env.reset(seed, index=k)

    def step(self, action: int) -> tuple[int, float]:
        next_state, reward, _, _ = self.env.step(action)
        self.state = next_state
        return next_state, reward


def _trajectory(stepper: _Checked, prior: FDM, seed: int, k: int, steps: int) -> list[int]:
    env = _Environment(prior, seed, k)
    stepper.start_task(k)
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
    oracle = isinstance(agent, AgentSpec) and agent.build_core().is_oracle

    if not oracle:
        # actions + determinism: two independent trainings and trajectories with one seed.
        first = _trajectory(_Checked(agent, prior_fdm, gamma, horizon, seed), prior_fdm, seed, 0, steps)
        second = _trajectory(_Checked(agent, prior_fdm, gamma, horizon, seed), prior_fdm, seed, 0, steps)
        checked.append("actions")
        _require(first == second, label, f"not deterministic for a seed: actions {first} then {second}")
        checked.append("determinism")

        stepper = _Checked(agent, prior_fdm, gamma, horizon, seed)
        if stepper.has_probabilities():
            _check_probabilities(stepper, prior_fdm, seed, steps, n_trajectories)
            checked.append("probabilities")
            _check_pure_queries(stepper, prior_fdm, seed, steps)
            checked.append("pure queries")
        _check_snapshot(stepper, prior_fdm, seed, steps)
        checked.append("snapshot")

    _check_experiment(agent, prior_fdm, gamma, seed)
    checked.append("experiment")
    return checked


def _check_probabilities(stepper: _Checked, prior: FDM, seed: int, steps: int, n_trajectories: int) -> None:
    A = prior.n_actions
    expected = np.zeros((steps, A))
    variance = np.zeros((steps, A))
    counts = np.zeros((steps, A))
    for k in range(1, n_trajectories + 1):
        env = _Environment(prior, seed, k)
        stepper.start_task(k)
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


def _check_pure_queries(stepper: _Checked, prior: FDM, seed: int, steps: int) -> None:
    """Two runs on one stream, the second asking for action_probabilities three times before every
    decision: the actions must be bit-identical, and so must the repeated answers."""
    runs = []
    for probe in (False, True):
        env = _Environment(prior, seed, 0)
        stepper.start_task(0)
        actions = []
        for t in range(steps):
            stepper.where = f"trajectory 0, step {t}"
            state = env.state
            if probe:
                answers = [stepper.probabilities(state) for _ in range(3)]
                _require(
                    all(np.array_equal(answers[0], a) for a in answers[1:]),
                    stepper.label,
                    f"action_probabilities changed between two calls: {answers} ({stepper.where})",
                )
            action = stepper.act(state)
            actions.append(action)
            next_state, reward = env.step(action)
            stepper.observe(state, action, reward, next_state)
        runs.append(actions)
    _require(
        runs[0] == runs[1],
        stepper.label,
        f"asking for action_probabilities changed the trajectory: actions {runs[0]} without, {runs[1]} with",
    )


def _next_prime(n: int) -> int:
    n = max(n, 2)
    while any(n % d == 0 for d in range(2, int(n**0.5) + 1)):
        n += 1
    return n


def _check_snapshot(stepper: _Checked, prior: FDM, seed: int, steps: int) -> None:
    """A snapshot taken mid-task (after logged actions the agent did not choose, and a new
    episode), restored, then fed the same inputs, gives the same actions."""
    env = _Environment(prior, seed, 0)
    # The logged actions: an index of the kernel purpose that no experiment uses.
    logged = seeds.generator(seed, "kernel", 99)
    stepper.start_task(0)
    for t in range(steps):
        # observe must accept any action, not only the agent's own (replay feeds logged ones).
        stepper.where = f"trajectory 0, logged step {t}"
        state = env.state
        action = int(logged.integers(prior.n_actions))
        next_state, reward = env.step(action)
        stepper.observe(state, action, reward, next_state)
    stepper.where = "trajectory 0, start_episode"
    stepper._call("start_episode", stepper.current.start_episode, env.state)
    snapshot = stepper.snapshot()
    inputs: list[tuple[int, float, int]] = []
    first: list[int] = []
    # A prime number of steps, so that no short cycle of an agent that keeps state outside
    # itself returns to its start by chance.
    for t in range(_next_prime(steps)):
        stepper.where = f"trajectory 0, step {t} after the snapshot"
        state = env.state
        action = stepper.act(state)
        first.append(action)
        next_state, reward = env.step(action)
        inputs.append((state, reward, next_state))
        stepper.observe(state, action, reward, next_state)
    stepper.restore(snapshot)
    for t, (state, reward, next_state) in enumerate(inputs):
        stepper.where = f"trajectory 0, step {t} after restore"
        action = stepper.act(state)
        _require(
            action == first[t],
            stepper.label,
            f"restore then replay diverged at step {t}: action {action} vs {first[t]} (the snapshot must carry "
            "the whole state, random generators included)",
        )
        stepper.observe(state, action, reward, next_state)


def _check_experiment(agent: AgentSpec | Agent, prior: FDM, gamma: float, seed: int) -> None:
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
    if isinstance(agent, AgentSpec) and agent.build_core().is_oracle:
        return
    # MDP 0 stepped by hand through a stepper, with the protocol's streams: the same return.
    stepper = Stepper(agent, prior, gamma=gamma, horizon=experiment.horizon, seed=seed, index=0)
    env = _Environment(prior, seed, 0)
    total, discount = 0.0, 1.0
    for _ in range(experiment.horizon):
        state = env.state
        action = stepper.act(state)
        next_state, reward = env.step(action)
        total += discount * reward
        discount *= gamma
        stepper.observe(state, action, reward, next_state)
    _require(
        total == first[0],
        agent.label,
        f"stepping test MDP 0 by hand gave the return {total!r}, the experiment {first[0]!r}",
    )
