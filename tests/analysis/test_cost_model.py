"""The budget maps' cost model: work counts, calibrations, the fixed 1-2-5 lattice and boundaries."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console

from bbrl import agents, grid
from bbrl.analysis import cost, stats
from bbrl.analysis.cost import (
    Calibration,
    cached_fit,
    cell_costs,
    fit_calibration,
    fit_rows,
    fit_verdict,
    load_calibration,
    reference_calibration,
    reference_rows,
)
from bbrl.analysis.report import write_report
from bbrl.protocol import results
from bbrl.protocol.schema import WORK_DTYPE, WORK_UNITS, Col

TINY_GRID = """
[defaults]
n_mdps = 30
gamma = 0.95
horizon = 40
seed = 2

[[experiment]]
name = "GC"
test = "GC"
prior = "UGC"

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
epsilon = [0.1]

[[agent]]
kind = "beb"
beta = [1.0]

[[agent]]
kind = "bamcp"
k = [5, 20]
depth = [5]

[[agent]]
kind = "oppsds"
formula_set = 2
n_draws = [20]
"""


def test_series_grid_is_fixed_and_spans_the_costs() -> None:
    assert stats.series_grid(0.03, minimum=0.0012) == [0.002, 0.005, 0.01, 0.02, 0.05]
    assert stats.series_grid(1e-6, minimum=1e-6) == [1e-6]
    assert stats.series_grid(7.0) == [10.0]
    # Each bound is the float of its decimal text: the same bound is the same float in every run.
    for b in stats.series_grid(3e3, minimum=3e-9):
        assert float(f"{b:.0e}") == b and f"{b:.0e}"[0] in "125"
    with pytest.raises(ValueError, match="maximum must be finite and > 0"):
        stats.series_grid(0.0)


def _cells(online_work: np.ndarray, online_cpu: np.ndarray, algorithms: list[str]) -> pl.DataFrame:
    n = len(algorithms)
    work = pl.DataFrame({u: online_work[:, i].astype(np.float64) for i, u in enumerate(WORK_UNITS)})
    return pl.DataFrame(
        {
            Col.ALGORITHM: algorithms,
            Col.ONLINE_CPU_SECONDS_PER_TRAJECTORY: online_cpu,
            Col.OFFLINE_CPU_SECONDS: np.zeros(n),
            Col.ONLINE_TIME_PER_TRAJECTORY: online_cpu,
            Col.OFFLINE_TIME: np.zeros(n),
            Col.ONLINE_CPU_CI95_PER_TRAJECTORY: 0.01 * online_cpu,
        }
    ).with_columns(
        work.to_struct(Col.ONLINE_WORK_PER_TRAJECTORY),
        pl.Series(Col.OFFLINE_WORK, [{u: 0 for u in WORK_UNITS}] * n, dtype=WORK_DTYPE),
    )


def test_the_fit_recovers_the_seconds_per_unit_and_reports_each_algorithm() -> None:
    rng = np.random.default_rng(0)
    truth = np.zeros(len(WORK_UNITS))
    truth[:4] = [2e-8, 3e-9, 5e-9, 1e-9]
    work = np.zeros((40, len(WORK_UNITS)))
    work[:, :4] = rng.integers(1, 10**6, size=(40, 4))
    exact = work @ truth
    algorithms = ["A"] * 20 + ["B"] * 20
    calibration = fit_calibration(_cells(work, exact, algorithms), name="synthetic", machine="a test")
    fitted = calibration.unit_seconds()
    assert fitted[:4] == pytest.approx(truth[:4], rel=1e-8)
    assert (fitted >= 0).all() and calibration.fit["all"]["max_relative_error"] < 1e-8
    # With 5% multiplicative noise on B only, B's relative error is about 5% and A's stays small.
    noisy = exact * np.where(np.array(algorithms) == "B", rng.lognormal(0.0, 0.05, 40), 1.0)
    noisy_fit = fit_calibration(_cells(work, noisy, algorithms), name="noisy", machine="a test")
    assert 0.02 < noisy_fit.fit["B"]["rms_relative_error"] < 0.1
    assert noisy_fit.fit["A"]["rms_relative_error"] < noisy_fit.fit["B"]["rms_relative_error"]
    assert noisy_fit.uncertainty("B") == pytest.approx(noisy_fit.fit["B"]["rms_relative_error"])
    assert noisy_fit.uncertainty("unseen") == pytest.approx(noisy_fit.fit["all"]["rms_relative_error"])
    table = noisy_fit.fit_table()
    assert table[Col.ALGORITHM].to_list() == ["A", "B", "all"] and (table["r2"] <= 1.0).all()


def test_the_shipped_calibration_is_the_fit_of_its_shipped_rows_and_meets_the_bounds() -> None:
    reference = reference_calibration()
    rows = reference_rows()
    refit = fit_rows(rows, reference.name, reference.source, reference.machine, reference.date)
    # One source: the shipped seconds per unit are the fit of the shipped rows.
    assert set(refit.per_algorithm) == set(reference.per_algorithm)
    for algorithm in reference.per_algorithm:
        assert refit.unit_seconds(algorithm) == pytest.approx(reference.unit_seconds(algorithm), rel=1e-9, abs=1e-18)
    assert refit.unit_seconds() == pytest.approx(reference.unit_seconds(), rel=1e-9, abs=1e-18)
    # Dated, with the machine and its load stated.
    assert len(reference.date) == 10 and reference.date[4] == "-" and "load average" in reference.machine
    # Every algorithm of the quick grid and the exploration baselines is fitted and meets the
    # bounds (median <= 10%, largest <= 35%) on rows measured on an idle machine
    # (docs/cost-planning.md, the fit table). These bounds guard the measured level against a worse
    # model or a miscounted unit.
    table = reference.fit_table().filter(pl.col(Col.ALGORITHM) != "all")
    kinds = agents.kinds()
    fitted = set(table[Col.ALGORITHM].to_list())
    original = ("random", "egreedy", "softmax", "oppsds", "bamcp", "bfs3", "sboss", "beb")
    baselines = ("ucrl2", "ucbvi", "mbie_eb", "rmax", "opsrl", "rlsvi", "optql", "qlearning")
    assert {kinds[k].display for k in original + baselines} <= fitted
    assert (table["verdict"] == "meets").all(), table.filter(pl.col("verdict") != "meets")
    # The agents whose errors decide the maps' cheap end fit to a few percent (the band a map
    # cell's boundary is drawn with): at most 9% RMS each.
    deciders = table.filter(pl.col(Col.ALGORITHM).is_in([kinds[k].display for k in original]))
    assert (deciders["rms_relative_error"] <= 0.09).all(), deciders


def test_size_units_enter_a_fit_only_where_they_lower_the_leave_one_out_error() -> None:
    # Found by the core's naming rule (<unit>_by_states, <unit>_by_actions): all four, no other.
    assert set(cost.SIZE_UNITS) == {
        "decisions_by_states",
        "decisions_by_actions",
        "solve_entries_by_states",
        "simulated_steps_by_actions",
    }
    rng = np.random.default_rng(3)
    n = 24
    work = np.zeros((n, len(WORK_UNITS)))
    decisions, by_states = WORK_UNITS.index("decisions"), WORK_UNITS.index("decisions_by_states")
    states = rng.choice([5, 9, 25], size=n)
    work[:, decisions] = rng.integers(100, 1000, size=n)
    work[:, by_states] = work[:, decisions] * states
    # A: the cost per decision grows with the state count (1 ns per decision and state);
    # B: it does not, and its times carry 3% noise that a size term could only fit by chance.
    cost_a = work[:, decisions] * 2e-8 + work[:, by_states] * 1e-9
    cost_b = work[:, decisions] * 2e-8 * rng.lognormal(0.0, 0.03, n)
    cells = _cells(np.vstack([work, work]), np.concatenate([cost_a, cost_b]), ["A"] * n + ["B"] * n)
    calibration = fit_calibration(cells, name="size", machine="a test")
    a, b = calibration.per_algorithm["A"], calibration.per_algorithm["B"]
    assert a["decisions_by_states"] == pytest.approx(1e-9, rel=1e-6) and a["decisions"] == pytest.approx(2e-8, rel=1e-6)
    assert b["decisions_by_states"] == 0.0 and b["decisions"] == pytest.approx(2e-8, rel=0.02)
    # Without the size unit, A's fit misses by the spread of its state counts.
    assert calibration.fit["A"]["max_relative_error"] < 1e-6 < 0.1 < calibration.fit["B"]["max_relative_error"] + 0.1


def test_a_unit_missing_from_a_file_matters_only_where_it_is_priced() -> None:
    # Results of an older bbrl lack the newer units (read as NaN): a cell whose algorithm's
    # calibration prices none of them is still priced from its work.
    older = [u for u in WORK_UNITS if u != "decisions_by_states"]
    cells = _cells(np.ones((2, len(WORK_UNITS))), np.array([1e-3, 2e-3]), ["A", "B"])
    cells = cells.with_columns(pl.DataFrame({u: [1.0, 1.0] for u in older}).to_struct(Col.ONLINE_WORK_PER_TRAJECTORY))
    priced = {u: 1e-6 for u in WORK_UNITS}
    unpriced = {**priced, "decisions_by_states": 0.0}
    calibration = Calibration("c", "m", priced, per_algorithm={"A": unpriced, "B": priced})
    costs = cell_costs(cells, calibration)
    assert costs.basis == ["work", "measured"]
    assert costs.online[0] == pytest.approx((len(WORK_UNITS) - 1) * 1e-6) and costs.online[1] == 2e-3


def test_a_fit_verdict_names_the_bounds_it_misses() -> None:
    assert fit_verdict({"median_relative_error": 0.05, "max_relative_error": 0.3, "r2": 0.2, "cost_span": 3}) == "meets"
    missed = fit_verdict({"median_relative_error": 0.2, "max_relative_error": 0.5, "r2": 0.5, "cost_span": 20})
    assert missed == "fails: median 20% > 10%, largest 50% > 35%, R² 0.50 < 0.9 over a 10x span"
    # A calibration written before the median was kept: unknown is not a pass.
    assert fit_verdict({"max_relative_error": 0.1}).startswith("fails: median")


def test_calibration_files_round_trip_and_bad_files_are_named(tmp_path: Path) -> None:
    calibration = Calibration("mine", "a machine", {u: 1e-9 for u in WORK_UNITS}, {"all": {"r2": 0.5}}, "here")
    path = calibration.save(tmp_path / "c.json")
    assert load_calibration(path) == calibration
    (tmp_path / "bad.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="not a bbrl calibration file"):
        load_calibration(tmp_path / "bad.json")
    document = calibration.to_document()
    document["seconds_per_unit"]["decisions"] = -1.0
    (tmp_path / "negative.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"seconds_per_unit\['decisions'\] must be a number >= 0"):
        load_calibration(tmp_path / "negative.json")
    reference = reference_calibration()
    assert reference.name == "reference" and set(reference.seconds_per_unit) == set(WORK_UNITS)


def test_a_fit_is_reused_from_its_file_for_the_same_rows_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    work = np.zeros((12, len(WORK_UNITS)))
    work[:, :3] = rng.integers(1, 10**5, size=(12, 3))
    seconds = work[:, :3] @ np.array([2e-8, 1e-9, 4e-9]) * rng.lognormal(0.0, 0.05, 12)
    cells = _cells(work, seconds, ["A"] * 6 + ["B"] * 6)
    path = tmp_path / "calibration.json"
    first = cached_fit(cells, "mine", "here", path)
    assert path.is_file() and first.rows_digest == cost.rows_digest(cost.calibration_rows(cells))
    assert first == fit_calibration(cells, "mine", "here", date=first.date)  # the fit, with its rows' digest
    # The same rows, name, source and machine: the saved fit, not fitted again (no scipy import).
    monkeypatch.setattr(cost, "fit_rows", lambda *args, **kwargs: pytest.fail("fitted again"))
    assert cached_fit(cells, "mine", "here", path) == first
    monkeypatch.undo()
    # Other rows (one cell's time changed by its last bit), another name, a damaged file: fitted again.
    nudged = _cells(work, np.where(np.arange(12) == 0, np.nextafter(seconds, np.inf), seconds), ["A"] * 6 + ["B"] * 6)
    assert cost.rows_digest(cost.calibration_rows(nudged)) != first.rows_digest
    assert cached_fit(nudged, "mine", "here", path).rows_digest != first.rows_digest
    assert load_calibration(path).rows_digest != first.rows_digest
    assert cached_fit(cells, "other", "here", path).name == "other"
    path.write_text("{not json")
    again = cached_fit(cells, "mine", "here", path)
    assert again.fit == first.fit and load_calibration(path) == again


def test_cells_without_work_counts_keep_their_measured_times() -> None:
    cells = _cells(np.ones((2, len(WORK_UNITS))), np.array([1e-3, 2e-3]), ["A", "B"])
    cells = cells.with_columns(
        pl.when(pl.col(Col.ALGORITHM) == "B")
        .then(None)
        .otherwise(pl.col(Col.ONLINE_WORK_PER_TRAJECTORY))
        .alias(Col.ONLINE_WORK_PER_TRAJECTORY)
    )
    calibration = Calibration("c", "m", {u: 1e-6 for u in WORK_UNITS})
    costs = cell_costs(cells, calibration)
    assert costs.basis == ["work", "measured"]
    assert costs.online.tolist() == pytest.approx([len(WORK_UNITS) * 1e-6, 2e-3])
    assert costs.online_uncertainty[1] == pytest.approx(0.01)
    assert cell_costs(cells, None).basis == ["measured", "measured"]


def test_a_cost_within_its_uncertainty_of_a_bound_marks_a_boundary() -> None:
    rng = np.random.default_rng(1)
    # B is much better than A and costs 1.9e-3 s: within 10% of the 2e-3 bound.
    returns = [rng.normal(0.0, 1.0, 200), rng.normal(5.0, 1.0, 200)]
    frame = stats.best_under_bounds(
        ["A", "B"], [0.0, 5.0], [0.0, 0.0], [1e-4, 1.9e-3], returns, horizon=10,
        online_uncertainty=[0.1, 0.1], lattice="1-2-5",
    )  # fmt: skip
    rows = {r["online_bound_seconds"]: r for r in frame.iter_rows(named=True)}
    assert sorted(rows) == [1e-4, 2e-4, 5e-4, 1e-3, 2e-3]
    assert rows[2e-3]["boundary"] and rows[2e-3]["algorithms"] == ["B"]
    assert rows[2e-3]["algorithms_if_slower"] == ["A"] and rows[2e-3]["algorithms_if_faster"] == ["B"]
    assert not rows[1e-3]["boundary"] and rows[1e-3]["algorithms"] == ["A"]
    exact = stats.best_under_bounds(["A", "B"], [0.0, 5.0], [0.0, 0.0], [1e-4, 1.9e-3], returns, 10, lattice="1-2-5")
    assert not exact["boundary"].any()
    # A's own cost lies on the first bound: within its uncertainty it may not fit there either.
    assert rows[1e-4]["boundary"] and rows[1e-4]["algorithms_if_slower"] == ["none"]
    assert stats.map_agreement(frame, exact) == (3, 5)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("cost")
    folders = (base / "one-thread", base / "two-threads")
    for folder, threads in zip(folders, (1, 2), strict=True):
        grid.run_grid(grid.parse_config(TINY_GRID), folder, threads=threads, console=Console(file=io.StringIO()))
    return folders


def test_work_counts_are_the_same_at_one_and_two_threads(two_runs: tuple[Path, Path]) -> None:
    one, two = (results.load(folder).returns.sort(Col.CELL_ID, Col.MDP) for folder in two_runs)
    assert one[Col.ONLINE_WORK].to_list() == two[Col.ONLINE_WORK].to_list()
    assert one[Col.OFFLINE_WORK].to_list() == two[Col.OFFLINE_WORK].to_list()
    assert one[Col.RETURN].to_list() == two[Col.RETURN].to_list()


def test_maps_from_one_calibration_are_identical_and_name_the_cost_model(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    maps = []
    for k, folder in enumerate(two_runs):
        html = write_report(folder, tmp_path / f"report{k}").read_text()
        assert "Cost model:" in html and "<code>reference</code>" in html and "R²" in html
        assert (folder / "calibration.json").is_file() and (tmp_path / f"report{k}" / "calibration-fit.csv").is_file()
        maps.append((tmp_path / f"report{k}" / "GC-UGC-bounds.csv").read_bytes())
    assert maps[0] == maps[1]
    # Redrawn with the other run's own calibration: the same map again, bit for bit.
    own = two_runs[1] / "calibration.json"
    for k, folder in enumerate(two_runs):
        write_report(folder, tmp_path / f"own{k}", machine=own)
    assert (tmp_path / "own0" / "GC-UGC-bounds.csv").read_bytes() == (
        tmp_path / "own1" / "GC-UGC-bounds.csv"
    ).read_bytes()
    fit = pl.read_csv(tmp_path / "report0" / "calibration-fit.csv")
    assert "all" in fit[Col.ALGORITHM].to_list() and fit["max_relative_error"].is_finite().all()
    measured = write_report(two_runs[0], tmp_path / "measured", machine="measured").read_text()
    assert "Cost model:</b> none" in measured
    bounds = pl.read_csv(tmp_path / "report0" / "GC-UGC-bounds.csv")
    assert {"boundary", "algorithms_if_slower", "algorithms_if_faster"} <= set(bounds.columns)
    for b in bounds["online_bound_seconds"].unique().to_list():
        assert f"{b:.0e}"[0] in "125" and math.isclose(float(f"{b:.0e}"), b)


def test_results_without_work_counts_are_drawn_from_measured_times(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(two_runs[0], old)
    (old / "calibration.json").unlink()
    for file in (old / "cells").rglob("*.parquet"):
        pl.read_parquet(file).drop(Col.ONLINE_WORK, Col.OFFLINE_WORK).write_parquet(file)
    cells = results.load(old).cells
    assert cells[Col.ONLINE_WORK_PER_TRAJECTORY].null_count() == cells.height
    text = write_report(old, tmp_path / "report").read_text()
    assert "no work counts" in text and not (old / "calibration.json").exists()
    bounds = pl.read_csv(tmp_path / "report" / "GC-UGC-bounds.csv")
    assert bounds.height > 0
    with pytest.raises(ValueError, match="no work counts to fit a calibration on"):
        write_report(old, tmp_path / "own", machine="own")


def test_the_calibration_bench_times_batches_and_recounts_its_own_rows(tmp_path: Path) -> None:
    # benches/calibrate.py on a tiny grid: each cell's batch holds at least --mdps and at most
    # --max-mdps test MDPs, sized by the time it takes; a recount of what it wrote keeps its CPU
    # times and batch sizes and finds the same work (the same seeded runs); a recount without the
    # rows beside the calibration is an error naming the missing file, not a traceback.
    bench = Path(__file__).resolve().parents[2] / "benches" / "calibrate.py"
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_GRID.replace("n_mdps = 30", "n_mdps = 6").replace("horizon = 40", "horizon = 10"))
    run = [sys.executable, str(bench), str(config), "--mdps", "2", "--max-mdps", "6", "--rounds", "2"]
    made = subprocess.run([*run, "--out", str(tmp_path / "made"), "--batch-ms", "50"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    rows = pl.read_csv(tmp_path / "made" / "reference-rows.csv")
    online = rows.filter(pl.col("part") == "online")
    assert online.height == len(grid.parse_config(config.read_text()).cells)
    assert online["n_mdps"].is_between(2, 6).all() and (online["n_mdps"] == 6).any()
    again = subprocess.run(
        [*run, "--out", str(tmp_path / "again"), "--recount", str(tmp_path / "made" / "reference.json")],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr
    assert pl.read_csv(tmp_path / "again" / "reference-rows.csv").equals(rows)
    (tmp_path / "made" / "reference-rows.csv").unlink()
    missing = subprocess.run(
        [*run, "--out", str(tmp_path / "x"), "--recount", str(tmp_path / "made" / "reference.json")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert "reference-rows.csv" in missing.stderr
