"""Replay streams keyed by the log: the same log and seed reproduce bit for bit, two logs with one
seed draw independently (before, they shared every draw and their errors were correlated)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrl import agents, replay, seeds

UNIFORM = np.full((6, 2), 0.5)


@pytest.fixture(scope="module")
def log() -> replay.Dataset:
    return replay.Dataset.collect("RiverSwim-Osband", UNIFORM, n_episodes=200, seed=0, episode_end=10)


def _twin(log: replay.Dataset) -> replay.Dataset:
    """The same log but for one reward in its last row (1e-9 more): the same data for every
    evaluator's decisions, another log by its fingerprint."""
    frame = log.to_polars()
    reward = frame["reward"].to_numpy().copy()
    reward[-1] += 1e-9
    return replay.Dataset(
        frame.with_columns(pl.Series("reward", reward)), log.n_states, log.n_actions, logging_policy=UNIFORM
    )


def test_the_fingerprint_names_the_rows_and_survives_a_parquet_copy(log: replay.Dataset, tmp_path: Path) -> None:
    copy = replay.Dataset(log.write_parquet(tmp_path / "log.parquet"), log.n_states, log.n_actions)
    assert len(log.fingerprint) == 16 and copy.fingerprint == log.fingerprint
    assert _twin(log).fingerprint != log.fingerprint
    assert seeds.keyed_seed(0, log.fingerprint) != seeds.keyed_seed(1, log.fingerprint)


@pytest.mark.parametrize("method", ["queue", "psrs"])
def test_one_log_and_seed_reproduce_bit_for_bit(log: replay.Dataset, tmp_path: Path, method: str) -> None:
    agent = agents.PSRL(k=2).train(log.uniform_prior(), gamma=0.95)
    first = replay.evaluate(agent, log, method, seed=7, runs=4, episode_end=10, gamma=1.0)
    copy = replay.Dataset(log.write_parquet(tmp_path / "log.parquet"), log.n_states, log.n_actions)
    again = replay.evaluate(agent, copy, method, seed=7, runs=4, episode_end=10, gamma=1.0, threads=1)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.returns, b.returns)
        assert a.tuples_used == b.tuples_used
    assert first.settings["log_fingerprint"] == log.fingerprint


@pytest.mark.parametrize("method", ["queue", "psrs"])
def test_two_logs_with_one_seed_draw_independently(log: replay.Dataset, method: str) -> None:
    """With shared draws the twin logs' runs are the same runs (correlation 1 of the data each
    uses); keyed by the log, their correlation is that of independent runs, within 4/sqrt(n)."""
    agent = agents.Random().train(log.uniform_prior(), gamma=0.95)
    n = 200
    used = [
        np.array(
            [r.tuples_used for r in replay.evaluate(agent, data, method, seed=0, runs=n, episode_end=10, gamma=1.0)]
        )
        for data in (log, _twin(log))
    ]
    assert used[0].std() > 0 and used[1].std() > 0
    assert abs(np.corrcoef(used[0], used[1])[0, 1]) < 4 / np.sqrt(n)
    # Shared draws would make these equal run for run: the twin differs in no row an evaluator's decision reads.
    assert not np.array_equal(used[0], used[1])
