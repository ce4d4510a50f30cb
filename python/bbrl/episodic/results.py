"""Results of the episodic protocol: one agent's run (:class:`EpisodicRun`), its per-episode frame
in the results schema (:data:`bbrl.protocol.schema.EPISODE_COLUMNS`), cumulative-regret curves over
episodes with 95% bands over the runs, a regret table, and the results file.

The results file is a folder: ``episodes.parquet`` (the per-episode frames of every agent, one row
per agent, run and episode) and ``episodic.json`` (the experiment's settings and the bbrl version).
:func:`save_results` writes both atomically; :func:`read_results` reads them through the shared
readers of :mod:`bbrl.fileio` and refuses a damaged folder with one ``ValueError`` naming the file
and the field or column.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..intervals import Z_95_TWO_SIDED
from ..protocol.schema import EPISODE_COLUMNS, SCHEMA, Col, per_mdp_frame

if TYPE_CHECKING:
    import polars as pl

    from ..analysis.regret import RegretCurve

__all__ = [
    "EPISODES_FILE",
    "SETTINGS_FILE",
    "EpisodicRun",
    "read_results",
    "regret_curves",
    "regret_table",
    "save_results",
]

#: The per-episode table of a results folder.
EPISODES_FILE = "episodes.parquet"
#: The settings of a results folder.
SETTINGS_FILE = "episodic.json"
#: The version of the results folder's layout, checked on reading.
FORMAT_VERSION = 1
#: The regrets a curve or table can be of: the column and how figures name it.
REGRETS = {Col.REGRET: "realised regret", Col.EXPECTED_REGRET: "expected regret"}


@dataclass(frozen=True)
class EpisodicRun:
    """One agent in the episodic protocol: per episode, arrays of shape (n_runs, episodes).

    Attributes:
        returns: undiscounted return of each episode (reward units).
        optima: ``V*_0`` of each episode's start state (the same for every agent).
        regret: realised regret, ``optima - returns`` (can be negative).
        expected_regret: sum of the gaps ``V*_h(s) - Q*_h(s, a)`` of the actions taken (>= 0).
        steps: steps each episode lasted (H, or fewer at a terminal state).
        cpu_seconds: CPU time of each episode (its start and decisions), in seconds.
        run_seconds: wall time of each run, in seconds, shape (n_runs,).
        run_work: work of each run in the core's units, shape (n_runs, units).
        offline_seconds, offline_cpu_seconds: offline learning on the prior, in seconds.
    """

    experiment: str
    prior: str
    agent: str
    kind: str
    gamma: float
    horizon: int
    seed: int
    starts: np.ndarray
    optima: np.ndarray
    returns: np.ndarray
    regret: np.ndarray
    expected_regret: np.ndarray
    steps: np.ndarray
    cpu_seconds: np.ndarray
    run_seconds: np.ndarray
    run_work: np.ndarray
    offline_seconds: float
    offline_cpu_seconds: float

    @property
    def n_runs(self) -> int:
        return int(self.returns.shape[0])

    @property
    def episodes(self) -> int:
        return int(self.returns.shape[1])

    def to_polars(self) -> pl.DataFrame:
        """One row per run and episode, the columns :data:`~bbrl.protocol.schema.EPISODE_COLUMNS`."""
        n, k = self.returns.shape
        values = {
            Col.EXPERIMENT: self.experiment,
            Col.PRIOR: self.prior,
            Col.AGENT: self.agent,
            Col.KIND: self.kind,
            Col.RUN: np.repeat(np.arange(n, dtype=np.int64), k),
            Col.EPISODE: np.tile(np.arange(k, dtype=np.int64), n),
            Col.START_STATE: self.starts.ravel(),
            Col.RETURN: self.returns.ravel(),
            Col.OPTIMUM: self.optima.ravel(),
            Col.REGRET: self.regret.ravel(),
            Col.EXPECTED_REGRET: self.expected_regret.ravel(),
            Col.STEPS: self.steps.ravel(),
            Col.ONLINE_CPU_SECONDS: self.cpu_seconds.ravel(),
            Col.OFFLINE_SECONDS: self.offline_seconds,
            Col.OFFLINE_CPU_SECONDS: self.offline_cpu_seconds,
            Col.GAMMA: self.gamma,
            Col.HORIZON: self.horizon,
            Col.SEED: self.seed,
        }
        return per_mdp_frame(EPISODE_COLUMNS, values, n * k)


def _matrix(frame: pl.DataFrame, agent: str, column: str) -> np.ndarray:
    """``column`` of ``agent``'s rows as an (n_runs, episodes) array (rows in run, episode order)."""
    import polars as pl

    rows = frame.filter(pl.col(Col.AGENT) == agent).sort(Col.RUN, Col.EPISODE)
    n_runs = rows[Col.RUN].n_unique()
    values = rows[column].to_numpy().astype(np.float64)
    if n_runs < 1 or values.size % n_runs:
        raise ValueError(f"agent {agent!r} does not have the same number of episodes in every run")
    return values.reshape(n_runs, -1)


def _frame(results: pl.DataFrame | Sequence[EpisodicRun]) -> pl.DataFrame:
    import polars as pl

    if isinstance(results, pl.DataFrame):
        return results
    if not results:
        raise ValueError("no episodic runs")
    return pl.concat([run.to_polars() for run in results], how="vertical")


