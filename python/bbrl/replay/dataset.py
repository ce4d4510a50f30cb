"""Logged data for replay: reading a log (Parquet, CSV or a frame), the validated :class:`Dataset`,
and collecting a log from a named or given finite environment."""

from __future__ import annotations

import hashlib
import io
import os
import tokenize
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .. import _core, envs
from ..checks import count as _count
from ..distributions import FDM
from ..fileio import check_suffix, read_file_bytes, read_table, regular_file, write_atomic
from ..protocol.fingerprint import document_fingerprint

__all__ = [
    "REQUIRED_COLUMNS",
    "Dataset",
    "environment_core",
    "episode_end_rule",
    "integer_column",
    "read_log",
    "read_logging_policy",
]

REQUIRED_COLUMNS = ("episode", "t", "state", "action", "reward", "next_state")


def episode_end_rule(value: Any) -> tuple[str, int]:
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


def read_log(source: Any) -> pl.DataFrame:
    """A log as a frame: a polars DataFrame as is, or a ``.parquet`` or ``.csv`` file read.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a path that is not a regular file (a directory, a FIFO), another suffix, or a
            file that does not read as its format (empty, truncated, not Parquet); the message
            names the file.
    """
    if isinstance(source, pl.DataFrame):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = regular_file(source, "log file")
        if path.suffix.lower() not in (".parquet", ".csv"):
            raise ValueError(f"log file {str(path)!r}: expected a .parquet or .csv file")
        if path.stat().st_size == 0:
            raise ValueError(f"log file {str(path)!r} is empty (0 bytes)")
        return read_table(path, "log file")
    raise TypeError(f"a log is a polars DataFrame or a .parquet/.csv path, got {type(source).__name__}")


def read_logging_policy(path: str | os.PathLike[str]) -> np.ndarray:
    """A logging policy table saved with ``numpy.save`` (``.npy``), read without pickle.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file, for a file that is not a ``.npy`` array of numbers.
    """
    data = read_file_bytes(path, "logging policy file")
    try:
        table = np.load(io.BytesIO(data), allow_pickle=False)
    # numpy: a bad header (parsed as a Python literal: SyntaxError, TokenError), a short file, not .npy
    except (ValueError, EOFError, OSError, SyntaxError, tokenize.TokenError) as exc:
        reason = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ValueError(f"logging policy file {str(path)!r} is not a .npy array ({reason})") from None
    if not isinstance(table, np.ndarray) or table.dtype.kind not in "biuf":
        raise ValueError(f"logging policy file {str(path)!r} does not hold an array of numbers")
    return table


def _probability_columns(frame: pl.DataFrame, n_actions: int) -> list[str] | None:
    names = [f"p_{a}" for a in range(n_actions)]
    present = [n for n in names if n in frame.columns]
    if not present:
        return None
    if len(present) != n_actions:
        missing = sorted(set(names) - set(present))
        raise ValueError(f"per-row logging probabilities need columns p_0 to p_{n_actions - 1}; missing {missing}")
    return names


