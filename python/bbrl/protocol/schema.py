"""The one schema of per-MDP results: what :meth:`bbrl.Run.to_polars` returns and what every grid
cell file holds (one row per test MDP), defined once so that the two never drift apart.

A run's frame has the :data:`RUN_COLUMNS`; a grid cell's file has those and the
:data:`CELL_EXTRA_COLUMNS` that name the cell in its grid. Times are in seconds. A run or cell that
recorded per-step rewards has one more column, :data:`REWARDS_COLUMN` (last): the T rewards of the
MDP's trajectory, a list of floats per row (reward per step, in the problem's reward units); results
without it are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from .. import _core

__all__ = [
    "CELL_COLUMNS",
    "CELL_EXTRA_COLUMNS",
    "EPISODE_COLUMNS",
    "PER_MDP_COLUMNS",
    "REWARDS_COLUMN",
    "RUN_COLUMNS",
    "SCHEMA",
    "WORK_DTYPE",
    "WORK_UNITS",
    "Col",
    "csv_columns",
    "describe_host",
    "host_columns",
    "host_line",
    "per_mdp_frame",
    "rewards_array",
    "work_array",
]


class Col:
    """Every column name of the result frames, spelled once: the per-MDP frames and cell files
    (:data:`SCHEMA`), and the summaries built from them (a run's :meth:`bbrl.Run.summary`, the
    ``cells`` frame of :func:`bbrl.protocol.results.load`). Consumers write ``Col.RETURN``, never
    ``"return"``."""

    # Per-MDP frames and cell files.
    #: The experiment's name.
    EXPERIMENT = "experiment"
    #: The prior's name.
    PRIOR = "prior"
    #: The agent's label.
    AGENT = "agent"
    #: The test MDP's index.
    MDP = "mdp"
    #: The discounted return of the MDP's trajectory.
    RETURN = "return"
    #: Wall time of the MDP's trajectory (reset and T decisions).
    ONLINE_SECONDS = "online_seconds"
    #: Wall time of offline learning (the same on every row).
    OFFLINE_SECONDS = "offline_seconds"
    #: The discount factor.
    GAMMA = "gamma"
    #: Decisions per trajectory.
    HORIZON = "horizon"
    #: The experiment's seed.
    SEED = "seed"
    #: CPU time of the trajectory on the thread that ran it.
    ONLINE_CPU_SECONDS = "online_cpu_seconds"
    #: CPU time of offline learning, every thread of the process (NaN: unknown).
    OFFLINE_CPU_SECONDS = "offline_cpu_seconds"
    #: The CPU model.
    HOST_CPU = "host_cpu"
    #: The CPU's vector extensions.
    HOST_VECTOR_EXTENSIONS = "host_vector_extensions"
    #: Logical cores of the machine.
    HOST_LOGICAL_CORES = "host_logical_cores"
    #: 1-minute load average at the end of the run.
    HOST_LOAD_AVERAGE = "host_load_average"
    #: Resolution of the CPU clock.
    CPU_CLOCK_RESOLUTION_SECONDS = "cpu_clock_resolution_seconds"
    #: Worker threads of the run.
    THREADS = "threads"
    #: Work of the trajectory in machine-independent units (a struct, one field per unit).
    ONLINE_WORK = "online_work"
    #: Work of offline learning in the same units (null: unknown, e.g. a Python agent's training).
    OFFLINE_WORK = "offline_work"
    #: The experiment's fingerprint: its test distribution, N, gamma, T and seed
    #: (:mod:`bbrl.protocol.fingerprint`); null in files written before it was recorded.
    FINGERPRINT = "experiment_fingerprint"
    #: The grid cell's id.
    CELL_ID = "cell_id"
    #: The cell's place in its configuration.
    CELL_INDEX = "cell_index"
    #: The test distribution as the configuration names it.
    TEST = "test"
    #: The configuration's agent block.
    BLOCK = "block"
    #: The agent's kind.
    KIND = "kind"
    #: The algorithm's display name.
    ALGORITHM = "algorithm"
    #: The agent's label.
    LABEL = "label"
    #: The agent's parameters (JSON).
    PARAMS = "params"
    #: What offline learning decided (JSON).
    DETAILS = "details"
    #: Test MDPs of the experiment.
    N_MDPS = "n_mdps"
    #: The version that wrote the cell.
    BBRL_VERSION = "bbrl_version"
    #: The MDP's T per-step rewards (only where recorded).
    REWARDS = "rewards"
    # The episodic protocol's per-episode frames (bbrl.episodic), beside the columns above they share.
    #: The run (a seed of the episodic protocol: its MDP, streams and start states).
    RUN = "run"
    #: The episode's index within its run, 0 first.
    EPISODE = "episode"
    #: The state the episode started in.
    START_STATE = "start_state"
    #: V*_0 of the start state: the finite-horizon optimum the realised regret subtracts from.
    OPTIMUM = "optimum"
    #: The realised regret of the episode: its optimum minus its undiscounted return.
    REGRET = "regret"
    #: The expected regret along the episode's path: the sum of the gaps V*_h(s) - Q*_h(s, a).
    EXPECTED_REGRET = "expected_regret"
    #: Steps the episode lasted (the horizon H, or fewer when it reached a terminal state).
    STEPS = "steps"
    #: Only in the cell file of a configuration a race stopped early: the cell that stopped it,
    #: the rule (``beaten`` or ``plateau``) and the race's bounds, as one readable text.
    RACE_STOPPED_BY = "race_stopped_by"
    # Summaries: one row per run or per cell.
    #: Mean return over the MDPs.
    MEAN = "mean"
    #: Only in a raced grid's analysis: the cell's mean over the experiment's N MDPs, estimated on
    #: the paired design for a cell the race stopped (its own mean otherwise); what ranks settings.
    PAIRED_MEAN = "paired_mean"
    #: Half-width of its 95% interval.
    CI95 = "ci95"
    #: Test MDPs the cell ran: N, or fewer for a configuration a race stopped early (its mean and
    #: interval are over those MDPs only, so its interval is wider).
    N_RUN = "n_run"
    #: What offline learning decided, readable.
    LEARNED = "learned"
    #: Mean online wall time per trajectory.
    ONLINE_SECONDS_PER_TRAJECTORY = "online_seconds_per_trajectory"
    #: Mean online wall time per decision.
    ONLINE_SECONDS_PER_STEP = "online_seconds_per_step"
    #: Mean online CPU time per trajectory.
    ONLINE_CPU_SECONDS_PER_TRAJECTORY = "online_cpu_seconds_per_trajectory"
    #: Mean online CPU time per decision.
    ONLINE_CPU_SECONDS_PER_STEP = "online_cpu_seconds_per_step"
    #: 95% half-width of the mean online CPU time per trajectory.
    ONLINE_CPU_CI95_PER_TRAJECTORY = "online_cpu_ci95_per_trajectory"
    #: Online time per trajectory compared: CPU where recorded, else wall.
    ONLINE_TIME_PER_TRAJECTORY = "online_time_per_trajectory"
    #: The same per decision.
    ONLINE_TIME_PER_STEP = "online_time_per_step"
    #: Offline time compared: CPU where recorded, else wall.
    OFFLINE_TIME = "offline_time"
    #: Which: 'cpu' or 'wall'.
    TIME_BASIS = "time_basis"
    #: The cell recorded per-step rewards.
    HAS_REWARDS = "has_rewards"
    #: Mean work per trajectory (a struct of unit counts; null where not recorded).
    ONLINE_WORK_PER_TRAJECTORY = "online_work_per_trajectory"


#: The work units of the core (``bbrl_core::work``), in the order of its work arrays: the fields of
#: the work columns. Each counts what an agent computed in machine-independent units (sweeps times
#: rows of a value iteration, tree nodes, Gamma variates, ...): the same on every run of a seed.
WORK_UNITS: tuple[str, ...] = tuple(_core.work_units())
#: The type of the work columns: one unsigned count per unit.
WORK_DTYPE = pl.Struct({unit: pl.UInt64 for unit in WORK_UNITS})

#: Every column a per-MDP result frame may have, with its type.
SCHEMA: dict[str, Any] = {
    # Identifiers of the run.
    Col.EXPERIMENT: pl.String,
    Col.PRIOR: pl.String,
    Col.AGENT: pl.String,
    # One row per test MDP.
    Col.MDP: pl.Int64,
    Col.RETURN: pl.Float64,
    #: Wall time of the MDP's trajectory (reset and T decisions).
    Col.ONLINE_SECONDS: pl.Float64,
    #: Wall time of offline learning (the same on every row).
    Col.OFFLINE_SECONDS: pl.Float64,
    # The protocol.
    Col.GAMMA: pl.Float64,
    Col.HORIZON: pl.Int64,
    Col.SEED: pl.UInt64,
    #: CPU time of the trajectory on the thread that ran it.
    Col.ONLINE_CPU_SECONDS: pl.Float64,
    #: CPU time of offline learning, every thread of the process (NaN: unknown).
    Col.OFFLINE_CPU_SECONDS: pl.Float64,
    # The machine and the run's parallelism (the same on every row).
    Col.HOST_CPU: pl.String,
    Col.HOST_VECTOR_EXTENSIONS: pl.String,
    Col.HOST_LOGICAL_CORES: pl.Int64,
    Col.HOST_LOAD_AVERAGE: pl.Float64,
    Col.CPU_CLOCK_RESOLUTION_SECONDS: pl.Float64,
    Col.THREADS: pl.Int64,
    # Work in machine-independent units (bbrl.analysis.cost turns it into seconds).
    Col.ONLINE_WORK: WORK_DTYPE,
    Col.OFFLINE_WORK: WORK_DTYPE,
    Col.FINGERPRINT: pl.String,
    # Grid cells only.
    Col.CELL_ID: pl.String,
    Col.CELL_INDEX: pl.Int64,
    Col.TEST: pl.String,
    Col.BLOCK: pl.String,
    Col.KIND: pl.String,
    Col.ALGORITHM: pl.String,
    Col.LABEL: pl.String,
    Col.PARAMS: pl.String,
    Col.DETAILS: pl.String,
    Col.N_MDPS: pl.Int64,
    Col.BBRL_VERSION: pl.String,
    # Only where per-step rewards were recorded: the MDP's T rewards, step 0 first.
    Col.REWARDS: pl.List(pl.Float64),
    # Only in the cell file of a configuration a race stopped (its rows: the MDPs it ran).
    Col.RACE_STOPPED_BY: pl.String,
    # Only in the episodic protocol's per-episode frames.
    Col.RUN: pl.Int64,
    Col.EPISODE: pl.Int64,
    Col.START_STATE: pl.Int64,
    Col.OPTIMUM: pl.Float64,
    Col.REGRET: pl.Float64,
    Col.EXPECTED_REGRET: pl.Float64,
    Col.STEPS: pl.Int64,
}

#: The optional column of recorded per-step rewards (see the module docstring).
REWARDS_COLUMN = Col.REWARDS
#: The optional column of a cell a race stopped early (see :mod:`bbrl.analysis.racing`).
RACE_STOPPED_BY = Col.RACE_STOPPED_BY

#: The columns of :meth:`bbrl.Run.to_polars`, in order.
RUN_COLUMNS: tuple[str, ...] = (
    Col.EXPERIMENT,
    Col.PRIOR,
    Col.AGENT,
    Col.MDP,
    Col.RETURN,
    Col.ONLINE_SECONDS,
    Col.OFFLINE_SECONDS,
    Col.GAMMA,
    Col.HORIZON,
    Col.SEED,
    Col.ONLINE_CPU_SECONDS,
    Col.OFFLINE_CPU_SECONDS,
    Col.HOST_CPU,
    Col.HOST_VECTOR_EXTENSIONS,
    Col.HOST_LOGICAL_CORES,
    Col.HOST_LOAD_AVERAGE,
    Col.CPU_CLOCK_RESOLUTION_SECONDS,
    Col.THREADS,
    Col.ONLINE_WORK,
    Col.OFFLINE_WORK,
    Col.FINGERPRINT,
)

#: The columns of an episodic run's per-episode frame (:meth:`bbrl.episodic.EpisodicRun.to_polars`),
#: in order: one row per episode of every run; ``return`` is the episode's undiscounted return and
#: ``online_cpu_seconds`` the episode's CPU time (its start and H decisions).
EPISODE_COLUMNS: tuple[str, ...] = (
    Col.EXPERIMENT,
    Col.PRIOR,
    Col.AGENT,
    Col.KIND,
    Col.RUN,
    Col.EPISODE,
    Col.START_STATE,
    Col.RETURN,
    Col.OPTIMUM,
    Col.REGRET,
    Col.EXPECTED_REGRET,
    Col.STEPS,
    Col.ONLINE_CPU_SECONDS,
    Col.OFFLINE_SECONDS,
    Col.OFFLINE_CPU_SECONDS,
    Col.GAMMA,
    Col.HORIZON,
    Col.SEED,
)

#: What a grid cell adds to a run's columns.
CELL_EXTRA_COLUMNS: tuple[str, ...] = (
    Col.CELL_ID,
    Col.CELL_INDEX,
    Col.TEST,
    Col.BLOCK,
    Col.KIND,
    Col.ALGORITHM,
    Col.LABEL,
    Col.PARAMS,
    Col.DETAILS,
    Col.N_MDPS,
    Col.BBRL_VERSION,
)

#: The columns of a grid cell file, in order.
CELL_COLUMNS: tuple[str, ...] = CELL_EXTRA_COLUMNS[:1] + RUN_COLUMNS + CELL_EXTRA_COLUMNS[1:]
#: The columns of a cell file that vary from one test MDP to the next; every other one is constant
#: within a cell.
PER_MDP_COLUMNS: tuple[str, ...] = (Col.MDP, Col.RETURN, Col.ONLINE_SECONDS, Col.ONLINE_CPU_SECONDS, Col.ONLINE_WORK)


def describe_host() -> dict[str, Any]:
    """The machine, now: ``cpu_model``, ``vector_extensions`` (a list), ``logical_cores``,
    ``load_average`` (1 minute), ``cpu_clock_resolution_seconds`` and ``vector_path`` (the
    solvers' path in this process: ``scalar``, ``neon``, ``avx2`` or ``avx512``; ``BBRL_SIMD`` forces one)."""
    return dict(_core.host())


def host_line(host: dict[str, Any] | None = None) -> str:
    """One line naming the machine (for benches and logs): CPU model, logical cores, vector
    extensions and load, from :func:`describe_host` (now, when ``host`` is not given)."""
    host = describe_host() if host is None else host
    extensions = " ".join(host.get("vector_extensions", [])) or "none detected"
    return (
        f"machine: {host.get('cpu_model', 'unknown CPU')}, {host.get('logical_cores', 0)} logical CPUs, "
        f"vector extensions {extensions}, solvers on the {host.get('vector_path', 'unknown')} path, "
        f"load average {host.get('load_average', float('nan')):.1f}"
    )


def host_columns(host: dict[str, Any], threads: int) -> dict[str, Any]:
    """The host and thread-count columns of a result frame, from :func:`describe_host`'s dict."""
    return {
        Col.HOST_CPU: host.get("cpu_model", ""),
        Col.HOST_VECTOR_EXTENSIONS: " ".join(host.get("vector_extensions", [])),
        Col.HOST_LOGICAL_CORES: host.get("logical_cores", 0),
        Col.HOST_LOAD_AVERAGE: host.get("load_average", float("nan")),
        Col.CPU_CLOCK_RESOLUTION_SECONDS: host.get("cpu_clock_resolution_seconds", float("nan")),
        Col.THREADS: threads,
    }


def per_mdp_frame(columns: Sequence[str], values: Mapping[str, Any], n_mdps: int) -> pl.DataFrame:
    """A frame of ``n_mdps`` rows with exactly ``columns``, typed by :data:`SCHEMA`.

    ``values`` maps each column to an array of ``n_mdps`` values or to one value for every row;
    the list column :data:`REWARDS_COLUMN` takes an (n_mdps, T) array, one row per MDP; a work
    column (:data:`WORK_DTYPE`) takes an (n_mdps, units) array, one unit array for every row, or
    None (unknown).

    Raises:
        ValueError: a column is missing from ``values``, unknown to the schema, or of another length.
    """
    unknown = [c for c in columns if c not in SCHEMA]
    missing = [c for c in columns if c not in values]
    if unknown or missing:
        raise ValueError(f"result columns: unknown {unknown}, missing {missing}")
    data: dict[str, pl.Series] = {}
    for name in columns:
        value = values[name]
        dtype = SCHEMA[name]
        if dtype == WORK_DTYPE:
            data[name] = _work_series(name, value, n_mdps)
        elif isinstance(dtype, pl.List):
            if not (isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] == n_mdps):
                shape = getattr(value, "shape", type(value).__name__)
                raise ValueError(f"column {name!r} has shape {shape}, expected ({n_mdps}, T)")
            # A 2-D array becomes a fixed-width array column without a per-row loop; stored as a list.
            data[name] = pl.Series(name, np.ascontiguousarray(value, dtype=np.float64)).cast(dtype)
        elif isinstance(value, np.ndarray):
            if value.shape != (n_mdps,):
                raise ValueError(f"column {name!r} has shape {value.shape}, expected ({n_mdps},)")
            data[name] = pl.Series(name, value).cast(dtype)
        else:
            data[name] = pl.Series(name, [value], dtype=dtype).extend_constant(value, n_mdps - 1)
    return pl.DataFrame(data)


