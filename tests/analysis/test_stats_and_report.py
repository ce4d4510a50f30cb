"""Statistics of the export (SPEC 5.2, 5.3) against scipy and hand-made answers; the report renders."""

from __future__ import annotations

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
from hypothesis import given, settings
from hypothesis import strategies as st

from bbrl import _core, grid
from bbrl.analysis import stats
from bbrl.analysis.report import FIGURES, write_report
from smoke_grids import EGREEDY, OPTIMAL, RANDOM, grid_text, oppsds, run_quietly


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
    # Known data, worked by hand: mean 15 / 4, s^2 = 28.75 / 3, so 1.96 s / sqrt(4) = 3.033782...
    values = np.array([1.0, 2.0, 4.0, 8.0])
    mean, half = stats.mean_ci95(values)
    assert mean == 3.75
    assert half == pytest.approx(3.033782018, abs=1e-9)
    # SPEC 3.5's interval is the normal one (scipy's, with 1.96 for z_0.975 = 1.959964...), not
    # Student's t (which is wider: t_0.975 with 3 degrees of freedom is 3.18).
    low, high = scipy.stats.norm.interval(0.95, loc=values.mean(), scale=scipy.stats.sem(values))
    assert (mean, half) == pytest.approx(((low + high) / 2, (high - low) / 2), rel=2e-5)
    t_low, t_high = scipy.stats.t.interval(0.95, df=3, loc=values.mean(), scale=scipy.stats.sem(values))
    assert half < (t_high - t_low) / 2
    # Large known samples from scipy: the interval is scipy's normal interval of the sample mean.
    sample = scipy.stats.norm(10.0, 3.0).rvs(size=1000, random_state=3)
    low, high = scipy.stats.norm.interval(0.95, loc=sample.mean(), scale=scipy.stats.sem(sample))
    assert stats.mean_ci95(sample) == pytest.approx(((low + high) / 2, (high - low) / 2), rel=2e-5)
    assert math.isnan(stats.mean_ci95(np.array([5.0]))[1])  # no spread from one value
    with pytest.raises(ValueError, match="no values"):
        stats.mean_ci95(np.array([]))


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
    # Online: from the first lattice bound that admits the cheapest agent (1e-5) to the first that
    # admits every agent. Offline: 0 (agents that learn nothing), then from the cheapest positive.
    grid_x = [1e-5, 5e-5, 2.5e-4, 1.25e-3]
    grid_y = [0.0, 1.25e-3]
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
    # B alone needs 1e-5 s per trajectory but 1 ms offline; with no offline budget nobody fits 1e-5: "none".
    assert answer[(1e-5, 0.0)] == ["none"] and answer[(1e-5, 1.25e-3)] == ["Mid"]
    for x in (5e-5, 2.5e-4):
        assert answer[(round(x, 9), 0.0)] == ["Fast"] and answer[(round(x, 9), 1.25e-3)] == ["Mid"]
    for y in grid_y:
        assert answer[(1.25e-3, y)] == ["Slow", "Twin"]
    assert frame.filter(pl.col("best") == "none").height == 1
    # Multiplicity: one paired test per agent compared with the best of its cell.
    assert answer and frame.filter(pl.col("online_bound_seconds") == 1.25e-3)["comparisons"].to_list() == [2, 3]


def test_bound_grid_stays_on_the_lattice_from_the_cheapest_agent() -> None:
    assert stats.bound_grid(1e-3) == pytest.approx([1e-5, 5e-5, 2.5e-4, 1.25e-3])
    # The first bound is the first lattice point (1e-5 * 5**k) that admits the cheapest agent, so
    # a cheapest time of 3.0e-7 or 3.9e-7 gives the same grid.
    for cheapest in (3.0e-7, 3.9e-7):
        assert stats.bound_grid(1e-5, minimum=cheapest) == pytest.approx([4e-7, 2e-6, 1e-5])
    assert stats.bound_grid(1e-5, minimum=1e-5) == [1e-5]


