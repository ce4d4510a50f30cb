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

The evaluators run in the Rust core and drive the agent through its stepping handle
(:class:`bbrl.Stepper`), so built-in and Python agents (``bbrl.agents.Agent`` subclasses, which must
implement ``action_probabilities`` for PSRS and PERS) are evaluated alike. ``runs=`` repeats an
evaluation with independent streams, in parallel for built-in agents (bit-identical whatever the
thread count) and one after the other for Python agents, which hold the GIL.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from . import _core
from ._fileio import write_atomic

__all__ = [
    "Dataset",
    "ReplayResult",
    "ReplayRuns",
    "binomial_survival",
    "evaluate",
    "online_returns",
]

REQUIRED_COLUMNS = ("episode", "t", "state", "action", "reward", "next_state")
ENVIRONMENTS = ("SixArms", "RiverSwim-Osband", "RiverSwim-Strehl")


def _episode_end(value: Any) -> tuple[str, int]:
    """(kind, horizon) for the core from ``"start"``, ``"terminal"`` or a horizon (int >= 1)."""
    if isinstance(value, bool):
        raise TypeError("episode_end must be 'start', 'terminal' or an int horizon, got a bool")
    if isinstance(value, (int, np.integer)):
        if value < 1:
            raise ValueError(f"an episode horizon must be >= 1 step, got {value}")
        return "horizon", int(value)
    if value in ("start", "terminal"):
        return str(value), 0
    raise ValueError(f"episode_end must be 'start' (return to the start state), 'terminal' or an int, got {value!r}")