def integer_column(frame: pl.DataFrame, name: str) -> np.ndarray:
    """Column ``name`` of a log as int64 values.

    Raises:
        ValueError: it has missing values.
        TypeError: it does not hold integers (the message names the column and its type).
    """
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
        start_state: the state every episode starts in (checked), or ``None``: episodes start
            where the log says, and replay starts its episodes in the logged start states, taken in
            a random order, each once (Queue and PSRS stop when they are used up; PERS proposes
            each episode from its own start and then needs a fixed M; the model-based evaluator
            draws starts from their logged frequencies).
        logging_policy: the logging policy as an ``(n_states, n_actions)`` table of probabilities;
            ``None`` uses the ``p_*`` columns when present, else the policy is unknown (only the
            queue evaluator can then use the log).
        stationary: with per-row probabilities, whether they depend on the state only (checked:
            rows of one state must agree); ``False`` keeps them per row (history-dependent).
        discount: the discount of the environment the log came from, if known (set by
            :meth:`collect`); with 1 (undiscounted episodes), an evaluation that reports returns
            discounted by the agent's training discount warns.

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
        start_state: int | None = 0,
        logging_policy: Any = None,
        stationary: bool = True,
        discount: float | None = None,
    ) -> None:
        frame = read_log(data)
        arguments = (n_states, n_actions, start_state, logging_policy, stationary, discount)
        if not isinstance(data, (str, os.PathLike)):
            self._load(frame, *arguments)
            return
        try:
            self._load(frame, *arguments)
        except (ValueError, TypeError, pl.exceptions.PolarsError) as exc:  # what the log holds, named in its file
            raise ValueError(f"log file {str(data)!r}: {exc}") from None

    def _load(
        self,
        frame: pl.DataFrame,
        n_states: int,
        n_actions: int,
        start_state: int | None,
        logging_policy: Any,
        stationary: bool,
        discount: float | None,
    ) -> None:
        self._arguments = (n_states, n_actions, start_state, logging_policy, stationary, discount)
        if discount is not None and (
            isinstance(discount, bool) or not isinstance(discount, (int, float, np.number)) or not 0 <= discount <= 1
        ):
            raise ValueError(f"discount must be a number in [0, 1] or None, got {discount!r}")
        self._discount = None if discount is None else float(discount)
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"the log lacks columns {missing} (needs {list(REQUIRED_COLUMNS)})")
        checked = [("n_states", n_states, 1), ("n_actions", n_actions, 1)]
        if start_state is not None:
            checked.append(("start_state", start_state, 0))
        for name, value, minimum in checked:
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
        if not reward.dtype.is_numeric():
            raise TypeError(f"column 'reward' must hold numbers (ints or floats), got {reward.dtype}")
        if reward.null_count():
            raise ValueError(f"column 'reward' has {reward.null_count()} missing values")
        terminal = None
        if "terminal" in frame.columns:
            terminal = frame["terminal"].cast(pl.Boolean).to_numpy().astype(bool)
        columns = {
            "episode": integer_column(frame, "episode"),
            "t": integer_column(frame, "t"),
            "state": integer_column(frame, "state"),
            "action": integer_column(frame, "action"),
            "reward": reward.cast(pl.Float64).to_numpy(),
            "next_state": integer_column(frame, "next_state"),
            "terminal": terminal,
        }
        self._core = _core.ReplayDataset(
            int(n_states),
            int(n_actions),
            None if start_state is None else int(start_state),
            {**columns, "logging_table": table, "logging_rows": rows, "stationary": bool(stationary)},
        )
        self._frame = frame
        # Per row, the logging probabilities of every action (as write_parquet stores them), so that
        # a log and its Parquet copy have one fingerprint.
        per_row = rows if table is None else table[columns["state"]]
        self._fingerprint = _log_fingerprint(int(n_states), int(n_actions), start_state, columns, per_row)

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
        ``env``, a ``bbrl.envs.FiniteEnv`` or a name (``"SixArms"``, ``"RiverSwim-Osband"``,
        ``"RiverSwim-Strehl"``, with ``discount``), each episode from a state drawn from the
        environment's start law; the log carries the policy as its table, a ``terminal`` column and
        the environment's discount. An environment with a single start state gives a log with that
        fixed start; one with several (RiverSwim-Strehl) a log replayed from its own starts."""
        kind, horizon = episode_end_rule(episode_end)
        policy = np.ascontiguousarray(logging_policy, dtype=np.float64)
        if policy.ndim != 2:
            raise ValueError(f"logging_policy must be an (S, A) table, got shape {policy.shape}")
        env_core = environment_core(env, discount)
        core = _core.replay_collect(
            env_core,
            policy,
            _count(n_episodes, "n_episodes", 1),
            kind,
            horizon,
            _count(max_steps, "max_steps", 1),
            _count(seed, "seed", 0),
        )
        frame = pl.DataFrame(core.columns())
        return cls(
            frame, core.n_states, core.n_actions, core.start_state, logging_policy=policy, discount=env_core.discount
        )

    @property
    def n_states(self) -> int:
        return int(self._core.n_states)

    @property
    def n_actions(self) -> int:
        return int(self._core.n_actions)

    @property
    def start_state(self) -> int | None:
        """The fixed start state, or ``None`` (replay starts where the log's episodes start)."""
        start = self._core.start_state
        return None if start is None else int(start)

    @property
    def logged_starts(self) -> np.ndarray:
        """The start state of every logged episode, in log order."""
        return self._core.logged_starts()

    def mle_model(self) -> envs.FiniteEnv:
        """The maximum-likelihood model the ``"model"`` evaluator runs on: ``P(s' | s, a) = n(s, a,
        s') / n(s, a)``, the reward of (s, a, s') the mean of its logged rewards, the start law the
        fixed start or the logged starts' frequencies; a (state, action) the log never tried stays
        in its state with reward 0. Discount: the log's when known, else 1 with a time limit of
        1000 steps (an environment needs one or the other)."""
        model = self._core.mle_model()
        discount = 1.0 if self._discount is None else self._discount
        limit = 1000 if discount == 1.0 else None
        return envs.FiniteEnv(
            model["transitions"], model["rewards"], model["start"], discount, limit, name="maximum-likelihood model"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Worker processes rebuild the log from its frame and arguments (the core object does not pickle).
        return (Dataset, (self._frame, *self._arguments))

    @property
    def discount(self) -> float | None:
        """The discount of the environment the log came from, if known (a collected log's)."""
        return self._discount

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

    @property
    def fingerprint(self) -> str:
        """The log's fingerprint (16 hex digits, :mod:`bbrl.protocol.fingerprint`'s rule): of the
        sizes, the fixed start state and every row (episode, t, state, action, reward, next state,
        terminal flag and logging probabilities, in (episode, t) order). A log and its Parquet copy
        (:meth:`write_parquet`) share it; any changed value changes it. It keys every evaluation's
        random streams (:func:`bbrl.seeds.keyed_seed`), so two logs evaluated with one seed get
        independent draws."""
        return self._fingerprint

    def to_polars(self) -> pl.DataFrame:
        """The log, sorted by (episode, t)."""
        return self._frame

    def write_parquet(self, path: str | os.PathLike[str]) -> Path:
        """Writes the log (and the stationary logging policy as ``p_*`` columns) atomically."""
        path = check_suffix(path, ".parquet", "a log")
        frame = self._frame
        table = self.logging_policy
        if table is not None and "p_0" not in frame.columns:
            states = frame["state"].to_numpy()
            frame = frame.with_columns(pl.Series(f"p_{a}", table[states, a]) for a in range(self.n_actions))
        buffer = io.BytesIO()
        frame.write_parquet(buffer)
        return write_atomic(path, buffer.getvalue())

    def __repr__(self) -> str:
        return (
            f"Dataset({self.n_rows} transitions, {self.n_episodes} episodes, S={self.n_states}, A={self.n_actions}, "
            f"start={'logged' if self.start_state is None else self.start_state}, logging={self._core.logging_kind})"
        )


def _log_fingerprint(
    n_states: int, n_actions: int, start_state: int | None, columns: dict[str, Any], probabilities: Any
) -> str:
    """The fingerprint of a log's document: its sizes and start state, and each column as the
    SHA-256 of its values' little-endian bytes (int64, float64, or one byte per flag; a column the
    log lacks is null): a document of fixed size whatever the log's length."""

    def digest(values: Any, dtype: str) -> str | None:
        if values is None:
            return None
        return hashlib.sha256(np.ascontiguousarray(values, dtype=dtype).tobytes()).hexdigest()

    dtypes = {"reward": "<f8", "terminal": "u1"}
    document = {
        "log": "bbrl-replay",
        "n_states": n_states,
        "n_actions": n_actions,
        "start_state": None if start_state is None else int(start_state),
        "rows": len(columns["state"]),
        "columns": {name: digest(values, dtypes.get(name, "<i8")) for name, values in columns.items()},
        "logging_probabilities": digest(probabilities, "<f8"),
    }
    return document_fingerprint(document)


def environment_core(env: Any, discount: float | None) -> Any:
    """The core environment of a ``bbrl.envs.FiniteEnv``, or of a named one (``bbrl.envs.NAMES``:
    ``"SixArms"``, ``"RiverSwim-Osband"``, ...; ``discount`` applies to names only)."""
    if isinstance(env, envs.FiniteEnv):
        return env._core
    if isinstance(env, str):
        return envs.make(env, discount)._core
    raise TypeError(f"env must be a bbrl.envs.FiniteEnv or an environment name, got {type(env).__name__}")
