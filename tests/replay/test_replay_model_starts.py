"""The model-based evaluator (method='model'), logs replayed from their own start states, and PSRS in
the paper's pop-first order, from Python."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from bbrl import agents, envs, replay, seeds

# Two states, two actions, dyadic probabilities (exact in binary), rewards depending on (s, a, s'),
# either start with probability 1/2.
P = np.array([[[0.5, 0.5], [0.25, 0.75]], [[0.75, 0.25], [0.0, 1.0]]])
R = np.array([[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [0.0, 7.0]]])


def exact_log() -> pl.DataFrame:
    """One-step episodes holding every transition with its exact frequency (4 rows per pair)."""
    rows = [
        (s, a, y, R[s, a, y]) for s in range(2) for a in range(2) for y in range(2) for _ in range(int(P[s, a, y] * 4))
    ]
    s, a, y, r = (list(c) for c in zip(*rows, strict=True))
    return pl.DataFrame(
        {"episode": range(len(s)), "t": [0] * len(s), "state": s, "action": a, "reward": r, "next_state": y}
    )


def test_the_model_of_an_exact_log_gives_the_online_returns():
    env = envs.FiniteEnv(P, R, [0.5, 0.5], 0.9)
    data = replay.Dataset(exact_log(), 2, 2, start_state=None)
    model = data.mle_model()
    np.testing.assert_array_equal(model.transitions, P)
    np.testing.assert_array_equal(model.rewards, R)
    np.testing.assert_array_equal(model.start_law, [0.5, 0.5])
    prior = data.uniform_prior()
    for agent in (agents.PSRL(k=3).train(prior, gamma=0.9), agents.Random().train(prior, gamma=0.9)):
        runs = replay.evaluate(agent, data, "model", seed=3, runs=5, max_episodes=20, episode_end=4, gamma=0.9)
        # The model's environment stream is the truth's, under the seed keyed by the log: bit-identical returns.
        keyed = seeds.keyed_seed(3, data.fingerprint)
        truth = replay.online_returns(agent, env, n_episodes=20, runs=5, seed=keyed, episode_end=4, gamma=0.9)
        np.testing.assert_array_equal(np.vstack([r.returns for r in runs]), truth)
        np.testing.assert_array_equal(runs.reach, np.ones(20))
        assert {r.stop_reason for r in runs} == {"max_episodes"}
        assert runs.settings["max_steps"] == 1000 and runs.settings["start"] == "logged"


def test_the_model_sends_untried_pairs_nowhere_and_needs_a_number_of_episodes():
    frame = pl.DataFrame({"episode": [0], "t": [0], "state": [0], "action": [0], "reward": [2.5], "next_state": [1]})
    data = replay.Dataset(frame, 3, 2)
    model = data.mle_model()
    assert model.transitions[0, 0].tolist() == [0.0, 1.0, 0.0] and model.rewards[0, 0, 1] == 2.5
    for s, a in [(0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]:
        assert model.transitions[s, a, s] == 1.0 and model.rewards[s, a].sum() == 0.0
    agent = agents.Random().train(data.uniform_prior())
    with pytest.raises(ValueError, match="method 'model' never runs out of data: give max_episodes"):
        replay.evaluate(agent, data, "model")
    with pytest.raises(ValueError, match="max_steps is an option of method 'model', not 'queue'"):
        replay.evaluate(agent, data, "queue", max_steps=5, episode_end=1)
    with pytest.raises(ValueError, match="method must be one of 'queue', 'psrs', 'pers', 'model', got 'mle'"):
        replay.evaluate(agent, data, "mle")


def test_a_log_with_several_start_states_is_replayed_from_them():
    # RiverSwim (Strehl) starts in state 1 or 2: a collected log has no fixed start.
    data = replay.Dataset.collect("RiverSwim-Strehl", np.full((6, 2), 0.5), 300, seed=4, episode_end=10)
    assert data.start_state is None and set(data.logged_starts.tolist()) == {1, 2}
    assert "start=logged" in repr(data)
    uniform = agents.Random().train(data.uniform_prior())
    runs = replay.evaluate(uniform, data, "psrs", seed=0, runs=4, episode_end=10, gamma=1.0, trace=True)
    for r in runs:
        assert r.stop_reason in ("starts_exhausted", "empty_stream") and r.n_episodes <= 300
        starts = r.trace.filter(pl.col("episode").is_first_distinct())["state"]
        assert set(starts.to_list()) <= {1, 2}
    pers = replay.evaluate(uniform, data, "pers", seed=0, episode_end=10, m=1.0, gamma=1.0)
    assert pers.n_episodes == 300
    with pytest.raises(ValueError, match="needs a fixed M"):
        replay.evaluate(uniform, data, "pers", seed=0, episode_end=10, gamma=1.0)
    truth = replay.online_returns(uniform, "RiverSwim-Strehl", n_episodes=3, runs=2, episode_end=10)
    assert truth.shape == (2, 3)
    # A fixed start refuses episodes that start elsewhere, and says how to replay them.
    with pytest.raises(ValueError, match="give no start state to replay from the log's own start states"):
        replay.Dataset(data.to_polars(), 6, 2, start_state=1)


def test_psrs_in_the_papers_order_throws_the_last_row_of_a_stream_away():
    # Two logged episodes 0 -> 1 -> 0 and 0 -> 1 -> 1 -> 0, one action: checking first emits both
    # every time; popping first always ends the second episode's first step (state 0's stream
    # becomes empty), so exactly one episode is emitted and never all the data is used.
    frame = pl.DataFrame(
        {
            "episode": [0, 0, 1, 1, 1],
            "t": [0, 1, 0, 1, 2],
            "state": [0, 1, 0, 1, 1],
            "action": [0] * 5,
            "reward": [0.0] * 5,
            "next_state": [1, 0, 1, 1, 0],
        }
    )
    data = replay.Dataset(frame, 2, 1, logging_policy=np.ones((2, 1)))
    agent = agents.Random().train(data.uniform_prior())
    paper = replay.evaluate(agent, data, "psrs", seed=0, runs=50, psrs_order="paper")
    check_first = replay.evaluate(agent, data, "psrs", seed=0, runs=50)
    assert set(paper.n_episodes.tolist()) == {1} and max(r.tuples_used for r in paper) < 5
    assert set(check_first.n_episodes.tolist()) == {2}
    assert paper.settings["psrs_order"] == "paper" and check_first.settings["psrs_order"] == "check_first"
    with pytest.raises(ValueError, match="psrs_order must be 'check_first' or 'paper', got 'pop'"):
        replay.evaluate(agent, data, "psrs", psrs_order="pop")


def test_the_cli_runs_the_model_and_logs_with_several_starts(tmp_path):
    from bbrl.cli import main

    log = replay.Dataset.collect("RiverSwim-Strehl", np.full((6, 2), 0.5), 60, seed=1, episode_end=10)
    log.write_parquet(tmp_path / "log.parquet")
    common = ["replay", str(tmp_path / "log.parquet"), "--agent", "random", "--episode-end", "10", "--runs", "3"]
    assert (
        main([*common, "--method", "model", "--max-episodes", "4", "--return-gamma", "1", "--out", str(tmp_path / "m")])
        == 0
    )
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["start_state"] == "logged" and summary["episodes_per_run"] == {"mean": 4.0, "min": 4, "max": 4}
    assert main([*common, "--psrs-order", "paper", "--return-gamma", "1", "--out", str(tmp_path / "p")]) == 0
    assert json.loads((tmp_path / "p" / "summary.json").read_text())["psrs_order"] == "paper"
