"""The report and the results API on a raced folder: a configuration stopped early is marked, shows
the test MDPs it ran, and keeps its interval over those MDPs; a full run's report has no race mark."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import matplotlib.colors
import numpy as np
import polars as pl
import pytest
from rich.console import Console

from bbrl import grid
from bbrl.analysis.cost import reference_calibration
from bbrl.analysis.figures import RACE_SENSITIVE_HATCH, RACE_SENSITIVE_LABEL, bounds_figure, score_figure
from bbrl.analysis.racing import RACE_SENSITIVE, RaceOptions
from bbrl.analysis.report import compare_maps, experiment_map, write_report
from bbrl.analysis.stats import map_agreement
from bbrl.analysis.tables import table_csv, table_html, table_latex, table_markdown
from bbrl.grid.race import run_raced_grid
from bbrl.intervals import ci95_halfwidth
from bbrl.protocol.results import Results, load
from bbrl.protocol.schema import Col

# BFS3 costs far more per decision than e-Greedy (epsilon=0.0) and does worse on GC: the race stops
# it at the first look it may (30 MDPs, batches of 10); the others run to N = 40.
CONFIG = """
[defaults]
n_mdps = 40
gamma = 0.95
horizon = 250
seed = 0

[[experiment]]
name = "GC"
test = "GC"
prior = "GC"

[[agent]]
kind = "random"

[[agent]]
kind = "egreedy"
epsilon = [0.0, 0.5, 1.0]

[[agent]]
kind = "bfs3"
k = 10
c = 2
depth = 15

[[agent]]
kind = "optimal"
"""

STOPPED = "GC/GC/bfs3/k=10,c=2,depth=15"
STOPPER = "GC/GC/egreedy/epsilon=0.0"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a raced folder, the same grid run in full)."""
    root = tmp_path_factory.mktemp("race-report")
    (root / "grid.toml").write_text(CONFIG)
    config = grid.load_config(root / "grid.toml")
    quiet = Console(file=io.StringIO())
    run_raced_grid(config, root / "raced", RaceOptions(batch=10), threads=1, console=quiet, poll_seconds=0.01)
    grid.run_grid(config, root / "full", threads=1, console=quiet)
    return root / "raced", root / "full"


