"""What replay shows a reader: the share of runs behind each point of a learning curve, no interval
from a single run, short reprs, every setting in the results and in ``summary.json``, the online
truth beside the replay in ``curve.csv``, PERS's M stated, and warnings when M leaves fewer than one
accepted episode per run or the returns' discount does not match the log's undiscounted episodes."""

from __future__ import annotations

import json
import warnings

import numpy as np
import polars as pl
import pytest

from bbrl import agents, replay
from bbrl.cli import main

UNIFORM_SIX_ARMS = np.full((7, 6), 1 / 6)
UNIFORM_RIVER = np.full((6, 2), 0.5)


def result(returns: list[float], run: int = 0, method: str = "psrs", m_values=()) -> replay.ReplayResult:
    """A result emitting ``returns`` (built by hand: the curve and the reprs depend on nothing else)."""
    return replay.ReplayResult(
        method=method,
        seed=0,
        run=run,
        returns=np.asarray(returns, dtype=np.float64),
        lengths=np.ones(len(returns), dtype=np.int64),
        tuples_used=len(returns),
        proposals=len(m_values) if method == "pers" else len(returns),
        accepted=len(returns),
        stop_reason="empty_stream",
        stop_message="the stream of state 0 was empty",
        m_values=np.asarray(m_values, dtype=np.float64),
    )