def _count(value: Any, name: str, minimum: int, optional: bool = True) -> int | None:
    """An int >= ``minimum`` (or None when ``optional``), else a clear error naming ``name``."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        allowed = " (or None)" if optional else ""
        raise ValueError(f"{name} must be an int >= {minimum}{allowed}, got {value!r}")
    return int(value)


def _read_frame(source: Any) -> pl.DataFrame:
    if isinstance(source, pl.DataFrame):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"log file {str(path)!r} does not exist")
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            return pl.read_parquet(path)
        if suffix == ".csv":
            return pl.read_csv(path)
        raise ValueError(f"log file {str(path)!r}: expected a .parquet or .csv file")
    raise TypeError(f"a log is a polars DataFrame or a .parquet/.csv path, got {type(source).__name__}")


def _probability_columns(frame: pl.DataFrame, n_actions: int) -> list[str] | None:
    names = [f"p_{a}" for a in range(n_actions)]
    present = [n for n in names if n in frame.columns]
    if not present:
        return None
    if len(present) != n_actions:
        missing = sorted(set(names) - set(present))
        raise ValueError(f"per-row logging probabilities need columns p_0..p_{n_actions - 1}; missing {missing}")
    return names


def _int_column(frame: pl.DataFrame, name: str) -> np.ndarray:
    column = frame[name]
    if column.null_count():
        raise ValueError(f"column {name!r} has {column.null_count()} missing values")
    if not column.dtype.is_integer():
        raise TypeError(f"column {name!r} must hold integers, got {column.dtype}")
    return column.cast(pl.Int64).to_numpy()


class Dataset:
    """A validated log of transitions of a finite environment.

    Args:
        data: a polars DataFrame or a ``.parquet``/``.csv`` file with columns ``episode``, ``t``
            (0, 1, ... within an episode), ``state``, ``action``, ``reward``, ``next_state``, and
            optionally ``terminal`` (bool) and the per-row logging probabilities ``p_0``..``p_{A-1}``.
        n_states, n_actions: the sizes of the state and action spaces (ids are ``0..n-1``).
        start_state: the state every episode starts in.
        logging_policy: the logging policy as an ``(n_states, n_actions)`` table of probabilities;
            ``None`` uses the ``p_*`` columns when present, else the policy is unknown (only the
            queue evaluator can then use the log).
        stationary: with per-row probabilities, whether they depend on the state only (checked:
            rows of one state must agree); ``False`` keeps them per row (history-dependent).

    Rows are sorted by ``(episode, t)``. Invalid ids, probabilities outside [0, 1] or not summing
    to 1, a logged action of probability 0 and disagreeing rows of a stationary log raise
    ``ValueError``. A trailing episode that is incomplete under an evaluation's episode end is
    dropped with a warning at evaluation time.
    """

    def __init__(
        self,
        data: Any,
        n_states: int,
        n_actions: int,
        start_state: int = 0,
        logging_policy: Any = None,
        stationary: bool = True,
    ) -> None:
        frame = _read_frame(data)
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"the log lacks columns {missing} (needs {list(REQUIRED_COLUMNS)})")
        for name, value, minimum in (
            ("n_states", n_states, 1),
            ("n_actions", n_actions, 1),
            ("start_state", start_state, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
                raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
        frame = frame.sort(["episode", "t"], maintain_order=True)
        table = rows = None
        prob_columns = _probability_columns(frame, int(n_actions))
        if logging_policy is not None:
            table = np.ascontiguousarray(logging_policy, dtype=np.float64)
            if table.shape != (n_states, n_actions):
                raise ValueError(f"logging_policy must have shape ({n_states}, {n_actions}), got {table.shape}")
        elif prob_columns is not None:
            rows = np.ascontiguousarray(frame.select(prob_columns).to_numpy(), dtype=np.float64)
        reward = frame["reward"]
        if reward.null_count():
            raise ValueError(f"column 'reward' has {reward.null_count()} missing values")
        terminal = None
        if "terminal" in frame.columns:
            terminal = frame["terminal"].cast(pl.Boolean).to_numpy().astype(bool)
        self._core = _core.ReplayDataset(
            int(n_states),
            int(n_actions),
            int(start_state),
            dict(
                episode=_int_column(frame, "episode"),
                t=_int_column(frame, "t"),
                state=_int_column(frame, "state"),
                action=_int_column(frame, "action"),
                reward=reward.cast(pl.Float64).to_numpy(),
                next_state=_int_column(frame, "next_state"),
                terminal=terminal,
                logging_table=table,
                logging_rows=rows,
                stationary=bool(stationary),
            ),
        )
        self._frame = frame

    @classmethod
    def collect(
        cls,
        env: Any,
        logging_policy: Any,
        n_episodes: int,
        seed: int = 0,
        *,
        episode_end: Any = "start",
        discount: float | None = None,
        max_steps: int = 100_000,
    ) -> Dataset:
        """A log of ``n_episodes`` episodes of the stationary ``logging_policy`` ((S, A) table) on
        ``env``, a ``bbrl.envs.FiniteEnv`` with a single start state or a name (``"SixArms"``,
        ``"RiverSwim-Osband"``, ``"RiverSwim-Strehl"``, with ``discount``); the log carries the
        policy as its table and a ``terminal`` column."""
        kind, horizon = _episode_end(episode_end)
        policy = np.ascontiguousarray(logging_policy, dtype=np.float64)
        if policy.ndim != 2:
            raise ValueError(f"logging_policy must be an (S, A) table, got shape {policy.shape}")
        core = _core.replay_collect(
            _environment(env, discount),
            policy,
            _count(n_episodes, "n_episodes", 1, optional=False),
            kind,
            horizon,
            _count(max_steps, "max_steps", 1, optional=False),
            _count(seed, "seed", 0, optional=False),
        )
        columns = core.columns()
        episode = np.zeros(core.n_rows, dtype=np.int64)
        t = np.zeros(core.n_rows, dtype=np.int64)
        _number_episodes(columns, core, kind, horizon, episode, t)
        frame = pl.DataFrame({"episode": episode, "t": t, **{k: columns[k] for k in columns}})
        return cls(frame, core.n_states, core.n_actions, core.start_state, logging_policy=policy)

    @property
    def n_states(self) -> int:
        return int(self._core.n_states)

    @property
    def n_actions(self) -> int:
        return int(self._core.n_actions)

    @property
    def start_state(self) -> int:
        return int(self._core.start_state)

    @property
    def n_rows(self) -> int:
        """The number of logged transitions."""
        return int(self._core.n_rows)

    @property
    def n_episodes(self) -> int:
        """The number of logged episodes (complete or not)."""
        return int(self._core.n_episodes)

    @property
    def logging_policy(self) -> np.ndarray | None:
        """The stationary logging policy (S, A), NaN rows for states the log never visits; ``None``
        if it is unknown or per row."""
        return self._core.logging_table()

    def uniform_prior(self, concentration: float = 1.0, name: str = "replay-prior") -> Any:
        """A prior for training agents on this log's state and action spaces: Dirichlet
        concentration ``concentration`` on every transition, and as reward table the mean logged
        reward of each (state, action, next state), 0 where the log has none. The built-in agents
        treat rewards as known (as in the BBRL protocol), so this reading of the rewards from the log
        is an assumption to state when reporting results."""
        from .distributions import FDM

        S, A = self.n_states, self.n_actions
        sums = np.zeros(S * A * S)
        counts = np.zeros(S * A * S)
        f = self._frame
        index = (f["state"].to_numpy() * A + f["action"].to_numpy()) * S + f["next_state"].to_numpy()
        np.add.at(sums, index, f["reward"].to_numpy())
        np.add.at(counts, index, 1.0)
        rewards = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0).reshape(S, A, S)
        theta = np.full((S, A, S), float(concentration))
        return FDM(theta=theta, rewards=rewards, initial_state=self.start_state, name=name)

    def to_polars(self) -> pl.DataFrame:
        """The log, sorted by (episode, t)."""
        return self._frame

    def write_parquet(self, path: str | os.PathLike[str]) -> Path:
        """Writes the log (and the stationary logging policy as ``p_*`` columns) atomically."""
        frame = self._frame
        table = self.logging_policy
        if table is not None and "p_0" not in frame.columns:
            states = frame["state"].to_numpy()
            frame = frame.with_columns(pl.Series(f"p_{a}", table[states, a]) for a in range(self.n_actions))
        import io

        buffer = io.BytesIO()
        frame.write_parquet(buffer)
        return write_atomic(path, buffer.getvalue())

    def __repr__(self) -> str:
        return (
            f"Dataset({self.n_rows} transitions, {self.n_episodes} episodes, S={self.n_states}, A={self.n_actions}, "
            f"start={self.start_state}, logging={self._core.logging_kind})"
        )


def _number_episodes(
    columns: dict[str, np.ndarray], core: Any, kind: str, horizon: int, episode: np.ndarray, t: np.ndarray
) -> None:
    """Episode ids and step counters of a collected log, from its episode-end rule (vectorised)."""
    n = core.n_rows
    steps = np.arange(n)
    if kind == "horizon":
        ends = (steps % horizon) == horizon - 1
    elif kind == "terminal":
        ends = columns["terminal"].astype(bool)
    else:
        ends = columns["next_state"] == core.start_state
    starts = np.concatenate(([True], ends[:-1]))
    episode[:] = np.cumsum(starts) - 1
    first_row = np.flatnonzero(starts)
    t[:] = steps - first_row[episode]


def _handle(agent: Any) -> tuple[Any, bool]:
    """The core stepping handle on a trained agent, and whether it is a Python agent (whose runs
    go one after the other: it holds the GIL)."""
    from ._python_agents import Agent, TrainedPythonAgent
    from .agents import AgentSpec, TrainedAgent
    from .stepper import Stepper

    if isinstance(agent, Stepper):
        return agent._core, isinstance(agent.trained, TrainedPythonAgent)
    if isinstance(agent, (AgentSpec, Agent)):
        raise TypeError(f"{agent.label} is not trained: pass agent.train(prior, gamma) (a trained agent)")
    if not isinstance(agent, TrainedAgent):
        raise TypeError(
            "agent must be a trained agent (bbrl.agents.X(...).train(prior) or a trained bbrl.agents.Agent "
            f"subclass) or a bbrl.Stepper, got {type(agent).__name__}"
        )
    handle = Stepper(agent)
    return handle._core, isinstance(agent, TrainedPythonAgent)


def _environment(env: Any, discount: float | None) -> Any:
    """The core environment of a ``bbrl.envs.FiniteEnv``, or of a named one (``"SixArms"``,
    ``"RiverSwim-Osband"``, ``"RiverSwim-Strehl"``; ``discount`` applies to names only)."""
    from . import envs

    if isinstance(env, envs.FiniteEnv):
        return env._core
    if isinstance(env, str):
        key = env.lower().replace("_", "").replace(" ", "")
        if key == "sixarms":
            return envs.six_arms(0.95 if discount is None else discount)._core
        if key in ("riverswim-osband", "riverswim-strehl"):
            return envs.river_swim(key.split("-")[1], discount)._core
        raise ValueError(f"unknown environment {env!r}: SixArms, RiverSwim-Osband or RiverSwim-Strehl")
    raise TypeError(f"env must be a bbrl.envs.FiniteEnv or an environment name, got {type(env).__name__}")


@dataclass(frozen=True)
class ReplayResult:
    """One evaluation.

    Attributes:
        method: ``"queue"``, ``"psrs"`` or ``"pers"``.
        returns: the discounted return of each emitted episode, in order (numpy float64).
        lengths: the number of steps of each emitted episode.
        tuples_used: logged transitions consumed (popped by Queue/PSRS, accepted or not; proposed by PERS).
        proposals: pops (Queue, PSRS) or proposed episodes (PERS).
        accepted: accepted pops (PSRS), accepted episodes (PERS), pops (Queue).
        stop_reason: ``"empty_queue"``, ``"empty_stream"``, ``"data_exhausted"`` or ``"max_episodes"``;
            ``stop_message`` says it in words.
        m_values: PERS: the M each proposal was tested against.
        weighted_returns: PERS with ``weighted=True``: one estimate per logged episode index T = 1..N,
            R(T) / P(Binomial(N, 1/M) >= T) while episodes were accepted, 0 after (unbiased for each T).
        trace: with ``trace=True``: every transition fed to the agent in emitted episodes.
    """

    method: str
    seed: int
    run: int
    returns: np.ndarray
    lengths: np.ndarray
    tuples_used: int
    proposals: int
    accepted: int
    stop_reason: str
    stop_message: str
    m_values: np.ndarray
    weighted_returns: np.ndarray | None = None
    trace: pl.DataFrame | None = None

    @property
    def n_episodes(self) -> int:
        """The number of emitted episodes."""
        return len(self.returns)

    def to_polars(self) -> pl.DataFrame:
        """One row per emitted episode (``episode``, ``return``, ``length``); with weighted estimates,
        one row per logged episode index and a ``weighted_return`` column (``return`` null past the
        last emitted episode)."""
        n = self.n_episodes if self.weighted_returns is None else len(self.weighted_returns)
        returns = np.full(n, np.nan)
        returns[: self.n_episodes] = self.returns
        lengths = np.zeros(n, dtype=np.int64)
        lengths[: self.n_episodes] = self.lengths
        columns: dict[str, Any] = {
            "run": np.full(n, self.run, dtype=np.int64),
            "episode": np.arange(n, dtype=np.int64),
            "return": returns,
            "length": lengths,
        }
        if self.weighted_returns is not None:
            columns["weighted_return"] = self.weighted_returns
        return pl.DataFrame(columns).with_columns(pl.col("return").fill_nan(None))

    def __repr__(self) -> str:
        return (
            f"ReplayResult({self.method}: {self.n_episodes} episodes, {self.tuples_used} tuples used, "
            f"stopped: {self.stop_message})"
        )


@dataclass(frozen=True)
class ReplayRuns:
    """Repeated evaluations (``runs=``): ``results[i]`` used the streams of run ``i``."""

    results: list[ReplayResult] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> ReplayResult:
        return self.results[index]

    @property
    def n_episodes(self) -> np.ndarray:
        """Emitted episodes per run."""
        return np.array([r.n_episodes for r in self.results], dtype=np.int64)

    def curve(self, weighted: bool = False) -> pl.DataFrame:
        """Per episode index: the number of runs that reached it, the mean return over them and the
        half-width of a 95% normal interval (1.96 s / sqrt(n)). ``weighted=True`` averages the
        importance-weighted estimates over every run instead (PERS with ``weighted=True``)."""
        if weighted:
            if any(r.weighted_returns is None for r in self.results):
                raise ValueError("weighted curves need method='pers' with weighted=True")
            matrix = np.vstack([r.weighted_returns for r in self.results])
        else:
            width = max((r.n_episodes for r in self.results), default=0)
            matrix = np.full((len(self.results), width), np.nan)
            for i, r in enumerate(self.results):
                matrix[i, : r.n_episodes] = r.returns
        return _curve_frame(matrix)

    def to_polars(self) -> pl.DataFrame:
        """Every run's :meth:`ReplayResult.to_polars`, stacked."""
        return pl.concat([r.to_polars() for r in self.results])

    def plot(
        self, truth: np.ndarray | None = None, ax: Any = None, weighted: bool = False, label: str = "replay"
    ) -> Any:
        """The learning curve: mean return per episode index with its 95% band, and, if given, the
        online truth (a (runs, episodes) array from :func:`online_returns`) with its band."""
        import matplotlib

        if ax is None:
            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(7, 4))
        curve = self.curve(weighted=weighted)
        _band(ax, curve, label, "C0")
        if truth is not None:
            _band(ax, _curve_frame(np.asarray(truth, dtype=np.float64)), "online truth", "C1")
        ax.set_xlabel("episode")
        ax.set_ylabel("discounted return")
        ax.legend()
        return ax