@pytest.fixture(scope="module")
def reports(folders: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The report folders of (the raced folder, the full one)."""
    raced, full = folders
    out = tmp_path_factory.mktemp("reports")
    return write_report(raced, out / "raced").parent, write_report(full, out / "full").parent


def test_the_race_stopped_one_configuration(folders: tuple[Path, Path]) -> None:
    raced, _ = folders
    stops = json.loads((raced / "race" / "GC" / "GC.json").read_text())["stops"]
    assert list(stops) == [STOPPED]
    assert stops[STOPPED]["by"] == STOPPER and stops[STOPPED]["n_mdps"] == 30 and stops[STOPPED]["rule"] == "beaten"


def test_load_gives_each_cell_the_mdps_it_ran_and_its_stop(folders: tuple[Path, Path]) -> None:
    raced, full = folders
    cells = load(raced).cells
    by_id = {row[Col.CELL_ID]: row for row in cells.iter_rows(named=True)}
    assert by_id[STOPPED][Col.N_RUN] == 30 and by_id[STOPPED][Col.N_MDPS] == 40
    assert by_id[STOPPED][Col.RACE_STOPPED_BY].startswith(f"{STOPPER} (beaten after 30 MDPs")
    for cell_id, row in by_id.items():
        if cell_id != STOPPED:
            assert row[Col.N_RUN] == 40 and row[Col.RACE_STOPPED_BY] is None, cell_id
    full_cells = load(full).cells
    assert (full_cells[Col.N_RUN] == 40).all() and full_cells[Col.RACE_STOPPED_BY].null_count() == full_cells.height


def test_a_stopped_cell_has_its_mean_and_interval_over_the_mdps_it_ran(folders: tuple[Path, Path]) -> None:
    raced, full = folders
    results = load(raced)
    returns = results.returns.filter(pl.col(Col.CELL_ID) == STOPPED).sort(Col.MDP)[Col.RETURN].to_numpy()
    assert returns.size == 30
    row = results.cells.filter(pl.col(Col.CELL_ID) == STOPPED).row(0, named=True)
    assert row[Col.MEAN] == pytest.approx(returns.mean(), rel=1e-12)
    assert row[Col.CI95] == pytest.approx(ci95_halfwidth(returns), rel=1e-12)
    assert row[Col.CI95] == pytest.approx(1.96 * returns.std(ddof=1) / math.sqrt(30), rel=1e-4)
    # A raced run's MDP i is a full run's MDP i: the stopped cell holds the full run's first 30.
    whole = load(full).returns.filter(pl.col(Col.CELL_ID) == STOPPED).sort(Col.MDP)[Col.RETURN].to_numpy()
    np.testing.assert_array_equal(returns, whole[:30])
    full_row = load(full).cells.filter(pl.col(Col.CELL_ID) == STOPPED).row(0, named=True)
    assert full_row[Col.CI95] == pytest.approx(ci95_halfwidth(whole), rel=1e-12)
    assert row[Col.CI95] > full_row[Col.CI95]  # fewer MDPs: the honest interval is wider here


def test_the_tables_mark_the_stopped_configuration_and_its_n(reports: tuple[Path, Path]) -> None:
    raced, _ = reports
    markdown = (raced / "GC-GC-table.md").read_text()
    assert "| Test MDPs run |" in markdown.splitlines()[0]
    bfs3 = next(line for line in markdown.splitlines() if line.startswith("| **BFS3**"))
    assert bfs3.endswith("| **30 †** |")
    greedy = next(line for line in markdown.splitlines() if "e-Greedy (epsilon=0.5)" in line)
    assert greedy.endswith("| 40 |")
    assert (
        "BFS3 (k=10, c=2, depth=15): stopped by the race after 30 of 40 test MDPs, beaten by e-Greedy (epsilon=0.0)"
        in markdown
    )
    latex = (raced / "GC-GC-table.tex").read_text()
    assert r"\begin{longtable}{llrrrr}" in latex and r"30\textsuperscript{\dag}" in latex
    assert "after 30 of 40 test MDPs" in latex
    csv = pl.read_csv(raced / "GC-GC-table.csv")
    row = csv.filter(pl.col(Col.CELL_ID) == STOPPED).row(0, named=True)
    assert row[Col.N_RUN] == 30 and row[Col.RACE_STOPPED_BY].startswith(STOPPER)
    assert csv.filter(pl.col(Col.CELL_ID) != STOPPED)[Col.RACE_STOPPED_BY].null_count() == csv.height - 1
    text = (raced / "report.html").read_text()
    assert "<th>Test MDPs run</th>" in text and ">30 †</td>" in text


def test_the_report_says_the_folder_was_raced_and_lists_the_stops(reports: tuple[Path, Path]) -> None:
    raced, _ = reports
    text = (raced / "report.html").read_text()
    # Above the first figure: the scores of stopped settings are over fewer MDPs.
    top = text.index("<b>Raced:</b>")
    assert top < text.index("<figure")
    assert "delta 0.05 per comparable pair, margin 1.0 paired standard errors at N, batches of 10 test MDPs" in text
    assert "<td>BFS3 (k=10, c=2, depth=15)</td><td>30 of 40</td><td>e-Greedy (epsilon=0.0)</td><td>beaten</td>" in text
    assert "1 of 5 configurations stopped early" in text  # the oracle is not raced
    assert "1.96 s/√n, n the test MDPs a setting ran" in text


def test_a_full_run_has_no_race_mark(folders: tuple[Path, Path], reports: tuple[Path, Path]) -> None:
    _, full = reports
    text = (full / "report.html").read_text()
    for mark in ("†", "Raced", "raced", "Test MDPs run", "stopped early"):
        assert mark not in text, mark
    assert "1.96 s/√N)" in text
    markdown = (full / "GC-GC-table.md").read_text()
    assert markdown.splitlines()[0] == (
        "| Algorithm | Agent | Offline time | Online time / decision | Score (mean ± 95%) |"
    )
    assert "†" not in markdown and r"\dag" not in (full / "GC-GC-table.tex").read_text()
    assert Col.N_RUN not in pl.read_csv(full / "GC-GC-table.csv").columns
    # The table writers add nothing to a full run's cells.
    cells = load(folders[1]).cells
    for table in (table_markdown(cells), table_latex(cells, "GC"), table_csv(cells), table_html(cells)):
        assert "†" not in table and "Test MDPs run" not in table and Col.RACE_STOPPED_BY not in table


def _hollow_points(fig) -> int:
    white = matplotlib.colors.to_rgba("white")
    count = 0
    for ax in fig.axes:
        for line in ax.get_lines():
            if (
                line.get_marker() not in (None, "None", "")
                and matplotlib.colors.to_rgba(line.get_markerfacecolor()) == white
            ):
                count += len(line.get_xdata())
    return count


def test_score_figures_draw_the_stopped_configuration_hollow(
    folders: tuple[Path, Path], reports: tuple[Path, Path]
) -> None:
    import matplotlib.image
    import matplotlib.pyplot as plt

    for folder, hollow in zip(folders, (1, 0), strict=True):
        cells = load(folder).cells
        fig = score_figure(cells, Col.ONLINE_TIME_PER_STEP, None, "online CPU time", "GC", [], per=" per decision")
        legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        assert _hollow_points(fig) == hollow
        assert any(t.startswith("hollow: stopped early by the race") for t in legend) == bool(hollow)
        assert "BFS3" in legend  # the algorithm keeps its entry when its every setting stopped
        plt.close(fig)
    pixels = matplotlib.image.imread(reports[0] / "GC-GC-online.png")
    assert pixels.ndim == 3 and float(pixels[..., :3].std()) > 0.05


def test_the_map_marks_the_cells_a_stopped_configuration_could_change(reports: tuple[Path, Path]) -> None:
    # BFS3, stopped after 30 MDPs, fits only the largest online budget: that cell is marked, and
    # the report says how many are; a full run's map marks none and says nothing of it.
    raced, full = reports
    bounds = pl.read_csv(raced / "GC-GC-bounds.csv")
    marked = bounds.filter(pl.col(RACE_SENSITIVE))
    assert marked["online_bound_seconds"].to_list() == [bounds["online_bound_seconds"].max()]
    text = (raced / "report.html").read_text()
    assert f"Map cells a stopped configuration could have changed: 1 of {bounds.height}" in text
    assert f"1 of {bounds.height} map cells a stopped configuration could have changed are hatched" in text
    unraced = pl.read_csv(full / "GC-GC-bounds.csv")
    assert not unraced[RACE_SENSITIVE].any()
    assert "could have changed" not in (full / "report.html").read_text()


def _hatches(fig) -> list[str]:
    return [c.get_hatch() for ax in fig.axes for c in ax.collections if c.get_hatch()]


def test_the_map_figure_hatches_the_marked_cells_and_its_legend_says_why(folders: tuple[Path, Path]) -> None:
    import matplotlib.pyplot as plt

    for folder, marks in zip(folders, (1, 0), strict=True):
        results = load(folder)
        bounds, _ = experiment_map(results, results.cells, reference_calibration())
        assert int(bounds[RACE_SENSITIVE].sum()) == marks
        fig = bounds_figure(bounds, "GC", [])
        legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        assert (RACE_SENSITIVE_HATCH in _hatches(fig)) == bool(marks)
        assert (RACE_SENSITIVE_LABEL in legend) == bool(marks)
        plt.close(fig)


def test_compare_maps_lists_every_cell_of_both_maps(folders: tuple[Path, Path]) -> None:
    raced, full = (load(f) for f in folders)
    calibration = reference_calibration()
    cells = compare_maps(full, raced, calibration)
    a, _ = experiment_map(full, full.cells, calibration)
    b, _ = experiment_map(raced, raced.cells, calibration)
    assert (int(cells["identical"].sum()), cells.height) == map_agreement(a, b)
    assert cells["race_sensitive"].to_list() == b[RACE_SENSITIVE].to_list()
    assert cells.filter(~pl.col("identical") & ~pl.col("race_sensitive")).height == 0
    itself = compare_maps(full, full, calibration)
    assert itself["identical"].all() and not itself["race_sensitive"].any()
    # A cell one map lacks is a difference, with nulls on the side that lacks it.
    lacking = compare_maps(full, Results(raced.cells.clear(), raced.returns.clear()), calibration)
    assert lacking.height == cells.height and not lacking["identical"].any()
    assert lacking["algorithms_second"].null_count() == lacking.height