def _work_series(name: str, value: Any, n_mdps: int) -> pl.Series:
    """A work column of ``n_mdps`` rows from an (n_mdps, units) array, one (units,) array for
    every row, or None (null rows)."""
    if value is None:
        return pl.Series(name, [None] * n_mdps, dtype=WORK_DTYPE)
    counts = np.asarray(value, dtype=np.uint64)
    if counts.ndim == 1:
        counts = np.broadcast_to(counts, (n_mdps, counts.size))
    if counts.shape != (n_mdps, len(WORK_UNITS)):
        raise ValueError(f"column {name!r} has shape {counts.shape}, expected ({n_mdps}, {len(WORK_UNITS)})")
    return pl.DataFrame({u: counts[:, i] for i, u in enumerate(WORK_UNITS)}).to_struct(name)


def csv_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each work column spread into one column per unit, ``<column>_<unit>``
    (e.g. ``online_work_decisions``): CSV holds no nested values."""
    spread = [
        pl.col(c).struct.field(u).alias(f"{c}_{u}")
        for c in frame.columns
        if frame[c].dtype == WORK_DTYPE
        for u in WORK_UNITS
    ]
    if not spread:
        return frame
    return frame.with_columns(spread).drop([c for c in frame.columns if frame[c].dtype == WORK_DTYPE])


def work_array(column: pl.Series) -> np.ndarray:
    """The (rows, units) float64 array of a work column (NaN where a row has no counts), its
    columns in the order of :data:`WORK_UNITS` (a unit a file lacks reads as NaN)."""
    frame = column.struct.unnest() if column.len() else pl.DataFrame()
    out = np.full((column.len(), len(WORK_UNITS)), np.nan)
    present = [i for i, unit in enumerate(WORK_UNITS) if unit in frame.columns]
    if present:
        # One query for every unit (a query per unit was most of a report's time in this function);
        # a null reads as NaN.
        units = frame.select(pl.col(WORK_UNITS[i]).cast(pl.Float64) for i in present)
        out[:, present] = units.to_numpy()
    return out


def rewards_array(column: pl.Series) -> np.ndarray:
    """The (rows, T) float64 array of a :data:`REWARDS_COLUMN` (rows in the column's order).

    Raises:
        ValueError: a row has no rewards, or rows of different lengths.
    """
    if column.null_count():
        raise ValueError(f"{column.null_count()} of {column.len()} rows have no recorded rewards")
    lengths = column.list.len()
    if column.len() == 0 or lengths.min() != lengths.max():
        raise ValueError(f"recorded rewards of unequal lengths ({lengths.min()} to {lengths.max()} steps)")
    flat = column.explode().to_numpy().astype(np.float64, copy=False)
    return flat.reshape(column.len(), int(lengths[0]))
