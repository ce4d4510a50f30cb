"""Per-step rewards (``record_rewards``): bit-identity with the returns, saving and loading, the grid
option, and the cumulative regret against the oracle with its figure."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rich.console import Console

import bbrl
from bbrl import agents, grid
from bbrl.analysis import regret
from bbrl.analysis.report import write_report
from bbrl.protocol import results, schema

GAMMA = 0.95
N_MDPS = 8
HORIZON = 30

#: One setting of every built-in kind, small enough for a test.
BUILT_INS = [
    agents.Random(),
    agents.EGreedy(0.2),
    agents.SoftMax(0.5),
    agents.BEB(1.0),
    agents.SBOSS(0.01, 1.0),
    agents.PSRL(2),
    agents.Optimal(),
    agents.BAMCP(k=10, depth=4),
    agents.BFS3(k=5, c=2, depth=3),
    agents.Formula("max(QMean, QUniform)"),
    agents.OPPSDS(2, n_draws=10),
]


class UniformPython(agents.Agent):
    """A Python agent: uniformly random actions from the Generator of the seed rule."""

    def act(self, state, rng):
        return int(rng.integers(self.n_actions))

    def action_probabilities(self, state):
        return np.full(self.n_actions, 1.0 / self.n_actions)


def _bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)


def _discounted_sums(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """Each row's discounted sum with the loop's own operations in its order (multiply, add, then
    the discount times gamma), vectorised over the rows: IEEE arithmetic gives the same bits."""
    total = np.zeros(rewards.shape[0])
    discount = 1.0
    for t in range(rewards.shape[1]):
        total = total + discount * rewards[:, t]
        discount *= gamma
    return total


def _check_recorded(plain: bbrl.Run, recorded: bbrl.Run, test: bbrl.FDM) -> None:
    assert plain.rewards is None
    assert recorded.rewards is not None
    assert recorded.rewards.shape == (recorded.n_mdps, recorded.horizon)
    assert recorded.rewards.dtype == np.float64
    # Recording changes no bit of any return.
    assert np.array_equal(_bits(recorded.returns), _bits(plain.returns))
    # The rewards' discounted sum is the return, bit for bit.
    assert np.array_equal(_bits(_discounted_sums(recorded.rewards, recorded.gamma)), _bits(recorded.returns))
    # Every reward is an entry of the problem's reward table (GC's test MDPs share it).
    assert np.isin(recorded.rewards, np.unique(np.asarray(test.rewards))).all()


@pytest.mark.parametrize("spec", BUILT_INS, ids=lambda s: s.label)
def test_recorded_rewards_sum_to_the_returns_for_every_built_in(spec: agents.AgentSpec) -> None:
    exp = bbrl.Experiment("GC", n_mdps=N_MDPS, gamma=GAMMA, horizon=HORIZON, seed=5)
    plain = exp.run(spec, prior="UGC", threads=1)
    one = exp.run(spec, prior="UGC", threads=1, record_rewards=True)
    two = exp.run(spec, prior="UGC", threads=2, record_rewards=True)
    _check_recorded(plain, one, exp.test)
    assert np.array_equal(_bits(two.returns), _bits(plain.returns))
    assert np.array_equal(_bits(two.rewards), _bits(one.rewards))


def test_recorded_rewards_of_a_python_agent_in_process_and_on_workers() -> None:
    exp = bbrl.Experiment("GC", n_mdps=6, gamma=GAMMA, horizon=HORIZON, seed=2)
    plain = exp.run(UniformPython(), threads=1)
    one = exp.run(UniformPython(), threads=1, record_rewards=True)
    two = exp.run(UniformPython(), threads=2, record_rewards=True)
    _check_recorded(plain, one, exp.test)
    assert np.array_equal(_bits(two.returns), _bits(plain.returns))
    assert np.array_equal(_bits(two.rewards), _bits(one.rewards))
    # A Python agent's regret against the built-in oracle on the same experiment.
    optimal = exp.run(agents.Optimal(), record_rewards=True)
    (curve,) = regret.cumulative_regret([one], optimal)
    assert curve.mean.shape == (HORIZON,)


def test_the_oracle_has_no_regret_against_itself() -> None:
    exp = bbrl.Experiment("GC", n_mdps=N_MDPS, gamma=GAMMA, horizon=HORIZON, seed=9)
    first = exp.run(agents.Optimal(), threads=1, record_rewards=True)
    again = exp.run(agents.Optimal(), threads=2, record_rewards=True)
    (curve,) = regret.cumulative_regret([again], first)
    # The same agent, MDPs and streams: the same rewards, so every difference is exactly 0.
    assert np.array_equal(curve.mean, np.zeros(HORIZON))
    assert np.array_equal(curve.ci95, np.zeros(HORIZON))
    frame = curve.to_polars()
    assert frame.columns == ["label", "step", "mean", "ci95", "low", "high"]
    assert frame["step"].to_list() == list(range(1, HORIZON + 1))


def test_regret_is_the_running_sum_of_paired_differences() -> None:
    optimal = np.array([[1.0, 1.0, 1.0], [2.0, 0.0, 2.0]])
    agent = np.array([[0.0, 1.0, 0.5], [2.0, 1.0, 0.0]])
    per_mdp = regret.per_mdp_cumulative_regret(agent, optimal)
    assert np.array_equal(per_mdp, [[1.0, 1.0, 1.5], [0.0, -1.0, 1.0]])
    curve = regret.regret_curve(agent, optimal, "a")
    assert np.array_equal(curve.mean, [0.5, 0.0, 1.25])
    # sd with divisor N - 1 of two values x, y is |x - y| / sqrt(2); half-width 1.96 sd / sqrt(2).
    assert np.allclose(curve.ci95, 1.96 * np.abs(per_mdp[0] - per_mdp[1]) / 2.0, rtol=1e-15, atol=0.0)
    single = regret.regret_curve(agent[:1], optimal[:1], "one")
    assert np.isnan(single.ci95).all()


@settings(max_examples=50, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 12)),
        elements=st.floats(-10, 10, allow_nan=False, allow_subnormal=False),
    ),
    st.data(),
)
def test_regret_is_antisymmetric_and_zero_against_itself(a: np.ndarray, data: st.DataObject) -> None:
    b = data.draw(hnp.arrays(np.float64, a.shape, elements=st.floats(-10, 10, allow_nan=False, allow_subnormal=False)))
    # x - y is exactly -(y - x) in IEEE arithmetic, and rounding is symmetric about 0, so the running
    # sums and their means are exact negatives: no tolerance is needed.
    ab, ba = regret.regret_curve(a, b, "ab"), regret.regret_curve(b, a, "ba")
    assert np.array_equal(ab.mean, -ba.mean)
    assert np.array_equal(ab.ci95, ba.ci95, equal_nan=True)
    assert np.array_equal(regret.regret_curve(a, a, "aa").mean, np.zeros(a.shape[1]))


def test_bad_inputs_are_clear_errors() -> None:
    exp = bbrl.Experiment("GC", n_mdps=4, gamma=GAMMA, horizon=10, seed=1)
    for bad in (1, "yes", None, np.bool_(True)):
        with pytest.raises(TypeError, match="record_rewards must be True or False"):
            exp.run(agents.Random(), record_rewards=bad)  # type: ignore[arg-type]
    # 2 MDPs x (2^27 + 1) steps x 8 bytes is 16 bytes above 2 GiB: refused before any work.
    huge = bbrl.Experiment("GC", n_mdps=2, gamma=GAMMA, horizon=2**27 + 1, seed=1)
    with pytest.raises(ValueError, match=r"2147483664 bytes.*2 GiB"):
        huge.run(agents.Random(), record_rewards=True)
    with pytest.raises(ValueError, match=r"2147483664 bytes.*2 GiB"):
        huge.run(UniformPython(), record_rewards=True)
    plain = exp.run(agents.Random())
    optimal = exp.run(agents.Optimal(), record_rewards=True)
    with pytest.raises(ValueError, match="no per-step rewards: run it with record_rewards=True"):
        regret.cumulative_regret([plain], optimal)
    other = bbrl.Experiment("GC", n_mdps=4, gamma=GAMMA, horizon=10, seed=2).run(agents.Random(), record_rewards=True)
    with pytest.raises(ValueError, match=r"not on the reference's test MDPs \(seed 2 vs 1\)"):
        regret.cumulative_regret([other], optimal)
    with pytest.raises(ValueError, match="no runs"):
        regret.cumulative_regret([], optimal)
    with pytest.raises(ValueError, match=r"shape \(4, 10\) but the reference's have \(4, 9\)"):
        regret.regret_curve(optimal.rewards, optimal.rewards[:, :9], "x")
    with pytest.raises(ValueError, match=r"\(n_mdps, T\) array"):
        regret.regret_curve(np.zeros(3), np.zeros(3), "x")
    with pytest.raises(TypeError, match="real numbers"):
        regret.regret_curve(np.array([["a"]]), np.array([["b"]]), "x")


def test_a_run_with_rewards_round_trips_through_parquet(tmp_path: Path) -> None:
    exp = bbrl.Experiment("GC", n_mdps=5, gamma=GAMMA, horizon=12, seed=4)
    plain = exp.run(agents.EGreedy(0.1)).to_polars()
    assert tuple(plain.columns) == schema.RUN_COLUMNS  # unchanged without the option
    run = exp.run(agents.EGreedy(0.1), record_rewards=True)
    frame = run.to_polars()
    assert tuple(frame.columns) == (*schema.RUN_COLUMNS, schema.REWARDS_COLUMN)
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    back = pl.read_parquet(buffer.getvalue())
    assert np.array_equal(_bits(schema.rewards_array(back[schema.REWARDS_COLUMN])), _bits(run.rewards))
    with pytest.raises(ValueError, match=r"column 'rewards' has shape \(5,\), expected \(5, T\)"):
        schema.per_mdp_frame(["rewards"], {"rewards": np.zeros(5)}, 5)


GRID = """
[defaults]
n_mdps = 4
horizon = 15
seed = 3
{option}

