"""Replay's result types: one evaluation (:class:`ReplayResult`) and repeated ones (:class:`ReplayRuns`)
with their learning curve."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ..intervals import Z_95_TWO_SIDED
from .plots import plot_learning_curve

__all__ = ["ReplayResult", "ReplayRuns", "curve_frame", "describe_m", "fixed_m"]


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
        settings: every setting of the evaluation as used: ``method``, ``seed``, ``runs``,
            ``episode_end``, ``gamma`` (the discount of the reported returns), ``agent_gamma`` (the
            agent's training discount), ``m`` (PERS: the rule or number that gave M, the default
            resolved), ``max_length``, ``weighted``, ``max_episodes`` and ``logged_episodes`` (the
            complete episodes of the log under ``episode_end``).
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
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def n_episodes(self) -> int:
        """The number of emitted episodes."""
        return len(self.returns)

    @property
    def m(self) -> float | None:
        """PERS: the M every proposal was tested against when it was the same for all (a fixed M),
        else ``None`` (an M that changed with the agent, or no proposal)."""
        return fixed_m(self.m_values)

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
        if self.method == "pers":
            counts = f"{self.n_episodes} of {self.proposals} proposed episodes accepted, {describe_m(self.m_values)}"
        else:
            counts = f"{self.n_episodes} episodes, {self.tuples_used} tuples used"
        return f"ReplayResult({self.method}: {counts}; stopped: {self.stop_message})"


@dataclass(frozen=True, repr=False)
class ReplayRuns:
    """Repeated evaluations (``runs=``): ``results[i]`` used the streams of run ``i``."""

    results: list[ReplayResult] = field(default_factory=list)

    def __repr__(self) -> str:
        method = self.results[0].method if self.results else "?"
        counts = self.n_episodes
        if counts.size == 0 or counts.max() == 0:
            reached = "no episode emitted"
        else:
            reached = f"episodes 0\u2013{int(counts.max()) - 1}, median {float(np.median(counts)):g}"
        m = f", {describe_m(np.concatenate([r.m_values for r in self.results]))}" if method == "pers" else ""
        return f"ReplayRuns({method}, {len(self.results)} runs, {reached}{m})"

    @property
    def settings(self) -> dict[str, Any]:
        """The settings of the evaluation (the same for every run; see :class:`ReplayResult`)."""
        return dict(self.results[0].settings) if self.results else {}

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> ReplayResult:
        return self.results[index]

    @property
    def n_episodes(self) -> np.ndarray:
        """Emitted episodes per run."""
        return np.array([r.n_episodes for r in self.results], dtype=np.int64)

    @property
    def reach(self) -> np.ndarray:
        """Per episode index 0, 1, ... up to the longest run: the share of runs that reached (emitted)
        it, in [0, 1]. The runs averaged at a late episode are a selected sample; this is how
        selected (1 everywhere for the model-based evaluator, which never stops)."""
        counts = self.n_episodes
        width = int(counts.max()) if counts.size else 0
        return np.sum(counts[:, None] > np.arange(width)[None, :], axis=0) / max(len(self.results), 1)

    def curve(self, weighted: bool = False) -> pl.DataFrame:
        """Per episode index: the number of runs averaged (``runs``), the share of all runs that
        reached that episode (``share``: the runs that got there are a selected sample, and this
        share is the warning), the mean return over the runs averaged and the half-width of a 95%
        normal interval (1.96 s / sqrt(n); null where a single run is averaged).
        ``weighted=True`` averages the importance-weighted estimates over every run instead (PERS
        with ``weighted=True``); ``share`` is still the share of runs that accepted that episode."""
        if weighted:
            if any(r.weighted_returns is None for r in self.results):
                raise ValueError("weighted curves need method='pers' with weighted=True")
            matrix = np.vstack([r.weighted_returns for r in self.results])
        else:
            width = max((r.n_episodes for r in self.results), default=0)
            matrix = np.full((len(self.results), width), np.nan)
            for i, r in enumerate(self.results):
                matrix[i, : r.n_episodes] = r.returns
        reached = np.sum(self.n_episodes[:, None] > np.arange(matrix.shape[1])[None, :], axis=0)
        return curve_frame(matrix, reached)

    def to_polars(self) -> pl.DataFrame:
        """Every run's :meth:`ReplayResult.to_polars`, stacked, with ``reach``: the share of all runs
        that reached the row's episode (:attr:`reach`; null past the longest run, for weighted rows)."""
        reach = pl.DataFrame({"episode": np.arange(len(self.reach), dtype=np.int64), "reach": self.reach})
        return pl.concat([r.to_polars() for r in self.results]).join(reach, on="episode", how="left")

    def plot(
        self, truth: np.ndarray | None = None, ax: Any = None, weighted: bool = False, label: str = "replay"
    ) -> Any:
        """The learning curve: mean return per episode index with its 95% band (none where a single
        run is averaged), and, if given, the online truth (a (runs, episodes) array from
        :func:`online_returns`) with its band; below it, a panel with the share of runs that
        reached each episode (on a second axis of ``ax`` when ``ax`` is given). Returns the axes of
        the returns."""
        truth_curve = None if truth is None else curve_frame(np.asarray(truth, dtype=np.float64))
        gamma = self.settings.get("gamma")
        return plot_learning_curve(self.curve(weighted=weighted), truth_curve, ax, label, gamma)


def curve_frame(matrix: np.ndarray, reached: np.ndarray | None = None) -> pl.DataFrame:
    """Per episode index (a column of ``matrix``, NaN where a run did not reach it): the runs
    averaged, the share of the rows that reached it (``reached`` runs, default the runs averaged),
    their mean return and the half-width of its 95% normal interval (null from a single run)."""
    if matrix.size == 0:
        return pl.DataFrame(
            {"episode": [], "runs": [], "share": [], "mean": [], "ci95": []},
            schema={"episode": pl.Int64, "runs": pl.Int64, "share": pl.Float64, "mean": pl.Float64, "ci95": pl.Float64},
        )
    averaged = np.sum(~np.isnan(matrix), axis=0)
    if reached is None:
        reached = averaged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(matrix, axis=0)
        sd = np.nanstd(matrix, axis=0, ddof=1)
    half = np.where(averaged > 1, Z_95_TWO_SIDED * sd / np.sqrt(np.maximum(averaged, 1)), np.nan)
    return pl.DataFrame(
        {
            "episode": np.arange(matrix.shape[1], dtype=np.int64),
            "runs": averaged.astype(np.int64),
            "share": np.asarray(reached, dtype=np.float64) / matrix.shape[0],
            "mean": mean,
            "ci95": half,
        }
    ).with_columns(pl.col("ci95").fill_nan(None))


def fixed_m(values: np.ndarray) -> float | None:
    """The M of every proposal when they are all equal, else ``None``."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or values.min() != values.max():
        return None
    return float(values[0])


def describe_m(values: np.ndarray) -> str:
    """PERS's M in words: ``M = 8``, ``M from 1 to 8`` (an M that changed) or that none was computed."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return "M not computed (no episode proposed)"
    low, high = float(values.min()), float(values.max())
    return f"M = {low:.4g}" if low == high else f"M from {low:.4g} to {high:.4g}"