def test_indistinguishable_times_are_tied() -> None:
    # 1.00 ± 0.03 and 1.04 ± 0.02 overlap: tied at the faster one's time; 2.0 ± 0.01 does not.
    tied = stats.tied_times([1.04, 1.00, 2.0], [0.02, 0.03, 0.01])
    assert tied.tolist() == [1.00, 1.00, 2.0]
    # Each agent is compared with its group's leader (the fastest), not chained: 1.10 is not
    # within reach of 1.00 even though it is of 1.05.
    assert stats.tied_times([1.0, 1.05, 1.10], [0.03, 0.03, 0.03]).tolist() == [1.0, 1.0, 1.10]
    # Without a spread, only times closer than the clock's resolution tie.
    assert stats.tied_times([0.0, 0.0, 5e-10, 1e-6], None, resolution=1e-9).tolist() == [0.0, 0.0, 0.0, 1e-6]


def test_tied_agents_enter_the_map_under_the_same_bound() -> None:
    n = 40
    rng = np.random.default_rng(3)
    base = rng.normal(0, 1, n)
    returns = [base + 1.0, base + 2.0]  # B is better (and significantly: constant difference)
    online = [0.9e-5, 1.1e-5]  # either side of the bound 1e-5, but within each other's spread
    frame = stats.best_under_bounds(
        ["A", "B"], [1.0, 2.0], [0.0, 0.0], online, returns, horizon=10, online_halfwidths=[0.2e-5, 0.2e-5]
    )
    first = frame.row(0, named=True)
    assert first["online_bound_seconds"] == pytest.approx(1e-5) and first["algorithms"] == ["B"]
    untied = stats.best_under_bounds(["A", "B"], [1.0, 2.0], [0.0, 0.0], online, returns, horizon=10)
    assert untied.row(0, named=True)["algorithms"] == ["A"]