def regret_curves(results: pl.DataFrame | Sequence[EpisodicRun], column: str = Col.REGRET) -> list[RegretCurve]:
    """One cumulative-regret curve per agent, over episodes k = 1..K: the mean over the runs of the
    regret summed over the first k episodes, with its 95% band (``1.96 sd / sqrt(n_runs)``), agents
    in order of appearance. ``column``: ``"regret"`` (realised) or ``"expected_regret"``."""
    from ..analysis.regret import regret_curve

    if column not in REGRETS:
        raise ValueError(f"column must be one of {', '.join(REGRETS)}, got {column!r}")
    frame = _frame(results)
    curves = []
    for agent in frame[Col.AGENT].unique(maintain_order=True).to_list():
        per_episode = _matrix(frame, agent, column)
        # regret_curve sums (reference - agent) along each row: the reference is the regret itself.
        curves.append(regret_curve(np.zeros_like(per_episode), per_episode, agent))
    return curves


def regret_table(results: pl.DataFrame | Sequence[EpisodicRun]) -> pl.DataFrame:
    """One row per agent: the cumulative realised and expected regret after the K episodes (mean
    over the runs and 95% half-width), the online CPU seconds per episode and the offline seconds."""
    import polars as pl

    frame = _frame(results)
    rows = []
    for agent in frame[Col.AGENT].unique(maintain_order=True).to_list():
        row: dict[str, Any] = {Col.AGENT: agent}
        for column in REGRETS:
            total = _matrix(frame, agent, column).sum(axis=1)
            n = total.size
            row[f"cumulative_{column}"] = float(total.mean())
            row[f"cumulative_{column}_ci95"] = (
                math.nan if n < 2 else float(Z_95_TWO_SIDED * total.std(ddof=1) / math.sqrt(n))
            )
        mine = frame.filter(pl.col(Col.AGENT) == agent)
        row["runs"] = int(mine[Col.RUN].n_unique())
        row["episodes"] = int(mine[Col.EPISODE].n_unique())
        row["online_cpu_seconds_per_episode"] = float(mine[Col.ONLINE_CPU_SECONDS].mean())  # type: ignore[arg-type]
        row[Col.OFFLINE_SECONDS] = float(mine[Col.OFFLINE_SECONDS][0])
        rows.append(row)
    return pl.DataFrame(rows)


def save_results(
    folder: str | os.PathLike[str], results: pl.DataFrame | Sequence[EpisodicRun], settings: dict[str, Any]
) -> Path:
    """Writes ``results`` (runs, or their concatenated frame) and ``settings`` (JSON values: the
    experiment's problem, episodes, runs, horizon, ...) into ``folder``; returns the folder."""
    import io

    from ..fileio import write_atomic
    from ..version import __version__

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    _frame(results).write_parquet(buffer)
    write_atomic(out / EPISODES_FILE, buffer.getvalue())
    document = {"format": FORMAT_VERSION, "bbrl_version": __version__, "settings": settings}
    write_atomic(out / SETTINGS_FILE, (json.dumps(document, indent=1, allow_nan=False) + "\n").encode())
    return out


def read_results(folder: str | os.PathLike[str]) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The per-episode frame and the settings of a results folder written by :func:`save_results`.

    Raises:
        FileNotFoundError: the folder or one of its two files is missing.
        ValueError: naming the file and the field or column, for a damaged file.
    """
    from ..fileio import json_field, read_json_document, read_table, table_problem

    base = Path(folder)
    settings_path = base / SETTINGS_FILE
    document = read_json_document(settings_path, "episodic settings file")
    where = f"episodic settings file {str(settings_path)!r}"
    version = json_field(document, "format", "an integer", where)
    if version != FORMAT_VERSION:
        raise ValueError(f"{where}: format {version} is not one this bbrl reads ({FORMAT_VERSION})")
    json_field(document, "bbrl_version", "a string", where)
    settings = json_field(document, "settings", "an object", where)
    episodes_path = base / EPISODES_FILE
    frame = read_table(episodes_path, "episodic results file")
    table_where = f"episodic results file {str(episodes_path)!r}"
    missing = [c for c in EPISODE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{table_where}: missing column(s) {', '.join(missing)}")
    import polars as pl

    kinds = {}
    for column in EPISODE_COLUMNS:
        dtype = SCHEMA[column]
        kinds[column] = "string" if dtype == pl.String else "integer" if dtype.is_integer() else "number"
    problem = table_problem(frame, kinds)
    if problem is not None:
        raise ValueError(f"{table_where}: {problem}")
    if frame.height == 0:
        raise ValueError(f"{table_where}: no episodes")
    frame = frame.select(EPISODE_COLUMNS)
    # Each agent must hold the same episodes in every run, each once: what the curves reshape.
    for agent in frame[Col.AGENT].unique(maintain_order=True).to_list():
        rows = frame.filter(pl.col(Col.AGENT) == agent)
        runs, episodes = rows[Col.RUN].n_unique(), rows[Col.EPISODE].n_unique()
        if rows.height != runs * episodes or rows.select(Col.RUN, Col.EPISODE).is_duplicated().any():
            raise ValueError(
                f"{table_where}: agent {agent!r} has {rows.height} rows, not one per run and episode "
                f"({runs} runs x {episodes} episodes)"
            )
    return frame, settings
