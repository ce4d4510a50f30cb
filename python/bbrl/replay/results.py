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

__all__ = ["ReplayResult", "ReplayRuns", "curve_frame"]


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
        return curve_frame(matrix)

    def to_polars(self) -> pl.DataFrame:
        """Every run's :meth:`ReplayResult.to_polars`, stacked."""
        return pl.concat([r.to_polars() for r in self.results])

    def plot(
        self, truth: np.ndarray | None = None, ax: Any = None, weighted: bool = False, label: str = "replay"
    ) -> Any:
        """The learning curve: mean return per episode index with its 95% band, and, if given, the
        online truth (a (runs, episodes) array from :func:`online_returns`) with its band."""
        truth_curve = None if truth is None else curve_frame(np.asarray(truth, dtype=np.float64))
        return plot_learning_curve(self.curve(weighted=weighted), truth_curve, ax, label)


def curve_frame(matrix: np.ndarray) -> pl.DataFrame:
    """Per episode index (a column of ``matrix``, NaN where a run did not reach it): the runs that
    reached it, their mean return and the half-width of its 95% normal interval."""
    if matrix.size == 0:
        return pl.DataFrame({"episode": [], "runs": [], "mean": [], "ci95": []})
    reached = np.sum(~np.isnan(matrix), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(matrix, axis=0)
        sd = np.nanstd(matrix, axis=0, ddof=1)
    half = np.where(reached > 1, Z_95_TWO_SIDED * sd / np.sqrt(np.maximum(reached, 1)), np.nan)
    return pl.DataFrame({"episode": np.arange(matrix.shape[1]), "runs": reached, "mean": mean, "ci95": half})