def _curve_frame(matrix: np.ndarray) -> pl.DataFrame:
    if matrix.size == 0:
        return pl.DataFrame({"episode": [], "runs": [], "mean": [], "ci95": []})
    reached = np.sum(~np.isnan(matrix), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(matrix, axis=0)
        sd = np.nanstd(matrix, axis=0, ddof=1)
    half = np.where(reached > 1, 1.96 * sd / np.sqrt(np.maximum(reached, 1)), np.nan)
    return pl.DataFrame({"episode": np.arange(matrix.shape[1]), "runs": reached, "mean": mean, "ci95": half})


def _band(ax: Any, curve: pl.DataFrame, label: str, color: str) -> None:
    x = curve["episode"].to_numpy()
    mean = curve["mean"].to_numpy()
    half = np.nan_to_num(curve["ci95"].to_numpy())
    ax.plot(x, mean, color=color, label=label)
    ax.fill_between(x, mean - half, mean + half, color=color, alpha=0.25, linewidth=0)


def evaluate(
    agent: Any,
    data: Dataset,
    method: str,
    seed: int = 0,
    *,
    episode_end: Any = "start",
    gamma: float | None = None,
    runs: int | None = None,
    threads: int | None = None,
    m: str | float | None = None,
    max_length: int | None = None,
    weighted: bool = False,
    max_episodes: int | None = None,
    trace: bool = False,
) -> ReplayResult | ReplayRuns:
    """Replays ``data`` to ``agent`` (a trained agent) with ``method`` (``"queue"``, ``"psrs"``,
    ``"pers"``).

    Args:
        episode_end: ``"start"`` (an episode ends when the walk returns to the start state),
            ``"terminal"`` (the log's ``terminal`` column) or an int horizon in steps.
        gamma: discount of the reported returns; default the agent's training discount.
        runs: ``None`` for one :class:`ReplayResult`; an int for a :class:`ReplayRuns` of that many
            independent evaluations run in parallel on ``threads`` workers (default every core).
        m: PERS only: ``"policy"`` (default; exact bound from the agent's policy at the start of each
            episode, for agents whose policy is fixed within an episode such as episodic PSRL),
            ``"per_step"`` (looser, same validity), ``"logging"`` (1 / min over episodes of the
            logging probability: a fixed M valid for every agent) or a number (fixed M, checked).
        max_length: PERS: the longest possible episode when episodes have no fixed horizon.
        weighted: PERS: also return the importance-weighted estimates (needs a fixed M).
        max_episodes: stop after this many emitted episodes.
        trace: keep every transition fed to the agent (``result.trace``).
    """
    handle, python_agent = _handle(agent)
    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a bbrl.replay.Dataset, got {type(data).__name__}")
    kind, horizon = _episode_end(episode_end)
    _complete, dropped_rows, dropped_id = data._core.complete_episodes(kind, horizon)
    if dropped_rows:
        warnings.warn(
            f"the log's last episode ({dropped_id}) is incomplete under episode_end={episode_end!r}: its "
            f"{dropped_rows} transitions are left out (a partial episode would bias the evaluators)",
            stacklevel=2,
        )
    m_rule, m_value = (None, None)
    if isinstance(m, str):
        m_rule = m
    elif m is not None:
        if isinstance(m, bool) or not isinstance(m, (int, float, np.number)) or not math.isfinite(m):
            raise TypeError(f"m must be 'policy', 'per_step', 'logging' or a finite number, got {m!r}")
        m_value = float(m)
    n_runs = _count(runs, "runs", 1) or 1
    if gamma is not None and not (isinstance(gamma, (int, float, np.number)) and 0.0 <= gamma <= 1.0):
        raise ValueError(f"gamma must be a number in [0, 1] (or None for the agent's), got {gamma!r}")
    outcomes = _core.replay_evaluate(
        handle,
        python_agent,
        data._core,
        dict(
            method=str(method),
            episode_end=kind if kind != "horizon" else horizon,
            gamma=None if gamma is None else float(gamma),
            seed=_count(seed, "seed", 0, optional=False),
            runs=n_runs,
            threads=_count(threads, "threads", 1),
            m_rule=m_rule,
            m_value=m_value,
            max_length=_count(max_length, "max_length", 1),
            weighted=bool(weighted),
            max_episodes=_count(max_episodes, "max_episodes", 1),
            trace=bool(trace),
        ),
    )
    results = [_result(str(method), int(seed), i, o) for i, o in enumerate(outcomes)]
    return results[0] if runs is None else ReplayRuns(results)


def _result(method: str, seed: int, run: int, o: dict[str, Any]) -> ReplayResult:
    trace = pl.DataFrame(o["trace"]) if "trace" in o else None
    return ReplayResult(
        method=method,
        seed=seed,
        run=run,
        returns=o["returns"],
        lengths=o["lengths"],
        tuples_used=int(o["tuples_used"]),
        proposals=int(o["proposals"]),
        accepted=int(o["accepted"]),
        stop_reason=o["stop_reason"],
        stop_message=o["stop_message"],
        m_values=o["m_values"],
        weighted_returns=o["weighted"],
        trace=trace,
    )


def online_returns(
    agent: Any,
    env: Any,
    n_episodes: int,
    runs: int = 100,
    seed: int = 0,
    *,
    episode_end: Any = "start",
    discount: float | None = None,
    gamma: float | None = None,
    max_steps: int = 1000,
    threads: int | None = None,
) -> np.ndarray:
    """The truth a replay estimates: ``runs`` independent online runs of ``agent`` on ``env`` (as
    in :meth:`Dataset.collect`), ``n_episodes`` episodes each with the same episode end; a (runs, n_episodes)
    array of discounted returns (discount ``gamma``, default the agent's). An episode still running
    after ``max_steps`` steps is cut there, which changes its return by at most
    ``gamma**max_steps * max|r| / (1 - gamma)``."""
    kind, horizon = _episode_end(episode_end)
    handle, python_agent = _handle(agent)
    return _core.replay_online(
        handle,
        python_agent,
        _environment(env, discount),
        dict(
            n_episodes=_count(n_episodes, "n_episodes", 1, optional=False),
            episode_end=kind if kind != "horizon" else horizon,
            gamma=None if gamma is None else float(gamma),
            max_steps=_count(max_steps, "max_steps", 1, optional=False),
            seed=_count(seed, "seed", 0, optional=False),
            runs=_count(runs, "runs", 1, optional=False),
            threads=_count(threads, "threads", 1),
        ),
    )


def binomial_survival(n: int, p: float, t: Any) -> np.ndarray:
    """P(Binomial(n, p) >= t) for each t, accurate far in the upper tail (the weight of the
    importance-weighted PERS estimate)."""
    return _core.binomial_survival(int(n), float(p), np.atleast_1d(np.asarray(t, dtype=np.int64)))
