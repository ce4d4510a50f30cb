"""The benchmark protocol: N test MDPs drawn once, every agent trained offline and run on them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from .. import _core, distributions
from ..agents import Agent, AgentSpec, TrainedAgent, TrainedPythonAgent
from ..cancellable import run_cancellable
from ..checks import discount
from ..checks import integer as _integer
from ..checks import seed as checked_seed
from ..distributions import FDM
from ..intervals import ci95_halfwidth
from ..threads import worker_threads
from . import workers
from .fingerprint import experiment_fingerprint
from .schema import REWARDS_COLUMN, RUN_COLUMNS, Col, describe_host, host_columns, per_mdp_frame

__all__ = ["Experiment", "Run", "learned_text"]


def learned_text(details: dict[str, str]) -> str:
    """What offline learning decided (an agent's ``details``), readable: OPPS-DS's formula in infix,
    else ``key=value`` pairs, or ``""``."""
    if "formula_infix" in details:
        return f"formula {details['formula_infix']}"
    return ", ".join(f"{k}={v}" for k, v in details.items())


def _distribution(value: Any, what: str) -> FDM:
    if isinstance(value, FDM):
        return value
    if isinstance(value, str):
        return distributions.get(value)
    raise TypeError(f"{what} must be an FDM or a distribution name such as 'GC', got {type(value).__name__}")


@dataclass(frozen=True)
class Run:
    """One agent's results on one experiment: one trajectory per test MDP.

    Attributes:
        returns: discounted return of each MDP's trajectory, shape (n_mdps,).
        offline_seconds: wall time of offline learning on the prior, in seconds (exactly 0 for an
            agent that learns nothing offline: declared, not measured).
        online_seconds: wall time of each trajectory (reset and T decisions), in seconds, shape (n_mdps,).
        offline_cpu_seconds: CPU time of offline learning (every thread of the process), in seconds;
            NaN when unknown.
        online_cpu_seconds: CPU time of each trajectory on the thread that ran it, in seconds,
            shape (n_mdps,): what the agent computed, whatever else the machine was doing.
        threads: the worker threads (or processes, for a Python agent) the run used.
        online_work: the work of each trajectory in machine-independent units, shape
            (n_mdps, units), columns in the order of :data:`bbrl.protocol.schema.WORK_UNITS`; the
            same on every run of the seed, whatever the machine or thread count.
        offline_work: the work of offline learning in the same units, shape (units,) (zeros for an
            agent that learns nothing offline); None when unknown (a Python agent's training, an
            agent file written before it was recorded).
        host: the machine, as :func:`bbrl.protocol.schema.describe_host` returns it (CPU model, vector
            extensions, logical cores, load average at the end of the run, CPU clock resolution).
        rewards: with ``record_rewards=True``, the reward of every step of every trajectory,
            shape (n_mdps, horizon), float64, in reward units per step (row ``i`` is test MDP
            ``i``, column ``t`` its step ``t``); its discounted sum over a row is that MDP's return.
            ``None`` when not recorded.
        fingerprint: the experiment's fingerprint (:func:`bbrl.protocol.fingerprint.experiment_fingerprint`:
            its test distribution, N, gamma, T and seed), 16 hex digits: runs with the same
            fingerprint and the same MDPs (``first_mdp``, ``n_mdps``) pair MDP by MDP, which
            :func:`bbrl.analysis.stats.paired_z_test` checks. ``None`` for a run built by hand.
    """

    experiment: str
    prior: str
    agent: str
    agent_kind: str
    params: dict[str, Any]
    n_mdps: int
    gamma: float
    horizon: int
    seed: int
    returns: np.ndarray = field(repr=False)
    offline_seconds: float = 0.0
    #: The index of the first test MDP run: the run covers MDPs ``first_mdp .. first_mdp + n_mdps - 1``
    #: of its experiment (0 unless ``Experiment.run`` was given ``mdps``).
    first_mdp: int = 0
    online_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    details: dict[str, str] = field(default_factory=dict)
    #: The setting the agent was trained in (prior, gamma, horizon, seed): the experiment's own
    #: unless a trained agent was run with ``allow_transfer=True``.
    training: dict[str, Any] = field(default_factory=dict)
    offline_cpu_seconds: float = float("nan")
    online_cpu_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    threads: int = 0
    host: dict[str, Any] = field(default_factory=dict, repr=False)
    rewards: np.ndarray | None = field(default=None, repr=False)
    online_work: np.ndarray | None = field(default=None, repr=False)
    offline_work: np.ndarray | None = field(default=None, repr=False)
    fingerprint: str | None = None

    @property
    def mean(self) -> float:
        """Mean discounted return over the test MDPs."""
        return float(self.returns.mean())

    @property
    def ci95(self) -> float:
        """Half-width of the 95% interval of the mean: 1.96 s / sqrt(N), s with divisor N - 1."""
        return ci95_halfwidth(self.returns)

    @property
    def online_seconds_per_step(self) -> float:
        """Mean online wall time per decision, in seconds."""
        return float(self.online_seconds.mean()) / self.horizon

    def summary(self) -> dict[str, Any]:
        """One row describing the run (what the result tables show)."""
        return {
            Col.EXPERIMENT: self.experiment,
            Col.PRIOR: self.prior,
            Col.AGENT: self.agent,
            Col.MEAN: self.mean,
            Col.CI95: self.ci95,
            Col.OFFLINE_SECONDS: self.offline_seconds,
            Col.ONLINE_SECONDS_PER_TRAJECTORY: float(self.online_seconds.mean()),
            Col.ONLINE_SECONDS_PER_STEP: self.online_seconds_per_step,
            Col.N_MDPS: self.n_mdps,
            Col.SEED: self.seed,
            Col.LEARNED: self.learned,
        }

    @property
    def learned(self) -> str:
        """What offline learning decided, readable (e.g. OPPS-DS's formula), or ``""``."""
        return learned_text(self.details)

    def to_polars(self) -> pl.DataFrame:
        """One row per test MDP: its index, return and online time, with the run's identifiers;
        and, when recorded, the column ``rewards`` (the MDP's T rewards as a list)."""
        values = {
            Col.EXPERIMENT: self.experiment,
            Col.PRIOR: self.prior,
            Col.AGENT: self.agent,
            Col.MDP: np.arange(self.first_mdp, self.first_mdp + self.n_mdps, dtype=np.int64),
            Col.RETURN: self.returns,
            Col.ONLINE_SECONDS: self.online_seconds,
            Col.OFFLINE_SECONDS: self.offline_seconds,
            Col.GAMMA: self.gamma,
            Col.HORIZON: self.horizon,
            Col.SEED: self.seed,
            Col.ONLINE_CPU_SECONDS: self.online_cpu_seconds,
            Col.OFFLINE_CPU_SECONDS: self.offline_cpu_seconds,
            **host_columns(self.host, self.threads),
            Col.ONLINE_WORK: self.online_work,
            Col.OFFLINE_WORK: self.offline_work,
            Col.FINGERPRINT: self.fingerprint,
        }
        if self.rewards is None:
            return per_mdp_frame(RUN_COLUMNS, values, self.n_mdps)
        values[REWARDS_COLUMN] = self.rewards
        return per_mdp_frame((*RUN_COLUMNS, REWARDS_COLUMN), values, self.n_mdps)

    def __str__(self) -> str:
        return (
            f"{self.agent} on {self.experiment} (prior {self.prior}): {self.mean:.2f} ± {self.ci95:.2f} "
            f"over {self.n_mdps} MDPs; offline {self.offline_seconds:.3g} s, "
            f"online {self.online_seconds_per_step * 1e6:.3g} us/step"
        )


def _check_memory(n_mdps: int, test: FDM) -> None:
    """Refuses, with a clear error, a number of test MDPs that cannot fit in memory (they are all
    drawn up front): an allocation failure in the core would abort the process instead."""
    import os

    s, a = test.n_states, test.n_actions
    # Each MDP keeps its (S, A, S) transition table and per-row samplers: about 24 bytes per
    # entry of the table, and the results two floats per MDP.
    needed = n_mdps * (24 * s * a * s + 64 * s * a + 16)
    try:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return
    if needed > available:
        raise ValueError(
            f"n_mdps = {n_mdps} test MDPs of {s} states and {a} actions need about {needed / 2**30:.3g} GiB of "
            f"memory; this machine has {available / 2**30:.3g} GiB"
        )


class Experiment:
    """N test MDPs drawn once from a test distribution, on which agents are compared (paired).

    Args:
        test: the test distribution (an :class:`FDM` or a built-in name such as ``"GC"``).
        n_mdps: number of test MDPs, >= 1 (the paper uses 500).
        gamma: discount factor in [0, 1).
        horizon: decisions per trajectory, in steps; ``None`` uses the paper's formula with
            epsilon = 0.01 (193 for GC/Grid, 161 for GDL at gamma 0.95; the paper's runs pass 250).
        seed: the seed every random stream of the experiment derives from (MDP draws,
            environment, agents): the same seed gives bit-identical results on any thread count.
        name: the experiment's name in tables; defaults to the test distribution's name.
    """

    def __init__(
        self,
        test: FDM | str,
        n_mdps: int = 500,
        gamma: float = 0.95,
        horizon: int | None = None,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        self.test = _distribution(test, "test")
        self.n_mdps = _integer(n_mdps, "n_mdps", 1)
        self.gamma = discount(gamma)
        self.horizon = self.test.default_horizon(self.gamma) if horizon is None else _integer(horizon, "horizon", 1)
        self.seed = checked_seed(seed)
        self.name = name or self.test.name
        _check_memory(self.n_mdps, self.test)
        self._core = _core.Experiment(self.test._core, self.n_mdps, self.gamma, self.horizon, self.seed)
        self._fingerprint: str | None = None

    @property
    def fingerprint(self) -> str:
        """The experiment's fingerprint (16 hex digits): its test distribution, N, gamma, T and seed
        (:func:`bbrl.protocol.fingerprint.experiment_fingerprint`); every :class:`Run` carries it."""
        if self._fingerprint is None:
            self._fingerprint = experiment_fingerprint(
                self.test.to_document(), self.n_mdps, self.gamma, self.horizon, self.seed
            )
        return self._fingerprint

    def transitions(self, index: int) -> np.ndarray:
        """The transition table (S, A, S) of test MDP ``index`` (for analysis; agents never see it)."""
        return self._core.transitions(_integer(index, "index", 0))

    def run(
        self,
        agent: AgentSpec | TrainedAgent | Agent,
        prior: FDM | str | None = None,
        threads: int | None = None,
        progress: bool = False,
        allow_transfer: bool = False,
        record_rewards: bool = False,
        on_progress: Callable[[int], None] | None = None,
        mdps: range | None = None,
    ) -> Run:
        """Trains ``agent`` offline on ``prior`` (timed), then runs one trajectory per test MDP.

        Args:
            agent: an agent from :mod:`bbrl.agents`, or a :class:`~bbrl.agents.TrainedAgent`
                (trained once, e.g. a long OPPS-DS search, and reused: its prior and offline time
                come with it), or a Python agent (a :class:`bbrl.agents.Agent` subclass, or what its
                ``train`` returns): see docs/adding-an-agent.md.
            prior: the distribution the agent believes in; ``None`` uses the test distribution
                (the accurate case).
            threads: worker threads; ``None`` uses every core. Results do not depend on it. For a
                Python agent, the number of worker processes (1: run in this process). Never more
                than the MDPs run; more than the cores warns (:mod:`bbrl.threads`).
            progress: show a progress bar on the terminal.
            allow_transfer: run a trained agent although it was trained with another gamma or
                horizon than this experiment's (a deliberate transfer study); otherwise refused.
            record_rewards: also keep the reward of every step (:attr:`Run.rewards`, n_mdps x
                horizon floats: 8 bytes each, refused above 2 GiB). Returns, times and every random
                stream are exactly those of a run without it.
            on_progress: called with the number of test MDPs done, about every 0.1 s while a
                built-in agent runs (what a grid runner's display shows).
            mdps: run only these test MDPs, a ``range`` with step 1 within ``range(n_mdps)`` (a
                batch of a raced grid); ``None``: every one. Each MDP's return, times and work are
                exactly those it has in a run over every MDP, so batches joined in order are that
                run; :attr:`Run.first_mdp` is the range's start.

        Raises:
            TypeError: ``record_rewards`` is not a bool (or another argument has the wrong type).
            ValueError: the rewards would take more than 2 GiB (the message gives the size).
        """
        if not isinstance(record_rewards, bool):
            raise TypeError(f"record_rewards must be True or False, got {record_rewards!r}")
        if record_rewards:
            _core.reward_buffer_entries(self.n_mdps, self.horizon)  # refuses above the cap, before any work
        if isinstance(agent, TrainedAgent):
            if prior is not None:
                _distribution(prior, "prior")
            agent.check_setting(prior, self.gamma, self.horizon, allow_transfer=allow_transfer)
            spec, prior_fdm = agent.spec, agent.prior
        elif isinstance(agent, (AgentSpec, Agent)):
            spec, prior_fdm = agent, self.test if prior is None else _distribution(prior, "prior")
        else:
            raise TypeError(
                "agent must be one of bbrl.agents (e.g. agents.Random()) or a bbrl.agents.Agent subclass, "
                f"got {type(agent).__name__}"
            )
        if (prior_fdm.n_states, prior_fdm.n_actions) != (self.test.n_states, self.test.n_actions):
            raise ValueError(
                f"prior {prior_fdm.name!r} has {prior_fdm.n_states} states and {prior_fdm.n_actions} actions "
                f"but the test distribution {self.test.name!r} has {self.test.n_states} and {self.test.n_actions}"
            )
        selected = self._selected(mdps)
        threads = worker_threads(threads, len(selected))
        if isinstance(agent, (Agent, TrainedPythonAgent)):
            # Trained here, timed, with the offline Generator of the seed rule (see agents.Agent.train).
            trained = (
                agent
                if isinstance(agent, TrainedPythonAgent)
                else agent.train(prior_fdm, self.gamma, self.horizon, self.seed)
            )
            times = workers.run_trajectories(self, trained, threads, progress, record_rewards, selected)
            used = workers.n_workers(threads, len(selected))
            offline = (trained.offline_seconds, trained.offline_cpu_seconds, trained.offline_work)
            return self._result(spec, prior_fdm, times, offline, trained.details, trained.training, used, selected)
        if isinstance(agent, TrainedAgent):
            core_agent, training = agent._core, agent.training
            offline = (agent.offline_seconds, agent.offline_cpu_seconds, agent.offline_work)
        else:
            core_agent = spec.build_core()
            offline = self._core.learn_offline(core_agent, prior_fdm._core)
            training = {"prior": prior_fdm.name, "gamma": self.gamma, "horizon": self.horizon, "seed": self.seed}
        times = self._run_trajectories(core_agent, threads, progress, spec.label, record_rewards, on_progress, selected)
        return self._result(spec, prior_fdm, times, offline, dict(core_agent.details), training, threads, selected)

    def _selected(self, mdps: range | None) -> range:
        """``mdps`` checked (a non-empty range of step 1 within the experiment), or every MDP."""
        if mdps is None:
            return range(self.n_mdps)
        if not isinstance(mdps, range):
            raise TypeError(f"mdps must be a range of test MDP indices such as range(0, 50), got {type(mdps).__name__}")
        if mdps.step != 1 or len(mdps) == 0 or mdps.start < 0 or mdps.stop > self.n_mdps:
            raise ValueError(
                f"mdps must be a non-empty range of step 1 within range(0, {self.n_mdps}) (the experiment's "
                f"test MDPs), got {mdps!r}"
            )
        return mdps

    def _result(
        self,
        spec: AgentSpec | Agent,
        prior_fdm: FDM,
        times: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray],
        offline: tuple[float, float, Any],
        details: dict[str, str],
        training: dict[str, Any],
        threads: int,
        selected: range,
    ) -> Run:
        returns, online, online_cpu, rewards, online_work = times
        host = describe_host()
        return Run(
            experiment=self.name,
            prior=prior_fdm.name,
            agent=spec.label,
            agent_kind=spec.kind,
            params=spec.params,
            n_mdps=len(selected),
            first_mdp=selected.start,
            gamma=self.gamma,
            horizon=self.horizon,
            seed=self.seed,
            returns=returns,
            offline_seconds=offline[0],
            online_seconds=online,
            details=details,
            training=training,
            offline_cpu_seconds=offline[1],
            online_cpu_seconds=online_cpu,
            threads=threads,
            host=host,
            rewards=rewards,
            online_work=np.asarray(online_work, dtype=np.uint64),
            offline_work=None if offline[2] is None else np.asarray(offline[2], dtype=np.uint64),
            fingerprint=self.fingerprint,
        )

    def _run_trajectories(
        self,
        core_agent: _core.Agent,
        threads: int,
        progress: bool,
        label: str,
        record_rewards: bool,
        on_progress: Callable[[int], None] | None,
        selected: range,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        # The core runs in a worker thread, with or without a bar (bbrl.cancellable): Ctrl-C, or a
        # failing on_progress, cancels it between trajectories.
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        def call(counter: _core.Progress) -> Any:
            return self._core.run(core_agent, threads, counter, record_rewards, selected.start, selected.stop)

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, transient=True, disable=not progress) as bar:
            task = bar.add_task(f"{label} on {self.name}", total=len(selected))

            def on_poll(done: int) -> None:
                bar.update(task, completed=done)
                if on_progress is not None:
                    on_progress(done)

            return run_cancellable(call, "bbrl-run", on_poll)

    def __repr__(self) -> str:
        return (
            f"Experiment(test={self.test.name!r}, n_mdps={self.n_mdps}, gamma={self.gamma}, "
            f"horizon={self.horizon}, seed={self.seed})"
        )
