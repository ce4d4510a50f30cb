"""The episodic protocol: K episodes of H steps in one MDP per run, the agent learning across episodes.

Each run ``i`` plays ``episodes`` episodes on one MDP: the problem's own (a registered finite
environment, or tables given with :meth:`EpisodicExperiment.from_tables`), or MDP ``i`` drawn from a
distribution (a distribution problem such as ``"GC"``, or an :class:`~bbrl.FDM`). An episode lasts
``horizon`` steps, or fewer when it enters a terminal state; the next one starts from the start law.
The agent's task starts once per run, so what it learns in one episode serves the next.

Per episode the core records the undiscounted return, the realised regret (the finite-horizon
optimum ``V*_0`` of the start state, by backward induction, minus the return) and the expected
regret along the path (the sum over the steps of ``V*_h(s) - Q*_h(s, a)`` for the actions taken);
see docs/regret.md. Every agent meets the same MDPs and start states, and results are bit-identical
whatever the thread count (the seed rule is the benchmark protocol's: run ``i`` has the streams of
test MDP ``i``, and its start states come from stream ``(seed, EPISODE_STARTS, i)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core, distributions, problems
from ..agents import Agent, AgentSpec
from ..cancellable import run_cancellable
from ..checks import discount as _discount
from ..checks import integer as _integer
from ..checks import seed as _seed
from ..distributions import FDM
from ..threads import worker_threads
from .results import EpisodicRun
from .workers import Recipe, run_python_agent

__all__ = ["EpisodicExperiment"]


def _env_table(env: Any, name: str, kind: type) -> list[Any]:
    """The core environment's ``terminal_states`` (a flag per state) or ``reward_noise`` (a standard
    deviation per state-action pair), flattened; empty when its environments have no such notion."""
    values = getattr(env, name, None)
    if values is None:
        return []
    values = values() if callable(values) else values
    return [kind(x) for x in np.asarray(values).ravel()]


class EpisodicExperiment:
    """K episodes of H steps per run, paired over agents, with per-episode regret.

    Args:
        problem: a problem of the registry (``bbrl problems``/``bbrl envs``): a finite environment
            such as ``"RiverSwim-Osband"`` (one fixed MDP, its start law; its time limit is the
            default horizon), or a distribution problem such as ``"GC"`` (run ``i`` on the MDP drawn
            with the protocol's stream of test MDP ``i``); or an :class:`~bbrl.FDM` to draw from.
        episodes: K, episodes per run (>= 1).
        n_runs: runs (seeds of the protocol: an MDP, the agent's and the environment's streams and
            the start states of its K episodes), >= 1.
        horizon: H, steps per episode; default: the problem's own episode length (required for a
            problem without one).
        gamma: the discount the agents plan with (their ``Setting``), in [0, 1). Regret is undiscounted.
        seed: the seed every stream derives from.
        name: the experiment's name in tables (default: the problem's).
        env_options: options of a registered environment (e.g. a family's ``size``), as
            ``bbrl envs`` lists them; an option it does not take is refused by name.
    """

    def __init__(
        self,
        problem: str | FDM,
        episodes: int = 100,
        n_runs: int = 20,
        horizon: int | None = None,
        gamma: float = 0.95,
        seed: int = 0,
        name: str | None = None,
        env_options: dict[str, Any] | None = None,
    ) -> None:
        self.episodes = _integer(episodes, "episodes", 1)
        self.n_runs = _integer(n_runs, "n_runs", 1)
        self.gamma = _discount(gamma)
        self.seed = _seed(seed)
        # What a worker process builds the same experiment from (episodic/workers.py).
        self._recipe: Recipe = (
            EpisodicExperiment,
            (problem,),
            {
                "episodes": episodes,
                "n_runs": n_runs,
                "horizon": horizon,
                "gamma": gamma,
                "seed": seed,
                "name": name,
                "env_options": env_options,
            },
        )
        if isinstance(problem, FDM):
            if env_options:
                raise ValueError("a distribution takes no env_options")
            self.test: FDM | None = problem
            self.name = name or problem.name
            self.horizon = self._horizon(horizon, None)
            self._core = _core.EpisodicExperiment.drawn(
                problem._core, self.horizon, self.n_runs, self.episodes, self.gamma, self.seed
            )
            return
        if not isinstance(problem, str):
            raise TypeError(f"problem must be a problem name such as 'RiverSwim-Osband' or an FDM, got {problem!r}")
        entry = problems.entry(problem)
        self.name = name or entry["name"]
        if entry["source"] == "distribution":
            if env_options:
                raise ValueError(f"{entry['name']} is a distribution: it takes no env_options")
            self.test = distributions.get(entry["name"])
            self.horizon = self._horizon(horizon, entry["horizon"])
            self._core = _core.EpisodicExperiment.drawn(
                self.test._core, self.horizon, self.n_runs, self.episodes, self.gamma, self.seed
            )
            return
        if entry["n_states"] is None:
            raise ValueError(f"{entry['name']} is continuous: the episodic protocol needs a finite MDP")
        from ..envs import FiniteEnv, registry

        env = FiniteEnv._wrap(registry.make_core(entry["name"], **(env_options or {})))
        self.test = None
        self.horizon = self._horizon(horizon, env.time_limit)
        self._core = _core.EpisodicExperiment(
            env.transitions,
            env.rewards,
            env.start_law,
            _env_table(env._core, "terminal_states", bool),
            _env_table(env._core, "reward_noise", float),
            self.horizon,
            self.n_runs,
            self.episodes,
            self.gamma,
            self.seed,
        )

    @classmethod
    def from_tables(
        cls,
        transitions: Any,
        rewards: Any,
        start: Any,
        horizon: int,
        terminal: Any = None,
        episodes: int = 100,
        n_runs: int = 20,
        gamma: float = 0.95,
        seed: int = 0,
        name: str = "MDP",
    ) -> EpisodicExperiment:
        """The protocol on one MDP given by its tables ``P[s, a, s']``, ``R[s, a, s']`` (shape
        (S, A, S)), its start law (shape (S,)) and optional terminal flags (shape (S,): entering a
        flagged state ends the episode, its reward paid)."""
        self = object.__new__(cls)
        self.episodes = _integer(episodes, "episodes", 1)
        self.n_runs = _integer(n_runs, "n_runs", 1)
        self.gamma = _discount(gamma)
        self.seed = _seed(seed)
        self.name = str(name)
        self.test = None
        self.horizon = _integer(horizon, "horizon", 1)
        P = np.ascontiguousarray(transitions, dtype=np.float64)
        R = np.ascontiguousarray(rewards, dtype=np.float64)
        mu = np.ascontiguousarray(start, dtype=np.float64)
        if P.ndim != 3 or R.shape != P.shape:
            raise ValueError(f"transitions and rewards must both have shape (S, A, S), got {P.shape} and {R.shape}")
        if mu.ndim != 1:
            raise ValueError(f"start must have shape ({P.shape[0]},), got {mu.shape}")
        flags = [] if terminal is None else [bool(x) for x in np.asarray(terminal).ravel()]
        self._recipe = (
            EpisodicExperiment.from_tables,
            (P, R, mu, horizon),
            {"terminal": terminal, "episodes": episodes, "n_runs": n_runs, "gamma": gamma, "seed": seed, "name": name},
        )
        self._core = _core.EpisodicExperiment(
            P, R, mu, flags, [], self.horizon, self.n_runs, self.episodes, self.gamma, self.seed
        )
        return self

    def _horizon(self, horizon: int | None, own: int | None) -> int:
        if horizon is not None:
            return _integer(horizon, "horizon", 1)
        if own is None:
            raise ValueError(f"{self.name} has no episode length of its own: give horizon=H (steps per episode)")
        return int(own)

    @property
    def n_states(self) -> int:
        return int(self._core.n_states)

    @property
    def n_actions(self) -> int:
        return int(self._core.n_actions)

    @property
    def starts(self) -> np.ndarray:
        """The start state of every episode, shape (n_runs, episodes): the same for every agent."""
        return np.asarray(self._core.starts(), dtype=np.int64)

    @property
    def optima(self) -> np.ndarray:
        """``V*_0`` of every episode's start state, shape (n_runs, episodes)."""
        return self._core.episode_optima()

    def optimal_values(self, run: int = 0) -> np.ndarray:
        """``V*_h(s)`` of run ``run``'s MDP by backward induction, shape (H + 1, S) (row H is zero)."""
        return self._core.optimal_values(_integer(run, "run", 0))

    def prior(self, concentration: float | None = None) -> FDM:
        """The prior the Bayesian agents learn offline from: a Dirichlet of ``concentration`` on every
        next state of every pair, with the problem's rewards. ``None``: on drawn MDPs, the
        distribution they are drawn from (the accurate prior); on a fixed MDP, ``1/S`` (Osband, Russo
        & Van Roy 2013's choice)."""
        if concentration is None and self.test is not None:
            return self.test
        if concentration is None:
            concentration = 1.0 / self.n_states
        if isinstance(concentration, bool) or not isinstance(concentration, (int, float)):
            raise TypeError(f"prior_concentration must be a number, got {concentration!r}")
        theta, rewards, initial = self._core.prior_tables(float(concentration))
        initial_state = None if initial < 0 else int(initial)
        law = self.test.start_law if self.test is not None else None
        label = f"Dir({float(concentration):g})"
        long_name = f"Dirichlet prior of concentration {float(concentration):g}"
        return FDM(theta, rewards, initial_state, label, long_name, start_law=law)

    def run(
        self,
        agent: AgentSpec | Agent,
        prior_concentration: float | None = None,
        threads: int | None = None,
    ) -> EpisodicRun:
        """Trains ``agent`` offline on :meth:`prior` ``(prior_concentration)`` (timed), then plays the
        K episodes of every run.

        Args:
            agent: a built-in agent of :mod:`bbrl.agents`, or a Python agent (a
                :class:`bbrl.agents.Agent` subclass).
            prior_concentration: see :meth:`prior`.
            threads: worker threads for a built-in agent; for a Python agent, worker processes
                (1: run after run in this process; more need a picklable agent whose class a new
                process can import, as in :meth:`bbrl.Experiment.run`). ``None``: every core.
                Never more than ``n_runs``; more than the cores warns (:mod:`bbrl.threads`).
                Results do not depend on it.
        """
        threads = worker_threads(threads, self.n_runs)
        prior = self.prior(prior_concentration)
        if isinstance(agent, Agent):
            trained = agent.train(prior, self.gamma, self.horizon, self.seed)
            arrays = run_python_agent(self, self._recipe, trained.agent, trained.label, threads)
            offline = (trained.offline_seconds, trained.offline_cpu_seconds)
        elif isinstance(agent, AgentSpec):
            core_agent = agent.build_core()
            seconds, cpu_seconds, _work = self._core.learn_offline(core_agent, prior._core)
            arrays = self._run_threaded(core_agent, threads)
            offline = (seconds, cpu_seconds)
        else:
            raise TypeError(
                "agent must be one of bbrl.agents (e.g. agents.PSRL()) or a bbrl.agents.Agent subclass, "
                f"got {type(agent).__name__}"
            )
        returns, regret, expected, steps, cpu, run_seconds, work = arrays
        return EpisodicRun(
            experiment=self.name,
            prior=prior.name,
            agent=agent.label,
            kind=agent.kind,
            gamma=self.gamma,
            horizon=self.horizon,
            seed=self.seed,
            starts=self.starts,
            optima=self.optima,
            returns=returns,
            regret=regret,
            expected_regret=expected,
            steps=steps.astype(np.int64),
            cpu_seconds=cpu,
            run_seconds=run_seconds,
            run_work=np.asarray(work, dtype=np.uint64),
            offline_seconds=float(offline[0]),
            offline_cpu_seconds=float(offline[1]),
        )

    def _run_threaded(self, core_agent: Any, threads: int) -> Any:
        # As bbrl.Experiment does: the core runs in a worker thread, so Ctrl-C cancels it between runs.
        return run_cancellable(lambda progress: self._core.run(core_agent, threads, progress), "bbrl-episodic")

    def __repr__(self) -> str:
        return (
            f"EpisodicExperiment({self.name!r}, episodes={self.episodes}, n_runs={self.n_runs}, "
            f"horizon={self.horizon}, gamma={self.gamma}, seed={self.seed})"
        )
