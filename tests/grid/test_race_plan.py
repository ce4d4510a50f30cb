"""The racing plan: a race's stops predicted from a pilot of its first MDPs (bbrl.grid.race_plan)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bbrl.analysis.racing import Contender, RaceOptions, simulate_race
from bbrl.cli import main
from bbrl.grid import load_config
from bbrl.grid.race import batch_path
from bbrl.grid.race_plan import pilot_size, predict_race, raced_seconds
from bbrl.protocol.results import load
from bbrl.protocol.schema import Col

N = 100


def _contender(name: str, index: int, cost: float, returns: np.ndarray) -> Contender:
    return Contender(name, index, name, 0.0, np.full(returns.size, cost), returns)


def _pilot(m: int = 30) -> list[Contender]:
    """A cheap configuration, a dearer one 10 below it on every MDP (dominated by construction) and
    a dearest one equal to it on average (differences +3, -3, ... : mean exactly 0)."""
    rng = np.random.default_rng(1)
    base = rng.uniform(50.0, 150.0, m)
    dominated = base - 10.0 + rng.normal(0.0, 2.0, m)
    equal = base + np.where(np.arange(m) % 2 == 0, 3.0, -3.0)
    return [
        _contender("cheap", 0, 1.0, base),
        _contender("dominated", 1, 2.0, dominated),
        _contender("equal", 2, 3.0, equal),
    ]


def test_a_dominated_configuration_is_predicted_to_stop_early_and_an_equal_one_to_run_to_n() -> None:
    forecasts = predict_race(_pilot(), N, 0.0, 200.0, RaceOptions(), resamples=21, seed=0)
    dominated, equal, cheap = forecasts["dominated"], forecasts["equal"], forecasts["cheap"]
    assert dominated.stops and dominated.n_mdps <= 40 and dominated.stopped_share == 1.0
    assert (dominated.by, dominated.rule) == ("cheap", "beaten")
    assert not equal.stops and equal.n_mdps == N and equal.stopped_share < 0.5
    assert not cheap.stops and cheap.stopped_share == 0.0  # the cheapest configuration always runs on
    # A fixed seed: the same prediction every time.
    assert predict_race(_pilot(), N, 0.0, 200.0, RaceOptions(), resamples=21, seed=0) == forecasts


def test_a_pilot_of_every_mdp_replays_the_race_itself() -> None:
    pilot = _pilot(N)
    exact = simulate_race(pilot, N, 0.0, 200.0, RaceOptions())
    forecasts = predict_race(pilot, N, 0.0, 200.0, RaceOptions(), resamples=5)
    for cell_id, stop in exact.items():
        assert forecasts[cell_id].n_mdps == (N if stop is None else stop.n_mdps)
        assert forecasts[cell_id].stopped_share == (0.0 if stop is None else 1.0)


def test_the_pilot_size_and_the_raced_cost() -> None:
    options = RaceOptions()
    assert pilot_size(100, options) == 30  # batches of 10: the first decision after 30 MDPs
    assert pilot_size(500, options) == 50  # batches of 50
    assert pilot_size(100, options, 45) == 50 and pilot_size(100, options, 1000) == 100
    assert pilot_size(100, RaceOptions(batch=7), 2) == 7
    # Offline cost stays; online cost scales with the MDPs run.
    assert raced_seconds(110.0, 10.0, 30, 100) == pytest.approx(40.0)
    assert raced_seconds(110.0, 10.0, 100, 100) == pytest.approx(110.0)


def test_bad_pilot_or_contenders_are_refused() -> None:
    pilot = _pilot(1)
    with pytest.raises(ValueError, match="at least 2 test MDPs"):
        predict_race(pilot, N, 0.0, 200.0, RaceOptions())
    with pytest.raises(ValueError, match="at least 1 resample"):
        predict_race(_pilot(), N, 0.0, 200.0, RaceOptions(), resamples=0)
    uneven = [*_pilot(), _contender("short", 3, 4.0, np.ones(10))]
    with pytest.raises(ValueError, match="same test MDPs"):
        predict_race(uneven, N, 0.0, 200.0, RaceOptions())


_TINY = """
[defaults]
n_mdps = 40
gamma = 0.95
horizon = 20
seed = 0

