"""The episodic protocol from Python: regret definitions, pairing, threads, Python agents, results files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrl import agents
from bbrl.episodic import EpisodicExperiment, read_results, regret_curves, regret_table, save_results
from bbrl.episodic.study import learning_episode
from bbrl.protocol.schema import EPISODE_COLUMNS, Col

#: Osband et al.'s RiverSwim, H = 20: V*_0 of each state (float64 backward induction, independent).
RIVERSWIM_V0 = [3.397264, 4.052651, 5.301868, 6.678367, 8.094000, 9.521445]


def deterministic_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """3 states in a line and a terminal state 3; right moves on (reward 1), left stays (reward -1),
    right from state 2 enters the terminal state with reward 3. Integer rewards: sums are exact."""
    n, a = 4, 2
    P = np.zeros((n, a, n))
    R = np.zeros((n, a, n))
    for s in range(3):
        P[s, 0, s] = 1.0
        R[s, 0, s] = -1.0
        P[s, 1, s + 1] = 1.0
        R[s, 1, s + 1] = 1.0
    R[2, 1, 3] = 3.0
    P[3, :, 3] = 1.0
    start = np.array([1.0, 0.0, 0.0, 0.0])
    terminal = np.array([False, False, False, True])
    return P, R, start, terminal


def backward_induction(P: np.ndarray, R: np.ndarray, horizon: int, terminal: np.ndarray | None = None) -> np.ndarray:
    """V*_h(s), (H + 1, S), written independently of the core with NumPy."""
    n = P.shape[0]
    done = np.zeros(n, dtype=bool) if terminal is None else terminal
    V = np.zeros((horizon + 1, n))
    r = (P * R).sum(axis=2)
    for h in range(horizon - 1, -1, -1):
        later = np.where(done, 0.0, V[h + 1])
        V[h] = np.where(done, 0.0, (r + P @ later).max(axis=1))
    return V


class FiniteHorizonOptimal(agents.Agent):
    """A Python agent that plays the optimum of the tables it is given, counting its stage."""

    learns_offline = False

    def __init__(self, P: np.ndarray, R: np.ndarray, horizon: int, terminal: np.ndarray) -> None:
        n = P.shape[0]
        V = backward_induction(P, R, horizon, terminal)
        r = (P * R).sum(axis=2)
        self.policy = np.stack([(r + P @ np.where(terminal, 0.0, V[h + 1])).argmax(axis=1) for h in range(horizon)])
        self.h = 0
        assert self.policy.shape == (horizon, n)

    def start_episode(self, state: int) -> None:
        self.h = 0

    def act(self, state: int, rng: np.random.Generator) -> int:
        return int(self.policy[self.h, state])

    def observe(self, state: int, action: int, reward: float, next_state: int) -> None:
        self.h += 1


def test_backward_induction_matches_an_independent_computation() -> None:
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=2, n_runs=1)
    values = exp.optimal_values()
    np.testing.assert_allclose(values[0], RIVERSWIM_V0, atol=5e-7)
    from bbrl import envs

    env = envs.make("RiverSwim-Osband")
    np.testing.assert_allclose(values, backward_induction(env.transitions, env.rewards, 20), rtol=0, atol=1e-12)
    P, R, start, terminal = deterministic_tables()
    exp = EpisodicExperiment.from_tables(P, R, start, horizon=5, terminal=terminal, episodes=1, n_runs=1)
    np.testing.assert_array_equal(exp.optimal_values(), backward_induction(P, R, 5, terminal))
    assert exp.optimal_values()[0, 0] == 5.0  # 1 + 1 + 3, then the episode has ended


def test_the_optimal_agent_has_zero_regret_on_a_deterministic_mdp_and_terminal_states_end_episodes() -> None:
    P, R, start, terminal = deterministic_tables()
    exp = EpisodicExperiment.from_tables(P, R, start, horizon=5, terminal=terminal, episodes=6, n_runs=3)
    run = exp.run(FiniteHorizonOptimal(P, R, 5, terminal), threads=1)
    assert np.all(run.regret == 0.0) and np.all(run.expected_regret == 0.0)
    assert np.all(run.returns == 5.0)
    assert np.all(run.steps == 3)  # the terminal state ends each episode after 3 of its 5 steps

    # An agent that never moves earns -5 and loses 10; on a deterministic MDP the gaps of the actions
    # taken telescope to the realised regret, exactly with integer rewards.
    class Stay(agents.Agent):
        learns_offline = False

        def act(self, state: int, rng: np.random.Generator) -> int:
            return 0

    lazy = exp.run(Stay(), threads=1)
    assert np.all(lazy.steps == 5) and np.all(lazy.regret == 10.0) and np.all(lazy.expected_regret == 10.0)
    dithering = exp.run(agents.Random())
    np.testing.assert_array_equal(dithering.regret, dithering.expected_regret)


def test_expected_regret_is_nonnegative_and_has_the_realised_regrets_mean() -> None:
    # A random agent learns nothing: its episodes are independent, and realised - expected has mean 0.
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=100, n_runs=30, seed=3)
    run = exp.run(agents.Random(), threads=1)
    assert np.all(run.expected_regret >= 0.0)
    d = (run.regret - run.expected_regret).ravel()
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert abs(d.mean()) < 4 * se, (d.mean(), se)
    assert np.any(np.abs(d) > 1e-9)  # the two regrets differ episode by episode
    np.testing.assert_array_equal(run.regret, run.optima - run.returns)


@pytest.mark.parametrize("problem", ["RiverSwim-Osband", "GC"])
def test_one_and_two_threads_are_bit_identical_and_agents_are_paired(problem: str) -> None:
    exp = EpisodicExperiment(problem, episodes=15, n_runs=4, horizon=None if problem != "GC" else 10, seed=2)
    for agent in (agents.PSRL(), agents.examples("bamcp")[0]):
        one, two = exp.run(agent, threads=1), exp.run(agent, threads=2)
        for field in ("returns", "regret", "expected_regret", "steps", "run_work"):
            np.testing.assert_array_equal(getattr(one, field), getattr(two, field), err_msg=f"{agent.label} {field}")
    # Every agent meets the same start states and optima.
    a, b = exp.run(agents.Random(), threads=1), exp.run(agents.PSRL(), threads=1)
    np.testing.assert_array_equal(a.starts, b.starts)
    np.testing.assert_array_equal(a.optima, b.optima)


class CountingGreedy(agents.Agent):
    """A Python agent that learns across episodes (visit counts) and draws from its stream: what a
    worker process must reproduce exactly."""

    learns_offline = False

    def start_task(self) -> None:
        self.counts = np.zeros((self.n_states, self.n_actions))

    def act(self, state: int, rng: np.random.Generator) -> int:
        row = self.counts[state]
        least = np.flatnonzero(row == row.min())
        return int(least[rng.integers(least.size)])

    def observe(self, state: int, action: int, reward: float, next_state: int) -> None:
        self.counts[state, action] += 1


def test_python_agents_run_in_the_protocol_reproducibly() -> None:
    class Uniform(agents.Agent):
        learns_offline = False

        def act(self, state: int, rng: np.random.Generator) -> int:
            return int(rng.integers(2))

    exp = EpisodicExperiment("RiverSwim-Osband", episodes=10, n_runs=3, seed=1)
    first, second = exp.run(Uniform(), threads=1), exp.run(Uniform(), threads=1)
    np.testing.assert_array_equal(first.returns, second.returns)
    assert first.kind == "Uniform" and np.all(first.expected_regret >= 0)
    with pytest.raises(TypeError, match="threads=1"):
        exp.run(Uniform(), threads=2)  # a class defined in a function cannot reach a worker process


@pytest.mark.parametrize("problem", ["GC", "tables"])
def test_python_agents_on_worker_processes_are_bit_identical_to_one_process(problem: str) -> None:
    if problem == "tables":
        P, R, start, terminal = deterministic_tables()
        exp = EpisodicExperiment.from_tables(P, R, start, horizon=5, terminal=terminal, episodes=6, n_runs=5, seed=4)
    else:
        exp = EpisodicExperiment(problem, episodes=8, n_runs=5, horizon=10, seed=4)
    one, two = exp.run(CountingGreedy(), threads=1), exp.run(CountingGreedy(), threads=2)
    for field in ("returns", "regret", "expected_regret", "steps", "run_work", "starts", "optima"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field), err_msg=field)
    assert one.returns.shape == (5, exp.episodes)


def test_bad_parameters_give_clear_errors() -> None:
    with pytest.raises(ValueError, match="episodes"):
        EpisodicExperiment("RiverSwim-Osband", episodes=0)
    with pytest.raises(ValueError, match="n_runs"):
        EpisodicExperiment("RiverSwim-Osband", n_runs=0)
    with pytest.raises(ValueError, match="no episode length of its own: give horizon"):
        EpisodicExperiment("GC")
    with pytest.raises(ValueError, match="unknown problem"):
        EpisodicExperiment("RiverSwim-Nowhere")
    with pytest.raises(ValueError, match="continuous"):
        EpisodicExperiment("MountainCar", horizon=10)
    with pytest.raises(ValueError, match="takes no env_options"):
        EpisodicExperiment("GC", horizon=5, env_options={"size": 3})
    with pytest.raises(ValueError, match="gamma"):
        EpisodicExperiment("RiverSwim-Osband", gamma=1.0)
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=2, n_runs=1)
    with pytest.raises(ValueError, match=r"concentration must be finite and > 0"):
        exp.run(agents.PSRL(), prior_concentration=0.0)
    with pytest.raises(TypeError, match=r"agent must be one of bbrl\.agents"):
        exp.run("psrl")  # type: ignore[arg-type]
    P, R, _, terminal = deterministic_tables()
    with pytest.raises(ValueError, match="cannot start ended"):
        EpisodicExperiment.from_tables(P, R, np.array([0.0, 0.0, 0.0, 1.0]), horizon=3, terminal=terminal)
    with pytest.raises(ValueError, match="start law"):
        EpisodicExperiment.from_tables(P, R, np.full(4, 0.5), horizon=3)


def test_frame_curves_table_and_results_folder(tmp_path: Path) -> None:
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=8, n_runs=3, seed=4)
    runs = [exp.run(agents.PSRL()), exp.run(agents.EGreedy(epsilon=0.1))]
    frame = runs[0].to_polars()
    assert tuple(frame.columns) == EPISODE_COLUMNS and frame.height == 24
    np.testing.assert_array_equal(frame[Col.REGRET].to_numpy(), (frame[Col.OPTIMUM] - frame[Col.RETURN]).to_numpy())
    curves = regret_curves(runs)
    table = regret_table(runs)
    for curve, run in zip(curves, runs, strict=True):
        assert curve.label == run.agent and curve.mean.size == 8
        row = table.filter(pl.col(Col.AGENT) == run.agent)
        assert curve.mean[-1] == pytest.approx(row["cumulative_regret"][0])
        assert row["cumulative_regret"][0] == pytest.approx(run.regret.sum(axis=1).mean())
    expected = regret_curves(runs, Col.EXPECTED_REGRET)
    assert all(np.all(np.diff(c.mean) >= 0) for c in expected)  # expected regret never decreases
    folder = save_results(tmp_path / "res", runs, {"problem": exp.name})
    back, settings = read_results(folder)
    assert settings == {"problem": exp.name}
    assert back.equals(pl.concat([r.to_polars() for r in runs]))
    assert regret_table(back).equals(table)


def test_learning_episode_is_the_first_from_which_ninety_percent_reach_the_treasure() -> None:
    returns = np.array([0.0] * 30 + [0.99] * 70)
    # From k = 23 on, 70 of the 77 episodes reach it, but only 3 of episodes 23..32 do: the first k
    # with 9 of its next 10 is 29 (and 70 of the 71 from there).
    assert learning_episode(returns, window=10) == 29
    returns[50] = 0.0  # one more miss, far enough: 69 of the 71 from 29
    assert learning_episode(returns, window=10) == 29
    returns[31] = 0.0  # 29 and 31 miss: 8 of 29..38, 9 of 30..39, so 30
    assert learning_episode(returns, window=10) == 30
    # A long run does not dilute exploration's misses: 50 misses then 950 hits is learned at 49,
    # not at 0 (where 95% of the suffix reaches the treasure).
    assert learning_episode(np.array([0.0] * 50 + [0.99] * 950), window=100) == 49
    late = np.array([0.0] * 95 + [0.99] * 5)  # a lucky last few within the window do not count
    assert learning_episode(late, window=10) == 100
    assert learning_episode(np.full(5, 0.99), window=10) == 5  # fewer episodes than the window


def test_start_states_follow_the_start_law_and_the_regret_starts_from_each() -> None:
    # RiverSwim (Strehl and Littman) starts in state 1 or 2, half each, and has no episode length.
    exp = EpisodicExperiment("RiverSwim-Strehl", episodes=400, n_runs=2, horizon=15, seed=5)
    starts = exp.starts
    assert set(np.unique(starts)) == {1, 2}
    share = (starts == 1).mean()
    assert abs(share - 0.5) < 5 * math.sqrt(0.25 / starts.size)
    np.testing.assert_array_equal(exp.optima, exp.optimal_values()[0][starts])
    # Another seed draws other start states; the same seed, the same ones.
    assert not np.array_equal(starts, EpisodicExperiment("RiverSwim-Strehl", 400, 2, 15, seed=6).starts)
    np.testing.assert_array_equal(starts, EpisodicExperiment("RiverSwim-Strehl", 400, 2, 15, seed=5).starts)


def _plan_horizon_settings() -> list[tuple[str, dict[str, object]]]:
    """Every registered kind that takes ``plan_horizon``, at each of its reference choices (the
    reference code's settings included, with the learned rewards they need): read from the
    registry, so that a new planner is pinned the day it is added."""
    settings: list[tuple[str, dict[str, object]]] = []
    for kind in agents.registry.kinds():
        spec = agents.registry.spec(kind)
        names = {p["name"]: p for p in spec["params"]}
        if "plan_horizon" not in names:
            continue
        for reference in (names.get("reference") or {}).get("choices") or [None]:
            extra: dict[str, object] = {} if reference in (None, "paper") else {"reference": reference}
            if extra and "rewards" in names:
                extra["rewards"] = "learned"
            settings.append((spec["kind"], extra))
    return settings


@pytest.mark.parametrize(("kind", "extra"), _plan_horizon_settings())
def test_the_plan_horizon_defaults_to_the_episode_length(kind: str, extra: dict[str, object]) -> None:
    # At gamma = 0.99 a plan of 1 / (1 - gamma) = 100 steps is far longer than RiverSwim's
    # 20-step episodes: the default must plan the episode (TabulaRL's last-step rule included).
    exp = EpisodicExperiment("RiverSwim-Osband", episodes=12, n_runs=3, gamma=0.99, seed=4)
    default = exp.run(agents.create(kind, {**extra, "plan_horizon": 0}))
    episode = exp.run(agents.create(kind, {**extra, "plan_horizon": 20}))
    np.testing.assert_array_equal(default.regret, episode.regret)
    np.testing.assert_array_equal(default.expected_regret, episode.expected_regret)