@pytest.fixture(autouse=True)
def close_figures():
    """Every figure a test draws is closed after it (matplotlib warns past 20 open figures)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture()
def uneven_runs() -> replay.ReplayRuns:
    """Three runs reaching 5, 3 and 3 episodes: episodes 3 and 4 are reached by one run only."""
    return replay.ReplayRuns(
        [
            result([1.0, 2.0, 3.0, 4.0, 5.0], 0),
            result([2.0, 3.0, 4.0], 1),
            result([3.0, 4.0, 5.0], 2),
        ]
    )


@pytest.fixture(scope="module")
def six_arms_log() -> replay.Dataset:
    return replay.Dataset.collect("SixArms", UNIFORM_SIX_ARMS, 200, seed=6)


def test_the_curve_gives_the_share_of_runs_reaching_each_episode(uneven_runs):
    curve = uneven_runs.curve()
    assert curve.columns == ["episode", "runs", "share", "mean", "ci95"]
    np.testing.assert_allclose(curve["share"].to_numpy(), [1, 1, 1, 1 / 3, 1 / 3])
    assert curve["runs"].to_list() == [3, 3, 3, 1, 1]
    # One run gives no interval: null, not a number (and not zero).
    assert curve["ci95"].null_count() == 2 and curve["ci95"][3] is None
    assert curve["ci95"][0] == pytest.approx(1.96 * 1.0 / np.sqrt(3))


def test_the_share_is_computed_on_every_evaluation(six_arms_log):
    # PSRL under PSRS stops at different episodes in different runs: share[i] = P(run reached i).
    agent = agents.PSRL(k=3).train(six_arms_log.uniform_prior(), gamma=0.95)
    runs = replay.evaluate(agent, six_arms_log, "psrs", seed=1, runs=6)
    curve = runs.curve()
    expected = [(runs.n_episodes > i).mean() for i in range(curve.height)]
    np.testing.assert_allclose(curve["share"].to_numpy(), expected)
    assert curve["share"].min() < 1.0  # the runs did stop at different episodes


def test_the_weighted_curve_shares_the_runs_that_accepted_each_episode():
    data = replay.Dataset.collect("RiverSwim-Osband", UNIFORM_RIVER, 40, seed=2, episode_end=3)
    greedy = agents.EGreedy(epsilon=0.1).train(data.uniform_prior(), gamma=0.95)
    runs = replay.evaluate(greedy, data, "pers", seed=0, runs=5, episode_end=3, m="logging", weighted=True, gamma=1.0)
    curve = runs.curve(weighted=True)
    assert curve.height == 40 and curve["runs"].to_list() == [5] * 40  # every run's estimate is averaged
    np.testing.assert_allclose(curve["share"].to_numpy(), [(runs.n_episodes > i).mean() for i in range(40)])


def _band_x(ax) -> np.ndarray:
    """The x coordinates of every filled band of ``ax``."""
    xs = [path.vertices[:, 0] for c in ax.collections for path in c.get_paths()]
    return np.concatenate(xs) if xs else np.array([])


def test_episodes_reached_by_one_run_get_no_band(uneven_runs):
    ax = uneven_runs.plot()
    x = _band_x(ax)
    assert x.size > 0 and x.max() == 2.0  # the band stops where a second run stops
    mean_line = ax.get_lines()[0]
    assert list(mean_line.get_xdata()) == [0, 1, 2, 3, 4]  # the mean is still drawn


def test_the_figure_has_a_panel_with_the_share_of_runs(uneven_runs):
    ax = uneven_runs.plot()
    figure_axes = ax.figure.axes
    assert len(figure_axes) == 2
    share_ax = next(a for a in figure_axes if a is not ax)
    (line,) = share_ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), [1, 1, 1, 1 / 3, 1 / 3])
    assert "share" in share_ax.get_ylabel()
    # Drawn on a given axes, the share goes on a second axis of it.
    import matplotlib.pyplot as plt

    _, given = plt.subplots()
    assert uneven_runs.plot(ax=given) is given
    assert len(given.figure.axes) == 2


def test_reprs_are_short(uneven_runs):
    assert repr(uneven_runs) == "ReplayRuns(psrs, 3 runs, episodes 0\u20134, median 3)"
    hundred = replay.ReplayRuns([result(list(np.arange(n, dtype=float)), i) for i, n in enumerate(range(100))])
    text = repr(hundred)
    assert text == "ReplayRuns(psrs, 100 runs, episodes 0\u201398, median 49.5)"
    one = repr(uneven_runs[0])
    assert one == "ReplayResult(psrs: 5 episodes, 5 tuples used; stopped: the stream of state 0 was empty)"
    empty = replay.ReplayRuns([result([], i, "pers", [8.0, 8.0]) for i in range(3)])
    assert repr(empty) == "ReplayRuns(pers, 3 runs, no episode emitted, M = 8)"
    assert "M = 8" in repr(empty[0]) and "0 of 2 proposed" in repr(empty[0])
    moving = result([1.0], 0, "pers", [2.0, 8.0, 4.0])
    assert moving.m is None and "M from 2 to 8" in repr(moving)


@pytest.fixture(scope="module")
def short_river_log() -> replay.Dataset:
    """RiverSwim-Osband, uniform logging, 3-step episodes: the logging bound is M = 2**3 = 8."""
    return replay.Dataset.collect("RiverSwim-Osband", UNIFORM_RIVER, 400, seed=2, episode_end=3)


def test_weighted_pers_states_its_default_m(short_river_log):
    # weighted=True needs a fixed M: the default becomes the logging bound, said in a warning and
    # kept in the result's settings; the numbers are those of m="logging".
    agent = agents.EGreedy(epsilon=0.1).train(short_river_log.uniform_prior(), gamma=0.95)
    options = {"seed": 2, "episode_end": 3, "gamma": 1.0, "weighted": True}
    with pytest.warns(UserWarning, match=r"m='logging' is used \(M = 8;"):
        defaulted = replay.evaluate(agent, short_river_log, "pers", **options)
    assert defaulted.settings["m"] == "logging" and defaulted.m == 8.0
    explicit = replay.evaluate(agent, short_river_log, "pers", m="logging", **options)
    np.testing.assert_array_equal(defaulted.weighted_returns, explicit.weighted_returns)
    np.testing.assert_array_equal(defaulted.m_values, explicit.m_values)
    assert explicit.settings["m"] == "logging"
    psrl = agents.PSRL(k=3).train(short_river_log.uniform_prior(), gamma=0.95)
    plain = replay.evaluate(psrl, short_river_log, "pers", seed=2, episode_end=3, gamma=1.0)
    assert plain.settings["m"] == "policy"  # without weighted, the default is unchanged


def test_pers_warns_when_fewer_than_one_episode_is_expected(six_arms_log):
    # Uniform logging over 6 actions and max_length=30: M = 6**30, N / M ~ 1e-21.
    agent = agents.Random().train(six_arms_log.uniform_prior(), gamma=0.95)
    with pytest.warns(UserWarning, match="fewer than one") as caught:
        out = replay.evaluate(agent, six_arms_log, "pers", seed=0, max_length=30, m="logging")
    assert out.n_episodes == 0 and out.m == pytest.approx(6.0**30, rel=1e-12)
    assert "M = 2.211e+23" in str(caught[0].message)
    assert "M = 2.211e+23" in repr(out)


def test_the_returns_discount_is_checked_against_the_logs_undiscounted_episodes():
    # RiverSwim-Osband: fixed-horizon, undiscounted episodes. Reported by default with the agent's
    # training discount, the returns are discounted sums: a warning says so and how to choose.
    data = replay.Dataset.collect("RiverSwim-Osband", UNIFORM_RIVER, 200, seed=0, episode_end=20)
    psrl = agents.PSRL(k=3).train(data.uniform_prior(), gamma=0.95)
    with pytest.warns(UserWarning, match=r"discounted by gamma=0\.95.*fixed horizon of 20 steps.*pass gamma=1\.0"):
        discounted = replay.evaluate(psrl, data, "psrs", seed=0, episode_end=20)
    assert data.discount == 1.0
    assert discounted.settings["gamma"] == 0.95 == discounted.settings["agent_gamma"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        undiscounted = replay.evaluate(psrl, data, "psrs", seed=0, episode_end=20, gamma=1.0)
    assert undiscounted.settings["gamma"] == 1.0
    np.testing.assert_array_equal(discounted.lengths, undiscounted.lengths)  # the same episodes
    assert np.all(undiscounted.returns >= discounted.returns)
    # The figure names the discount of what it draws.
    for gamma, ylabel in ((1.0, "undiscounted return"), (0.95, "return, discount 0.95")):
        runs = replay.evaluate(psrl, data, "psrs", seed=0, runs=2, episode_end=20, gamma=gamma)
        assert runs.plot().get_ylabel() == ylabel
    # A log collected on an undiscounted environment, with episodes ending at the start state.
    start = replay.Dataset.collect("RiverSwim-Osband", UNIFORM_RIVER, 50, seed=0)
    with pytest.warns(UserWarning, match="undiscounted environment"):
        replay.evaluate(psrl, start, "queue", seed=0)
    # The same log read back from a frame does not know its discount: nothing to compare with.
    unknown = replay.Dataset(start.to_polars(), 6, 2, logging_policy=UNIFORM_RIVER)
    assert unknown.discount is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replay.evaluate(psrl, unknown, "queue", seed=0)


def _cli(tmp_path, log, *extra: str) -> tuple[int, dict, pl.DataFrame]:
    out = tmp_path / "out"
    code = main(["replay", str(log), "--agent", "random", "--runs", "3", "--out", str(out), *extra])
    return code, json.loads((out / "summary.json").read_text()), pl.read_csv(out / "curve.csv")


def test_the_summary_records_every_setting_and_the_csv_the_truth(tmp_path, short_river_log):
    log = short_river_log.write_parquet(tmp_path / "log.parquet")
    np.save(tmp_path / "policy.npy", UNIFORM_RIVER)  # 3-step episodes never visit states 3 to 5
    code, summary, curve = _cli(
        tmp_path, log, "--method", "pers", "--m", "logging", "--max-length", "3", "--weighted", "--seed", "4",
        "--episode-end", "3", "--return-gamma", "1", "--truth", "RiverSwim-Osband", "--n-states", "6",
        "--logging-policy", str(tmp_path / "policy.npy"),
    )  # fmt: skip
    assert code == 0
    wanted = {
        "method": "pers",
        "seed": 4,
        "runs": 3,
        "gamma": 1.0,
        "agent_gamma": 0.95,
        "m": "logging",
        "m_used": {"min": 8.0, "max": 8.0},
        "max_length": 3,
        "weighted": True,
        "episode_end": 3,
        "truth": {"env": "RiverSwim-Osband", "runs": 3, "episodes": 400, "gamma": 1.0},
    }
    assert {k: summary[k] for k in wanted} == wanted
    assert curve.columns == ["episode", "runs", "share", "mean", "ci95", "truth_runs", "truth_mean", "truth_ci95"]
    assert curve.height == 400 and curve["truth_runs"].to_list() == [3] * 400
    agent = agents.Random().train(short_river_log.uniform_prior(), gamma=0.95, seed=4)
    truth = replay.online_returns(agent, "RiverSwim-Osband", 400, runs=3, seed=4, episode_end=3, gamma=1.0)
    np.testing.assert_allclose(curve["truth_mean"].to_numpy(), truth.mean(axis=0), rtol=1e-12)


def test_a_pers_run_that_accepts_nothing_prints_its_m(tmp_path, six_arms_log, capsys):
    import matplotlib.pyplot as plt

    log = six_arms_log.write_parquet(tmp_path / "log.parquet")
    open_before = plt.get_fignums()
    code, summary, curve = _cli(tmp_path, log, "--method", "pers", "--max-length", "30", "--weighted")
    assert code == 0
    assert plt.get_fignums() == open_before  # the command closes the figure it saved
    captured = capsys.readouterr()
    assert "0.0 episodes per run" in captured.out and "M = 2.211e+23 (m='logging')" in captured.out
    assert "m='logging' is used" in captured.err and "fewer than one" in captured.err
    assert summary["m"] == "logging" and summary["m_used"] == {"min": 6.0**30, "max": 6.0**30}
    assert summary["weighted"] is True and summary["truth"] is None
    assert curve["share"].max() == 0.0


def test_the_cli_warns_about_the_discount_and_lets_the_returns_choose_theirs(tmp_path, capsys):
    data = replay.Dataset.collect("RiverSwim-Osband", UNIFORM_RIVER, 60, seed=1, episode_end=20)
    log = data.write_parquet(tmp_path / "log.parquet")
    code, summary, _ = _cli(tmp_path, log, "--episode-end", "20")
    assert code == 0 and summary["gamma"] == 0.95
    err = capsys.readouterr().err
    assert "fixed horizon of 20 steps" in err and "pass --return-gamma 1.0" in err
    code, summary, _ = _cli(tmp_path, log, "--episode-end", "20", "--return-gamma", "1")
    assert code == 0 and summary["gamma"] == 1.0 and summary["agent_gamma"] == 0.95
    assert "warning" not in capsys.readouterr().err
