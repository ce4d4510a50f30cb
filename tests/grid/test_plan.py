"""Cost planning: the fit, the longest-first makespan and worker count, the pilot's bounds, the
plan kept in an output folder (runners order cells by it) and the check against measured cells."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from bbrl import grid
from bbrl.grid.plan import Fit, longest_first, lpt_makespan, pilot, plan_path, suggest_workers, write_plan

GRID = """\
[defaults]
n_mdps = 8
horizon = 40

[[experiment]]
name = "GC"
test = "GC"

[[experiment]]
name = "Grid"
test = "Grid"
prior = "UGrid"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 0.5, 1.0]

[[agent]]
kind = "bamcp"
k = [5, 20, 40]
depth = 10

[[agent]]
kind = "oppsds"
formula_set = 2
n_draws = [100, 1000]
"""


def _bbrl() -> list[str]:
    exe = shutil.which("bbrl")
    return [exe] if exe else [sys.executable, "-m", "bbrl"]


def test_a_fit_through_two_points_is_exact_and_never_negative() -> None:
    fit = Fit.through([(10.0, 3.0), (30.0, 7.0)])
    assert (fit.a, fit.b) == (1.0, 0.2) and fit(20.0) == pytest.approx(5.0, rel=1e-12)
    # One point (or equal units): through the origin.
    assert Fit.through([(4.0, 2.0)]) == Fit(0.0, 0.5)
    assert Fit.through([(4.0, 2.0), (4.0, 4.0)]) == Fit(0.0, 0.75)
    # A decreasing measurement (noise) is clipped to a constant cost, not a negative slope.
    clipped = Fit.through([(1.0, 5.0), (10.0, 4.0)])
    assert clipped.b == 0.0 and clipped.a == 5.0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1e4), min_size=1, max_size=50), st.integers(1, 60))
def test_longest_first_makespan_bounds(costs: list[float], workers: int) -> None:
    makespan = lpt_makespan(costs, workers)
    # Any schedule needs at least the longest cell and the average load; LPT is within 4/3 - 1/(3m)
    # of the optimum (Graham 1969), and the optimum is at most average + longest.
    lower = max(max(costs), sum(costs) / workers)
    assert lower * (1 - 1e-12) <= makespan <= (4 / 3) * (sum(costs) / workers + max(costs)) + 1e-9


def test_suggested_workers_meet_the_target_when_possible() -> None:
    costs = [10.0] * 10 + [50.0]
    assert suggest_workers(costs, 1000.0) == 1
    workers = suggest_workers(costs, 60.0)
    assert lpt_makespan(costs, workers) <= 60.0 and lpt_makespan(costs, workers - 1) > 60.0
    # The longest cell alone exceeds the target: as many workers as bring the makespan to it.
    assert lpt_makespan(costs, suggest_workers(costs, 20.0)) == 50.0
    assert math.isfinite(suggest_workers([], 10.0))


def test_the_pilot_measures_each_experiment_and_kind_at_most_twice_and_predicts_every_cell() -> None:
    config = grid.parse_config(GRID)
    plan = pilot(config, pilot_mdps=2, pilot_decisions=5, budget_seconds=60)
    pairs = {(c.experiment.key, c.kind) for c in config.cells}
    # e-greedy's settings all cost the same (one point per experiment); BAMCP's and OPPS-DS's two.
    assert set(plan.online) == pairs and plan.pilot_points == 2 * 1 + 2 * 2 + 2 * 2
    assert set(plan.seconds) == {c.id for c in config.cells}
    assert all(s > 0 for s in plan.seconds.values())
    # Within an (experiment, kind), the prediction grows with the budget parameters.
    for key in ("GC/GC", "Grid/UGrid"):
        bamcp = [plan.seconds[f"{key}/bamcp/k={k},depth=10"] for k in (5, 20, 40)]
        assert bamcp == sorted(bamcp)
    # Priced from the work counts: the same plan on every run, whatever the load; the pilot's
    # measured CPU time is kept beside it, as a ratio to the calibrated one.
    again = pilot(config, pilot_mdps=2, pilot_decisions=5, budget_seconds=60)
    assert again.seconds == plan.seconds and again.online == plan.online and again.offline == plan.offline
    assert plan.calibration == "reference" and 0 < plan.measured_to_calibrated < math.inf
    kept = json.loads(plan.to_json())
    assert kept["calibration"] == "reference" and kept["pilot_cpu_seconds"] == plan.pilot_cpu_seconds
    # A spent budget leaves only the cheapest point of each pair (one run per pair).
    assert pilot(config, pilot_mdps=2, pilot_decisions=5, budget_seconds=0).pilot_points == len(pairs)
    with pytest.raises(ValueError, match="pilot"):
        pilot(config, pilot_mdps=0)


def test_the_every_cell_pilot_measures_each_cell_once_with_its_own_cost() -> None:
    config = grid.parse_config(GRID)
    plan = pilot(config, pilot_mdps=1, pilot_decisions=4, budget_seconds=0, every_cell=True)
    # The budget does not apply: one run per cell, and a prediction for each.
    assert plan.every_cell and plan.pilot_points == len(config.cells)
    assert set(plan.seconds) == {c.id for c in config.cells}
    # e-Greedy at epsilon = 1 solves nothing: the calibration may price its work at 0.
    assert all(math.isfinite(s) and s >= 0 for s in plan.seconds.values())
    assert all(s > 0 for cell_id, s in plan.seconds.items() if "/egreedy/" not in cell_id)
    # Each cell's own measurement, OPPS-DS's training scaled from the capped draws: 1000 draws
    # (measured on 200, times 5) against 100 is about 10 times the training, and training
    # dominates these cells (8 MDPs x 40 decisions of a formula cost microseconds); a factor 3
    # leaves room for timer noise.
    for key in ("GC/GC", "Grid/UGrid"):
        cheap, dear = (
            plan.seconds[f"{key}/oppsds/formula_set=2,n_draws={n},c=660.0,compat=false"] for n in (100, 1000)
        )
        assert dear > 3 * cheap
    assert '"every_cell": true' in plan.to_json()


def test_runners_order_cells_by_the_plan_kept_in_the_folder(tmp_path: Path) -> None:
    config = grid.parse_config(GRID)
    plan = pilot(config, pilot_mdps=2, pilot_decisions=5, budget_seconds=60)
    # An order no static estimate gives: the plan is followed.
    plan.seconds = {c.id: float(c.index) for c in config.cells}
    write_plan(tmp_path, plan)
    assert [c.index for c in longest_first(list(config.cells), tmp_path)] == list(range(len(config.cells)))[::-1]
    plan_path(tmp_path).write_text("{broken")  # an unreadable plan falls back to the static order
    assert len(longest_first(list(config.cells), tmp_path)) == len(config.cells)


def test_plan_command_prints_the_plan_and_checks_it_against_a_run(tmp_path: Path) -> None:
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID)
    out = tmp_path / "out"
    command = [*_bbrl(), "grid", "plan", str(config_file), "--target-hours", "0.0001", "--pilot-decisions", "5"]
    planned = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert planned.returncode == 0, planned.stderr
    for expected in ("pilot cost:", "per agent block:", "total:", "longest cell:", "single-core workers"):
        assert expected in planned.stdout, planned.stdout
    kept = json.loads(plan_path(out).read_text())
    total = sum(kept["cells"].values())
    assert f"total: {total / 3600:.4g} core-hours" in planned.stdout
    grid.run_grid(grid.load_config(config_file), out, threads=1, console=Console(file=io.StringIO()))
    checked = subprocess.run([*command, "--compare", str(out)], capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    assert f"the plan kept there compared with {len(kept['cells'])} cells" in checked.stdout
    empty = subprocess.run([*command, "--compare", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert empty.returncode == 2 and "no finished cell" in empty.stderr


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--pilot-mdps", "0", "argument --pilot-mdps: must be >= 1, got 0"),
        ("--pilot-decisions", "-1", "argument --pilot-decisions: must be >= 1, got -1"),
        ("--pilot-budget", "-5", "pilot budget (seconds) must be >= 0, got -5.0"),
    ],
)
def test_plan_command_refuses_a_pilot_size_out_of_range_before_it_starts(
    tmp_path: Path, flag: str, value: str, named: str
) -> None:
    config_file = tmp_path / "grid.toml"
    config_file.write_text(GRID)
    refused = subprocess.run(
        [*_bbrl(), "grid", "plan", str(config_file), flag, value], capture_output=True, text=True, timeout=300
    )
    assert refused.returncode == 2, refused.stderr
    assert named in refused.stderr
    assert "pilot:" not in refused.stdout and "Traceback" not in refused.stderr


def test_the_pilot_names_the_size_it_refuses() -> None:
    with pytest.raises(ValueError, match="pilot_decisions must be >= 1, got 0"):
        pilot(grid.parse_config(GRID), pilot_mdps=1, pilot_decisions=0)
