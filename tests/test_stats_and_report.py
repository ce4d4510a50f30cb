"""Statistics of the export (SPEC 5.2, 5.3) against scipy and hand-made answers; the report renders."""

from __future__ import annotations

import io
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.stats
from rich.console import Console

from bbrl import grid, stats
from bbrl.report import FIGURES, write_report


def test_paired_z_matches_scipy_and_the_original_formula() -> None:
    rng = np.random.default_rng(5)
    a = rng.normal(10.0, 3.0, 500)
    b = a - rng.normal(0.2, 1.0, 500)
    z = stats.paired_z(a, b)
    assert z == pytest.approx(abs(scipy.stats.ttest_rel(a, b).statistic), rel=1e-12)
    d = a - b
    n = d.size
    s2 = (np.sum(d**2) - np.sum(d) ** 2 / n) / (n - 1)  # utils.tpp::computePairedZ
    assert z == pytest.approx(abs(d.mean()) / math.sqrt(s2 / n), rel=1e-9)
    two = stats.paired_z_test(a, b)
    assert two.threshold == 1.96 and two.significant == (z >= 1.96)
    assert two.p_value == pytest.approx(2 * scipy.stats.norm.sf(z), rel=1e-9)
    one = stats.paired_z_test(a, b, one_sided=True)
    assert one.threshold == 1.645 and one.p_value == pytest.approx(scipy.stats.norm.sf(z), rel=1e-9)


