"""Errors of the replay package's inputs that name the problem: a logging policy whose rows do not
sum to 1, a reward column that is not numeric, a Parquet log written under another suffix."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from bbrl import replay


def _frame(reward: list) -> pl.DataFrame:  # type: ignore[type-arg]
    return pl.DataFrame(
        {"episode": [0, 0], "t": [0, 1], "state": [0, 1], "action": [0, 1], "reward": reward, "next_state": [1, 0]}
    )


def test_collect_names_a_policy_row_that_does_not_sum_to_one():
    # Rows of ones (or zeros) always draw action 0, which never returns to the start state: before,
    # "an episode did not end within max_steps = 100000 steps", after those steps.
    for table, total in ((np.ones((7, 6)), "6"), (np.zeros((7, 6)), "0")):
        with pytest.raises(ValueError, match=rf"^logging policy, state 0: probabilities sum to {total}, not 1$"):
            replay.Dataset.collect("SixArms", table, 5, seed=0)
    policy = np.full((7, 6), 1 / 6)
    policy[3] = 0.1  # sums to 0.6
    with pytest.raises(ValueError, match=r"^logging policy, state 3: probabilities sum to 0\.6\d*, not 1$"):
        replay.Dataset.collect("SixArms", policy, 5, seed=0)
    policy[3] = [1.5, -0.5, 0, 0, 0, 0]
    with pytest.raises(ValueError, match=r"^logging policy, state 3: probability 1\.5 is outside \[0, 1\]$"):
        replay.Dataset.collect("SixArms", policy, 5, seed=0)


@pytest.mark.parametrize("reward", [["0.0", "1.0"], ["a", "b"], [True, False]])
def test_a_reward_column_that_is_not_numeric_is_refused(reward: list) -> None:  # type: ignore[type-arg]
    with pytest.raises(
        TypeError, match=r"^column 'reward' must hold numbers \(ints or floats\), got (String|Boolean)$"
    ):
        replay.Dataset(_frame(reward), 2, 2, logging_policy=np.full((2, 2), 0.5))


def test_a_numeric_reward_column_is_read_as_floats():
    data = replay.Dataset(_frame([0, 1]), 2, 2, logging_policy=np.full((2, 2), 0.5))
    assert data.n_rows == 2


def test_a_log_is_not_written_as_parquet_under_another_suffix(tmp_path):
    data = replay.Dataset(_frame([0.0, 1.0]), 2, 2, logging_policy=np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match=r"x\.csv: a log is written as Parquet; give a \.parquet file name"):
        data.write_parquet(tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()
    assert data.write_parquet(tmp_path / "x.parquet").is_file()


def test_a_log_file_that_does_not_read_is_named(tmp_path):
    # Before: polars' ComputeError ("A Parquet file must contain a header and footer...") as a traceback.
    (tmp_path / "empty.parquet").write_bytes(b"")
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "garbage.parquet").write_bytes(b"not parquet at all")
    for name, message in (
        ("empty.parquet", r"is empty \(0 bytes\)"),
        ("empty.csv", r"is empty \(0 bytes\)"),
        ("garbage.parquet", r"is not a readable Parquet file \(ComputeError: "),
    ):
        with pytest.raises(ValueError, match=rf"^log file '{re.escape(str(tmp_path / name))}' {message}"):
            replay.Dataset(tmp_path / name, 2, 2)


def test_a_log_whose_ids_are_strings_names_the_column():
    frame = _frame([0.0, 1.0]).with_columns(pl.col("state").cast(pl.String))
    with pytest.raises(TypeError, match=r"^column 'state' must hold integers, got String$"):
        replay.Dataset(frame, 2, 2, logging_policy=np.full((2, 2), 0.5))