def test_holm_step_down() -> None:
    # m = 3: the smallest p is compared with 0.05/3, the next with 0.05/2, the last with 0.05.
    assert stats.holm([0.01, 0.04, 0.03]) == [True, False, False]  # 0.03 > 0.025 stops the walk
    assert stats.holm([0.01, 0.02, 0.04]) == [True, True, True]
    assert stats.holm([]) == []
    n = 40
    best = np.tile([1.0, 3.0], n // 2)
    # d = best - close = 0.352 +- 1 alternately: s_d = sqrt(40/39), z = 0.352 sqrt(40) / s_d = 2.198,
    # p = 0.028: different at 5%, not after Holm over 3 comparisons (0.028 > 0.05 / 3).
    close = best - 0.352 - np.tile([1.0, -1.0], n // 2)
    assert stats.paired_z_test(best, close).z == pytest.approx(2.198, abs=1e-3)
    others = [close, best - 0.0, best + 0.0]
    assert stats.not_different_from_best([best, *others]) == 1
    assert stats.not_different_from_best([best, *others], correction="holm") == 4


def test_paired_z_test_takes_runs_and_names_the_better_side() -> None:
    import bbrl
    from bbrl import agents

    experiment = bbrl.Experiment("GC", n_mdps=40, horizon=30, seed=1)
    good = experiment.run(agents.EGreedy(0.0), threads=1)
    bad = experiment.run(agents.Random(), threads=1)
    result = stats.paired_z_test(good, bad)
    assert result.n == 40 and result.better == ("a" if good.mean > bad.mean else "b")
    assert result.mean_difference == pytest.approx(good.mean - bad.mean, rel=1e-12)
    assert stats.paired_z_test(bad, good).better != result.better
    with pytest.warns(UserWarning, match="10 pairs"):
        stats.paired_z_test(good.returns[:10], bad.returns[:10])


def test_map_agreement_counts_identical_cells() -> None:
    a = pl.DataFrame({"online_bound_seconds": [1.0, 1.0], "offline_bound_seconds": [0.0, 1.0],
                      "algorithms": [["A"], ["A", "B"]]})  # fmt: skip
    b = pl.DataFrame({"online_bound_seconds": [1.0, 1.0, 5.0], "offline_bound_seconds": [0.0, 1.0, 0.0],
                      "algorithms": [["A"], ["B", "A"], ["A"]]})  # fmt: skip
    assert stats.map_agreement(a, b) == (1, 3)
    assert stats.map_agreement(a, a) == (2, 2)


def test_pareto_front_keeps_undominated_points() -> None:
    from bbrl.analysis.figures import pareto_front

    x = np.array([1.0, 2.0, 3.0, 4.0, 2.0])
    y = np.array([5.0, 4.0, 7.0, 6.0, 6.0])
    assert pareto_front(x, y).tolist() == [0, 4, 2]


def test_durations_below_the_resolution_are_not_numbers() -> None:
    from bbrl.analysis.formatting import format_duration, latex_duration

    assert format_duration(0.0) == "0"
    assert format_duration(4e-10, resolution=1e-9) == "< 1 ns"
    assert format_duration(2.5e-3, resolution=1e-9) == "2.5 ms"
    assert latex_duration(4e-10, resolution=1e-9) == r"$<$ 1\,ns"


def test_best_under_bounds_in_a_second_experiment_is_scaled_by_its_own_horizon() -> None:
    algorithms, returns, offline, online = _hand_made()
    means = [float(r.mean()) for r in returns]
    frame = stats.best_under_bounds(algorithms, means, offline, online, returns, horizon=100, online_bounds=[1e-3])
    assert frame["online_bound_seconds_per_step"].to_list() == pytest.approx([1e-5] * frame.height)


REPORT_GRID = grid_text(
    {"n_mdps": 20, "horizon": 30},
    [{"name": "GC", "test": "GC"}, {"name": "GC", "test": "GC", "prior": "UGC"}],
    [RANDOM, EGREEDY, oppsds([10, 40]), OPTIMAL],
)


@pytest.fixture(scope="module")
def grid_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_quietly(REPORT_GRID, tmp_path_factory.mktemp("grid") / "out")


def test_report_renders(grid_results: Path, tmp_path: Path) -> None:
    import matplotlib.image

    report = tmp_path / "report"
    html = write_report(grid_results, report, svg=True)
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
    # Four figures per experiment and the normalised scores across experiments.
    assert len(re.findall(r'src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', text)) == 2 * 4 + 1
    # The section on the problems' hardness (analysis/hardness.py), with its table.
    assert '<section id="hardness">' in text and pl.read_csv(report / "hardness.csv")["problem"].to_list() == ["GC"]
    normalized = pl.read_csv(report / "normalized-scores.csv")
    assert set(normalized["algorithm"].to_list()) == {"Random", "e-Greedy", "OPPS-DS"}
    assert (normalized["iqm_low"] <= normalized["iqm"]).all() and (normalized["iqm"] <= normalized["iqm_high"]).all()
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
    assert missing.returncode == 2 and "results folder" in missing.stderr and "does not exist" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = subprocess.run([*command, "report", str(tmp_path / "empty")], capture_output=True, text=True)
    assert empty.returncode == 2 and "no finished cells" in empty.stderr
    assert list((tmp_path / "empty").iterdir()) == []  # no report folder left behind


def test_report_says_when_the_grid_is_incomplete_and_where_times_come_from(grid_results: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    shutil.copytree(grid_results, partial)
    victim = sorted((partial / "cells" / "GC" / "UGC").rglob("*.parquet"))[0]
    victim.unlink()
    text = write_report(partial, tmp_path / "report", missing=grid.missing_by_experiment(partial)).read_text()
    assert "Incomplete grid:</b> 1 cells" in text
    assert text.count("Incomplete: 1 cells of this experiment") == 1
    assert "Measured on" in text and "logical cores" in text and "CPU times" in text
    assert "paired comparisons in all" in text
    complete = write_report(
        grid_results, tmp_path / "complete", missing=grid.missing_by_experiment(grid_results)
    ).read_text()
    assert "Incomplete" not in complete
    holm = write_report(grid_results, tmp_path / "holm", correction="holm").read_text()
    assert "Holm-corrected" in holm
    bounds = pl.read_csv(tmp_path / "complete" / "GC-GC-bounds.csv")
    # Every agent but OPPS-DS learns nothing offline: the map has an offline bound of 0.
    assert 0.0 in bounds["offline_bound_seconds"].to_list()


def test_normalized_scores_iqm_and_bootstrap() -> None:
    assert stats.normalized_scores(np.array([1.0, 3.0, 5.0]), 1.0, 5.0).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="above Random"):
        stats.normalized_scores(np.array([1.0]), 2.0, 2.0)
    # IQM of 0..7: the middle half is 2..5, mean 3.5; an outlier at the top does not move it.
    assert stats.iqm(np.arange(8.0)) == pytest.approx(3.5)
    assert stats.iqm(np.array([0, 1, 2, 3, 4, 5, 6, 1e9])) == pytest.approx(3.5)
    rng = np.random.default_rng(4)
    strata = [rng.normal(0.0, 1.0, 200), rng.normal(1.0, 1.0, 50)]
    estimate, low, high = stratified_bootstrap = stats.stratified_bootstrap_ci(strata, "mean", seed=1)
    assert stratified_bootstrap == stats.stratified_bootstrap_ci(strata, "mean", seed=1)  # seeded
    pooled = np.concatenate(strata)
    assert estimate == pytest.approx(pooled.mean())
    # Resampling within strata keeps each stratum's size: the interval's half-width is close to
    # 1.96 * sqrt(sum_e n_e s_e^2) / N (the standard error of the pooled mean), within 20%
    # (2000 replicates: the quantiles' own error is a few percent).
    n = pooled.size
    se = math.sqrt(sum(a.size * a.var(ddof=1) for a in strata)) / n
    assert (high - low) / 2 == pytest.approx(1.96 * se, rel=0.2)
    assert low < estimate < high
    # Both statistics from one set of replicates: the numbers of one call per statistic, bit for bit.
    both = stats.stratified_bootstrap_cis(strata, ("iqm", "mean"), seed=1)
    assert both == {s: stats.stratified_bootstrap_ci(strata, s, seed=1) for s in ("iqm", "mean")}
    # The replicates are each stratum resampled within itself, stratum after stratum, from one
    # generator: the same draws whatever the strata's values (shared by a report's algorithms).
    for values in (strata, [rng.normal(5.0, 2.0, 200), rng.normal(-1.0, 1.0, 50)]):
        draws = np.random.default_rng(1)
        replicates = np.concatenate([a[draws.integers(0, a.size, size=(2000, a.size))] for a in values], axis=1)
        low, high = np.quantile(replicates.mean(axis=1), [0.025, 0.975])
        # The same replicates, each summed in the core's order (numpy sums pairwise).
        assert stats.stratified_bootstrap_ci(values, "mean", seed=1)[1:] == pytest.approx((low, high), rel=1e-12)
    with pytest.raises(ValueError, match="'median'"):
        stats.stratified_bootstrap_cis(strata, ("iqm", "median"))


def test_probability_of_improvement() -> None:
    # Every score of x above every score of y in both experiments: 1; identical: 1/2.
    x = [np.array([2.0, 3.0]), np.array([5.0])]
    y = [np.array([0.0, 1.0]), np.array([4.0, 4.5])]
    assert stats.probability_of_improvement(x, y) == 1.0
    assert stats.probability_of_improvement(x, x) == 0.5
    # One experiment where x wins 3 of 4 pairs, one where it loses all: (0.75 + 0) / 2.
    assert (
        stats.probability_of_improvement(
            [np.array([1.0, 3.0]), np.array([0.0])], [np.array([0.0, 2.0]), np.array([1.0])]
        )
        == 0.375
    )


def test_paired_z_test_refuses_runs_of_different_experiments() -> None:
    # Before: GC against GDL was "significant" with only a small-sample warning.
    import dataclasses

    import bbrl
    from bbrl import agents

    gc = bbrl.Experiment("GC", n_mdps=40, horizon=30, seed=1).run(agents.Random(), threads=1)
    gdl = bbrl.Experiment("GDL", n_mdps=40, horizon=30, seed=1).run(agents.Random(), threads=1)
    with pytest.raises(ValueError, match=r"^paired_z_test: the runs are not on the same test MDPs: a is 'Random' on "
                       r"'GC' \(fingerprint [0-9a-f]{16}, MDPs 0\.\.39.*b is 'Random' on 'GDL'"):  # fmt: skip
        stats.paired_z_test(gc, gdl)
    # Each setting of the fingerprint, and another range of MDPs of the same experiment, is refused.
    for other in (
        bbrl.Experiment("GC", n_mdps=41, horizon=30, seed=1),
        bbrl.Experiment("GC", n_mdps=40, gamma=0.9, horizon=30, seed=1),
        bbrl.Experiment("GC", n_mdps=40, horizon=31, seed=1),
        bbrl.Experiment("GC", n_mdps=40, horizon=30, seed=2),
    ):
        with pytest.raises(ValueError, match="not on the same test MDPs"):
            stats.paired_z_test(gc, other.run(agents.Random(), threads=1, mdps=range(40)))
    batch = bbrl.Experiment("GC", n_mdps=80, horizon=30, seed=1)
    first, second = (batch.run(agents.Random(), threads=1, mdps=range(a, a + 40)) for a in (0, 40))
    with pytest.raises(ValueError, match=r"MDPs 0\.\.39.*MDPs 40\.\.79"):
        stats.paired_z_test(first, second)
    # A run without a fingerprint (built by hand) is refused; its arrays are the caller's to pair.
    bare = dataclasses.replace(gc, fingerprint=None)
    with pytest.raises(ValueError, match=r"run b has no experiment fingerprint.*pass the returns arrays"):
        stats.paired_z_test(gc, bare)
    assert stats.paired_z_test(gc.returns, gdl.returns).n == 40
    # Same experiment under another name: the same MDPs, accepted.
    renamed = bbrl.Experiment("GC", n_mdps=40, horizon=30, seed=1, name="chain").run(agents.EGreedy(0.0), threads=1)
    assert renamed.fingerprint == gc.fingerprint and stats.paired_z_test(gc, renamed).n == 40


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
    ties=st.booleans(),
)
def test_the_bootstrap_iqm_from_draw_counts_is_the_trimmed_mean_of_each_replicate(
    sizes: list[int], seed: int, ties: bool
) -> None:
    # The core finds the IQM of each replicate from how often each value is drawn; it must be the
    # mean of the middle half of the replicate's values (scipy's trim_mean, step for step), up to
    # the order of the sums, ties (rounded values) and strata of one value included; and the mean
    # of each replicate its mean.
    rng = np.random.default_rng(seed)
    pooled = rng.normal(0.0, 3.0, sum(sizes))
    if ties:
        pooled = np.round(pooled)
    indices = stats._bootstrap_indices(tuple(sizes), 300, seed % 1000)
    replicates = pooled[indices]
    means, iqms = _core.bootstrap_replicates(pooled, indices)
    scale = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    assert np.allclose(iqms, stats._trim_mean(replicates, 0.25), rtol=1e-12, atol=scale)
    assert np.allclose(means, replicates.mean(axis=-1), rtol=1e-12, atol=scale)


def test_the_core_bootstrap_refuses_bad_input() -> None:
    values = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one per value"):
        _core.bootstrap_replicates(values, np.zeros((4, 2), dtype=np.uint32))
    with pytest.raises(ValueError, match="out of range"):
        _core.bootstrap_replicates(values, np.full((4, 3), 3, dtype=np.uint32))
    with pytest.raises(ValueError, match="finite"):
        _core.bootstrap_replicates(np.array([1.0, np.nan, 3.0]), np.zeros((4, 3), dtype=np.uint32))
    with pytest.raises(ValueError, match="at least one value"):
        _core.bootstrap_replicates(np.zeros(0), np.zeros((4, 0), dtype=np.uint32))
    # A view that is not contiguous reads as its values.
    wide = np.zeros((4, 6), dtype=np.uint32)
    wide[:, ::2] = [0, 1, 2]
    assert _core.bootstrap_replicates(values, wide[:, ::2])[0].tolist() == [2.0] * 4