[[experiment]]
name = "GC"
test = "GC"

[[agent]]
kind = "random"

[[agent]]
kind = "optimal"

[[agent]]
kind = "egreedy"
epsilon = [0.1, 0.5]
"""


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def test_grid_option_records_rewards_under_their_own_ids(tmp_path: Path) -> None:
    with_rewards = grid.parse_config(GRID.format(option="record_rewards = true"), "grid.toml")
    without = grid.parse_config(GRID.format(option=""), "grid.toml")
    assert [c.id for c in without.cells] == [
        "GC/GC/random", "GC/GC/optimal", "GC/GC/egreedy/epsilon=0.1", "GC/GC/egreedy/epsilon=0.5",
    ]  # fmt: skip
    assert [c.id for c in with_rewards.cells] == [c.id + "+rewards" for c in without.cells]
    out = tmp_path / "out"
    grid.run_grid(with_rewards, out, threads=2, console=_quiet())
    files = sorted(p.name for p in (out / "cells").rglob("*.parquet"))
    assert files == ["epsilon=0.1+rewards.parquet", "epsilon=0.5+rewards.parquet", "optimal+rewards.parquet",
                     "random+rewards.parquet"]  # fmt: skip
    loaded = results.load(out)
    assert loaded.cells["has_rewards"].to_list() == [True] * 4
    for row in loaded.cells.iter_rows(named=True):
        rewards = results.rewards_matrix(loaded, row["cell_id"])
        assert rewards.shape == (4, 15)
        returns = loaded.returns.filter(pl.col("cell_id") == row["cell_id"]).sort("mdp")["return"].to_numpy()
        assert np.array_equal(_bits(_discounted_sums(rewards, row["gamma"])), _bits(returns))
    # The same cell run directly gives the same rewards (same MDPs, same streams).
    direct = bbrl.Experiment("GC", n_mdps=4, gamma=0.95, horizon=15, seed=3).run(
        agents.EGreedy(0.5), record_rewards=True
    )
    assert np.array_equal(
        _bits(results.rewards_matrix(loaded, "GC/GC/egreedy/epsilon=0.5+rewards")), _bits(direct.rewards)
    )
    # Cells of the same experiment with and without rewards are not mixed in one folder.
    with pytest.raises(ValueError, match="record_rewards True there, False here"):
        grid.run_grid(without, out, threads=1, console=_quiet())
    # A grid without the option writes exactly the columns it always wrote, and has no rewards.
    plain_out = tmp_path / "plain"
    grid.run_grid(without, plain_out, threads=1, console=_quiet())
    for file in (plain_out / "cells").rglob("*.parquet"):
        assert tuple(pl.read_parquet(file).columns) == schema.CELL_COLUMNS
    plain = results.load(plain_out)
    assert plain.cells["has_rewards"].to_list() == [False] * 4
    with pytest.raises(ValueError, match="did not record per-step rewards"):
        results.rewards_matrix(plain, "GC/GC/random")
    with pytest.raises(KeyError, match="no cell"):
        results.rewards_matrix(plain, "GC/GC/nope")


def test_report_draws_the_regret_figure_when_the_grid_has_rewards(tmp_path: Path) -> None:
    config = grid.parse_config(GRID.format(option="record_rewards = true"), "grid.toml")
    out = tmp_path / "out"
    grid.run_grid(config, out, threads=1, console=_quiet())
    report = write_report(out, tmp_path / "report", svg=True)
    folder = report.parent
    for suffix in ("png", "svg"):
        figure = folder / f"GC-GC-regret.{suffix}"
        assert figure.is_file() and figure.stat().st_size > 1000
    curves = pl.read_csv(folder / "GC-GC-regret.csv")
    # One curve per algorithm but the oracle, e-Greedy at its best setting, T steps each.
    assert curves.columns == ["algorithm", "label", "step", "mean", "ci95", "low", "high"]
    assert sorted(set(curves["algorithm"].to_list())) == ["Random", "e-Greedy"]
    assert curves.height == 2 * 15
    loaded = results.load(out)
    best = loaded.cells.filter(pl.col("algorithm") == "e-Greedy").sort("mean", descending=True)["label"][0]
    assert set(curves.filter(pl.col("algorithm") == "e-Greedy")["label"].to_list()) == {best}
    # The CSV's curve is the regret of that cell's rewards against the oracle's (polars writes each
    # float in the shortest form that reads back to the same bits, so no tolerance).
    cell = loaded.cells.filter(pl.col("label") == best)["cell_id"][0]
    expected = regret.regret_curve(
        results.rewards_matrix(loaded, cell), results.rewards_matrix(loaded, "GC/GC/optimal+rewards"), best
    )
    assert np.array_equal(curves.filter(pl.col("label") == best)["mean"].to_numpy(), expected.mean)
    assert "regret" in report.read_text()
    # Without rewards: no regret figure.
    plain = tmp_path / "plain"
    grid.run_grid(grid.parse_config(GRID.format(option=""), "grid.toml"), plain, threads=1, console=_quiet())
    write_report(plain, tmp_path / "plain-report")
    assert not list((tmp_path / "plain-report").glob("*regret*"))


def test_report_says_why_there_is_no_regret_figure_without_an_oracle_cell(tmp_path: Path) -> None:
    text = GRID.format(option="record_rewards = true").replace('[[agent]]\nkind = "optimal"\n\n', "")
    config = grid.parse_config(text, "grid.toml")
    assert not any(c.kind == "optimal" for c in config.cells)
    out = tmp_path / "out"
    grid.run_grid(config, out, threads=1, console=_quiet())
    report = write_report(out, tmp_path / "report")
    assert not list((tmp_path / "report").glob("*regret*"))
    assert "it needs an Optimal cell" in report.read_text()


def test_plot_writes_a_figure_file(tmp_path: Path) -> None:
    exp = bbrl.Experiment("GC", n_mdps=6, gamma=GAMMA, horizon=20, seed=0)
    optimal = exp.run(agents.Optimal(), record_rewards=True)
    runs = [exp.run(agents.Random(), record_rewards=True), exp.run(agents.EGreedy(0.1), record_rewards=True)]
    path = tmp_path / "regret.png"
    regret.plot_cumulative_regret(regret.cumulative_regret(runs, optimal), path=path, title="GC")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no regret curves"):
        regret.plot_cumulative_regret([])


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("record_rewards = 1", "defaults.record_rewards: must be true or false, got 1"),
        ('record_rewards = "yes"', "defaults.record_rewards: must be true or false"),
        ("record_rewards = true\nhorizon = 134217729\nn_mdps = 2", "2147483664 bytes"),
    ],
)
def test_grid_option_errors_name_the_key(option: str, message: str) -> None:
    text = GRID.replace("n_mdps = 4\nhorizon = 15\n", "").format(option=option)
    with pytest.raises(grid.ConfigError, match=message):
        grid.parse_config(text, "grid.toml")