def test_z_between_the_two_thresholds_depends_on_the_sidedness() -> None:
    # d = 1 + c*e with e = +-1: mean 1, variance c^2 N/(N-1); choose c so that z = 1.8.
    n = 40
    e = np.tile([1.0, -1.0], n // 2)
    c = math.sqrt(n / 1.8**2 * (n - 1) / n)
    b = np.zeros(n)
    a = 1.0 + c * e
    assert stats.paired_z(a, b) == pytest.approx(1.8)
    assert not stats.paired_z_test(a, b).significant
    assert stats.paired_z_test(a, b, one_sided=True).significant


def test_mean_ci95() -> None:
    values = np.array([1.0, 2.0, 4.0, 8.0])
    mean, half = stats.mean_ci95(values)
    assert mean == 3.75
    assert half == pytest.approx(1.96 * np.std(values, ddof=1) / 2)


def test_best_per_algorithm_keeps_the_first_on_a_tie() -> None:
    cells = pl.DataFrame(
        {
            "cell_id": ["a1", "a2", "b1", "b2", "a3"],
            "experiment": ["GC"] * 5,
            "algorithm": ["A", "A", "B", "B", "A"],
            "mean": [1.0, 3.0, 2.0, 2.0, 3.0],
        }
    )
    best = stats.best_per_algorithm(cells, within=["experiment"])
    assert best["cell_id"].to_list() == ["a2", "b1"]


def test_selection_stops_at_the_first_significant_agent() -> None:
    n = 40
    rng = np.random.default_rng(1)
    best = rng.normal(10, 1, n)
    twin = best - 0.01 + np.tile([1.0, -1.0], n // 2)  # z ~ 0.06: not different
    worse = best - 2.0 + rng.normal(0, 0.1, n)  # clearly different
    twin_again = best - 0.02 + np.tile([1.0, -1.0], n // 2)  # not different, but after a significant one
    assert stats.not_different_from_best([best, twin, worse, twin_again]) == 2
    assert stats.not_different_from_best([best]) == 1
    assert stats.not_different_from_best([]) == 0


def _hand_made() -> tuple[list[str], list[np.ndarray], list[float], list[float]]:
    n = 40
    rng = np.random.default_rng(2)
    base = rng.normal(0, 3, n)
    alternate = np.tile([1.0, -1.0], n // 2)
    algorithms = ["Fast", "Mid", "Slow", "Slow", "Twin"]
    returns = [
        base + 1.0 + rng.normal(0, 0.05, n),  # A: mean ~1
        base + 5.0 + rng.normal(0, 0.05, n),  # B: mean ~5, needs offline time
        base + 10.0 + rng.normal(0, 0.05, n),  # C: mean ~10, needs online time
        base + 0.5 + rng.normal(0, 0.05, n),  # D: a cheap, bad setting of Slow
        None,  # E: C's twin, not significantly different
    ]
    returns[4] = returns[2] - 0.01 + alternate
    offline = [0.0, 1e-3, 0.0, 0.0, 0.0]
    online = [2e-5, 1e-5, 1e-3, 2e-5, 1e-3]  # seconds per trajectory
    return algorithms, returns, offline, online  # type: ignore[return-value]


def test_best_under_bounds_on_a_hand_made_table() -> None:
    algorithms, returns, offline, online = _hand_made()
    means = [float(r.mean()) for r in returns]
    frame = stats.best_under_bounds(algorithms, means, offline, online, returns, horizon=250)
    grid_x = [1e-5, 5e-5, 2.5e-4, 1.25e-3]  # up to the first bound >= the largest online time
    grid_y = [1e-5, 5e-5, 2.5e-4, 1.25e-3]
    assert sorted(set(frame["online_bound_seconds"].to_list())) == pytest.approx(grid_x)
    assert sorted(set(frame["offline_bound_seconds"].to_list())) == pytest.approx(grid_y)
    # The x scaling per decision is done once, by this experiment's horizon.
    assert frame["online_bound_seconds_per_step"].to_list() == pytest.approx(
        (frame["online_bound_seconds"] / 250).to_list()
    )
    answer = {
        (round(r["online_bound_seconds"], 9), r["offline_bound_seconds"]): r["algorithms"]
        for r in frame.iter_rows(named=True)
    }
    for y in grid_y:
        # B alone needs 1e-5 s per trajectory but 1 ms offline; nobody meets (1e-5, y < 1e-3): "none".
        assert answer[(1e-5, y)] == (["Mid"] if y >= 1e-3 else ["none"])
        for x in (5e-5, 2.5e-4):
            assert answer[(round(x, 9), y)] == (["Mid"] if y >= 1e-3 else ["Fast"])
        assert answer[(1.25e-3, y)] == ["Slow", "Twin"]
    assert frame.filter(pl.col("best") == "none").height == 3


def test_best_under_bounds_in_a_second_experiment_is_scaled_by_its_own_horizon() -> None:
    algorithms, returns, offline, online = _hand_made()
    means = [float(r.mean()) for r in returns]
    frame = stats.best_under_bounds(algorithms, means, offline, online, returns, horizon=100, online_bounds=[1e-3])
    assert frame["online_bound_seconds_per_step"].to_list() == pytest.approx([1e-5] * frame.height)


REPORT_GRID = """\
[defaults]
n_mdps = 20
horizon = 30

[[experiment]]
name = "GC"
test = "GC"

[[experiment]]
name = "GC"
test = "GC"
prior = "UGC"

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 0.5]

[[agent]]
kind = "oppsds"
formula_set = 2
n_draws = [10, 40]

[[agent]]
kind = "optimal"
"""


@pytest.fixture(scope="module")
def grid_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grid") / "out"
    grid.run_grid(grid.parse_config(REPORT_GRID), out, console=Console(file=io.StringIO()))
    return out


def test_report_renders(grid_results: Path, tmp_path: Path) -> None:
    import matplotlib.image

    report = tmp_path / "report"
    html = write_report(grid_results, report)
    text = html.read_text()
    assert text.startswith("<!DOCTYPE html>") and "http://" not in text and "https://" not in text
    for slug in ("GC-GC", "GC-UGC"):
        for kind, caption in FIGURES:
            for fmt in ("png", "svg"):
                assert (report / f"{slug}-{kind}.{fmt}").stat().st_size > 1000
            png = report / f"{slug}-{kind}.png"
            assert f'id="{slug}-{kind}"' in text and f'alt="{png.name}"' in text and caption in text
            pixels = matplotlib.image.imread(png)
            assert pixels.ndim == 3 and float(pixels[..., :3].std()) > 0.05, f"{png.name} looks blank"
        for fmt in ("md", "tex", "csv"):
            assert (report / f"{slug}-table.{fmt}").stat().st_size > 0
    # Every figure is embedded (no file needed to view the report).
    assert len(re.findall(r'src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', text)) == 6
    markdown = (report / "GC-UGC-table.md").read_text()
    assert markdown.count("**") == 2 * 5 * 4  # 4 algorithms, one bold row each, 5 columns
    assert "e-Greedy (epsilon=" in markdown and "±" in markdown
    latex = (report / "GC-GC-table.tex").read_text()
    assert r"\begin{longtable}" in latex and r"\textbf{" in latex and r"\pm" in latex
    csv = pl.read_csv(report / "GC-GC-table.csv")
    assert csv.height == 6 and csv["best_of_algorithm"].sum() == 4


def test_report_command(grid_results: Path, tmp_path: Path) -> None:
    exe = shutil.which("bbrl")
    command = [exe] if exe else [sys.executable, "-m", "bbrl"]
    out = subprocess.run(
        [*command, "report", str(grid_results), "--out", str(tmp_path / "r")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "r" / "report.html").is_file()
    missing = subprocess.run([*command, "report", str(tmp_path / "nothing")], capture_output=True, text=True)
    assert missing.returncode == 2 and "no finished cells" in missing.stderr