[[experiment]]
name = "GC"
test = "GC"
prior = "GC"

[[agent]]
kind = "random"
block = "Random"

[[agent]]
kind = "egreedy"
block = "e-Greedy"
epsilon = [0.0, 0.5]
"""


def _tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(_TINY)
    return path


def test_grid_plan_race_prints_both_predictions_and_its_batches_serve_the_race(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _tiny(tmp_path)
    out = tmp_path / "run"
    assert main(["grid", "plan", str(config), "--out", str(out), "--race", "--pilot-budget", "5"]) == 0
    text = capsys.readouterr().out
    assert "predicted core time without and with racing" in text
    assert "GC/GC:" in text and "in full" in text and "raced" in text
    assert "core-hours in full" in text and "core-hours raced" in text
    kept = json.loads((out / "race-plan.json").read_text())
    assert kept["pilot_mdps"] == {"GC/GC": 30}
    assert set(kept["cells"]) == {c.id for c in load_config(config).cells}
    assert all(row["raced"] <= row["seconds"] + 1e-12 for row in kept["cells"].values())
    # The pilot ran the race's first batches (10 MDPs each, up to the first decision at 30).
    cells = load_config(config).cells
    assert all(batch_path(out, c, s, s + 10).is_file() for c in cells for s in (0, 10, 20))
    # A race into the folder starts from them, with the results of a race into a fresh folder.
    assert main(["grid", "run", str(config), "--out", str(out), "--race", "--threads", "1"]) == 0
    assert main(["grid", "run", str(config), "--out", str(tmp_path / "fresh"), "--race", "--threads", "1"]) == 0
    capsys.readouterr()

    def returns(folder: Path) -> pl.DataFrame:
        return load(folder).returns.select(Col.CELL_ID, Col.MDP, Col.RETURN).sort(Col.CELL_ID, Col.MDP)

    assert returns(out).equals(returns(tmp_path / "fresh"))


def test_grid_plan_without_race_prints_no_race(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grid", "plan", str(_tiny(tmp_path)), "--pilot-budget", "5"]) == 0
    text = capsys.readouterr().out
    assert "total:" in text and "racing" not in text and "race pilot" not in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--race", "--race-delta", "2"], "delta must be in (0, 1)"),
        (["--race", "--race-margin", "-1"], "margin must be a finite number >= 0"),
        (["--race", "--race-batch", "0"], "argument --race-batch: must be >= 1, got 0"),
        (["--race", "--race-pilot-mdps", "1"], "at least 2 test MDPs"),
        (["--race", "--race-resamples", "0"], "argument --race-resamples: must be >= 1, got 0"),
        (["--race-resamples", "5"], "apply to --race: add --race"),
    ],
)
def test_bad_race_options_are_refused_before_any_pilot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    out = tmp_path / "run"
    try:
        code = main(["grid", "plan", str(_tiny(tmp_path)), "--out", str(out), *arguments])
    except SystemExit as usage:  # argparse's refusal of an option's type, before anything runs
        code = usage.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_paper_race_refuses_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["paper", "--out", str(tmp_path / "p"), "--race", "--shard", "1/2"]) == 2
    assert "--race shares its batches" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_paper_states_a_study_plan_with_and_without_racing(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from bbrl.cli.paper import _cost_plans, _plan_races

    config = load_config(_tiny(tmp_path))
    buffer = io.StringIO()
    console = Console(file=buffer, width=300)
    plans = _cost_plans([(config, tmp_path / "study")], None, console, with_offline=True)
    assert plans[0].offline is not None and set(plans[0].offline) == {c.id for c in config.cells}
    raced = _plan_races(plans, RaceOptions(), 1, console)
    assert 0.0 < raced <= plans[0].todo_seconds + 1e-9
    assert "raced:" in buffer.getvalue() and (tmp_path / "study" / "race-plan.json").is_file()
